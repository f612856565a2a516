package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/cc-connect/cc-connect/agentcfg"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/launch"
	"github.com/cc-connect/cc-connect/lease"
	"github.com/cc-connect/cc-connect/metrics"
)

// versionRE finds the version in `claude --version` output
// ("2.1.328 (Claude Code)").
var versionRE = regexp.MustCompile(`\b\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?\b`)

// CheckClaude is the claude check alone: agent.command found, its version
// read and compared with the tested one (Warn when it differs). `cc-connect
// run` logs it at start-up.
func CheckClaude(ctx context.Context, cfg *config.Config, opts Options) Check {
	return checkClaude(ctx, cfg, opts.withDefaults())
}

// checkClaude finds the claude executable and asks it for its version,
// started as every agent child is (through launch, under the agent's
// rule: its environment, and agent.user when doctor runs as root), so that an agent user who cannot
// run it is found here. `--version` answers from the binary alone; the
// updater and other traffic are switched off for the call anyway
// (BuildEnv's defaults), so that doctor stays offline.
func checkClaude(ctx context.Context, cfg *config.Config, opts Options) Check {
	c := Check{Name: "claude"}
	cmd := cfg.Agent.Command
	path, err := opts.LookPath(cmd)
	if err != nil {
		c.Status = Fail
		where := "in PATH"
		if strings.ContainsRune(cmd, '/') {
			where = "or not executable"
		}
		c.Detail = fmt.Sprintf("agent.command %q not found %s: install Claude Code %s (npm install -g @anthropic-ai/claude-code@%s) or set agent.command to its path",
			cmd, where, opts.TestedVersion, opts.TestedVersion)
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, opts.VersionTimeout)
	defer cancel()
	rule := agentcfg.From(cfg).Rule()
	if agentproc.CheckSwitch(rule.User) != nil {
		// A config meant for root, checked from an ordinary account: the
		// version is asked as this user (the agent user check fails).
		rule.User = nil
	}
	var stdout, stderr bytes.Buffer
	err = launch.Run(ctx, rule, launch.Spec{Path: path, Args: []string{"--version"}, Environ: opts.Environ, Stdout: &stdout, Stderr: &stderr})
	out := stdout.Bytes()
	if err != nil {
		c.Status = Fail
		c.Detail = fmt.Sprintf("%s --version failed: %v%s", path, err, stderrHint(stderr.String()))
		return c
	}
	version := versionRE.FindString(string(out))
	switch {
	case version == "":
		c.Status = Fail
		c.Detail = fmt.Sprintf("%s --version printed no version (%q): is agent.command the Claude Code CLI?", path, firstLine(string(out)))
	case version != opts.TestedVersion:
		c.Status = Warn
		c.Detail = fmt.Sprintf("%s at %s; cc-connect is tested with %s, whose stream-json protocol it speaks (npm install -g @anthropic-ai/claude-code@%s)",
			version, path, opts.TestedVersion, opts.TestedVersion)
	default:
		c.Status = OK
		c.Detail = fmt.Sprintf("%s at %s (the tested version)", version, path)
	}
	return c
}

func stderrHint(stderr string) string {
	if s := firstLine(stderr); s != "" {
		return ": " + s
	}
	return ""
}

// firstLine is the first non-empty line of s, bounded for one report line.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 160 {
				line = line[:160] + "…"
			}
			return line
		}
	}
	return ""
}

// Environment variables that give Claude Code credentials, and those that
// send it to a cloud provider with credentials of its own.
var (
	credentialVars = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}
	providerVars   = []string{"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"}
)

// CheckLogin is the login check alone: `cc-connect run` says once at
// start-up when Claude Code would answer "Not logged in".
func CheckLogin(cfg *config.Config, opts Options) Check {
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	return checkLogin(cfg, opts)
}

// checkLogin looks, without any API call, for what spares Claude Code its
// "Not logged in · Please run /login" exit: a key in the environment, a
// cloud provider, an apiKeyHelper, or the credentials file `/login` writes.
// It only warns: a login kept where this cannot look (the macOS Keychain)
// is still a login.
func checkLogin(cfg *config.Config, opts Options) Check {
	c := Check{Name: "claude login", Status: OK}
	agent := agentcfg.From(cfg)
	env := agentproc.BuildEnv(opts.Environ, agent) // what the agent will see
	lookup := func(name string) (value, where string) {
		if v := agent.Env[name]; v != "" {
			return v, "agent.env"
		}
		if v, ok := envValue(env, name); ok && v != "" {
			return v, "cc-connect's environment"
		}
		return "", ""
	}
	for _, name := range credentialVars {
		if _, where := lookup(name); where != "" {
			c.Detail = name + " is set in " + where
			return c
		}
	}
	for _, name := range providerVars {
		if v, where := lookup(name); where != "" && v != "0" && !strings.EqualFold(v, "false") {
			c.Detail = name + " is set in " + where + " (the provider's own credentials are not checked)"
			return c
		}
	}
	dir := agentConfigDir(env)
	if helper := settingsHasAPIKeyHelper(filepath.Join(dir, "settings.json")); helper {
		c.Detail = "an apiKeyHelper is set in " + filepath.Join(dir, "settings.json")
		return c
	}
	creds := filepath.Join(dir, ".credentials.json")
	if info, err := os.Stat(creds); err == nil && info.Mode().IsRegular() && info.Size() > 0 {
		c.Detail = "logged in (" + creds + " exists; whether it is still valid needs the network)"
		return c
	}
	c.Status = Warn
	c.Detail = fmt.Sprintf("none of %s is set and %s does not exist: claude will exit with \"Not logged in · Please run /login\". "+
		"Run `claude` once as the agent's user (agent.user, else the user cc-connect runs as) and type /login, or set ANTHROPIC_API_KEY in agent.env",
		strings.Join(credentialVars, ", "), creds)
	if runtime.GOOS == "darwin" {
		c.Detail += " (on macOS a login kept in the Keychain cannot be seen from here)"
	}
	return c
}

// agentConfigDir is the Claude Code config dir of an agent with the
// environment env (agentproc.ConfigDirFor, for the environment doctor
// was given).
func agentConfigDir(env []string) string {
	if d, _ := envValue(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home, _ := envValue(env, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

// settingsHasAPIKeyHelper reports whether the settings file names an
// apiKeyHelper (a command that prints a key). A plain substring test is
// enough for a hint and never fails on a settings file it cannot parse.
func settingsHasAPIKeyHelper(path string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), `"apiKeyHelper"`)
}

// checkWorkspaces checks each bound workspace once, naming the bindings
// that use it.
func checkWorkspaces(cfg *config.Config) []Check {
	var order []string
	users := map[string][]string{}
	for _, b := range cfg.Bindings {
		if cfg.ServedElsewhere(b) {
			continue // another cluster member's folder: it need not exist here
		}
		if _, seen := users[b.Workspace]; !seen {
			order = append(order, b.Workspace)
		}
		users[b.Workspace] = append(users[b.Workspace], b.Platform+"/"+b.Channel)
	}
	checks := make([]Check, 0, len(order))
	for _, ws := range order {
		c := Check{Name: "workspace " + ws}
		used := "bound to " + strings.Join(users[ws], ", ")
		info, err := os.Stat(ws)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			c.Status, c.Detail = Fail, "does not exist ("+used+")"
		case err != nil:
			c.Status, c.Detail = Fail, fmt.Sprintf("cannot be read: %v", err)
		case !info.IsDir():
			c.Status, c.Detail = Fail, "is not a folder ("+used+")"
		case !writable(ws):
			c.Status, c.Detail = Warn, "is not writable by this user: Claude Code cannot edit files there, and large prompts cannot be stored in its .cc-connect/ ("+used+")"
		default:
			c.Status, c.Detail = OK, "folder, writable ("+used+")"
		}
		checks = append(checks, c)
	}
	return checks
}

// checkStateDir checks that the state dir is private, ours and writable,
// as `run` requires: a missing one is fine (`run` creates it 0700), an
// existing one is never changed by `run`, so one open to others (a shared
// folder such as /tmp) fails here as it fails there.
func checkStateDir(dir string) Check {
	c := Check{Name: "state dir"}
	info, err := os.Stat(dir) // a link to the folder is allowed, as in `run`
	if errors.Is(err, fs.ErrNotExist) {
		parent := existingParent(dir)
		if !writable(parent) {
			c.Status, c.Detail = Fail, fmt.Sprintf("%s does not exist and cannot be created: %s is not writable by this user", dir, parent)
			return c
		}
		c.Status, c.Detail = OK, dir+" does not exist yet; `cc-connect run` creates it (mode 0700)"
		return c
	}
	if err != nil {
		c.Status, c.Detail = Fail, fmt.Sprintf("%s: %v", dir, err)
		return c
	}
	if !info.IsDir() {
		c.Status, c.Detail = Fail, dir+" is not a folder"
		return c
	}
	if uid, ok := ownerUID(info); ok && uid != os.Geteuid() {
		c.Status, c.Detail = Fail, fmt.Sprintf("%s belongs to uid %d, but cc-connect runs as uid %d: `run` refuses it; run it as the owner, or give it a folder of its own", dir, uid, os.Geteuid())
		return c
	}
	perm := info.Mode().Perm()
	if perm&0o077 != 0 {
		c.Status, c.Detail = Fail, fmt.Sprintf("%s is open to other users (mode %04o): it would hold message text and session ids, and `run` refuses it "+
			"rather than change an existing folder's mode; point state.dir at a folder of its own (a missing one is created 0700), or chmod 700 %s if it is one", dir, perm, dir)
		return c
	}
	probe, err := os.CreateTemp(dir, ".doctor-probe-*")
	if err != nil {
		c.Status, c.Detail = Fail, fmt.Sprintf("%s is not writable: %v", dir, err)
		return c
	}
	probe.Close()
	if err := os.Remove(probe.Name()); err != nil {
		c.Status, c.Detail = Fail, fmt.Sprintf("%s: removing a probe file: %v", dir, err)
		return c
	}
	c.Status, c.Detail = OK, fmt.Sprintf("%s is writable and private (mode %04o)", dir, perm)
	return c
}

// existingParent is the nearest folder of path that exists.
func existingParent(path string) string {
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || p == filepath.Dir(p) {
			return p
		}
	}
}

// checkTokens checks that each platform has its tokens, without printing
// or sending them. Whitespace is the common slip (a newline kept from an
// env file) that the platform would later reject as an invalid token.
func checkTokens(cfg *config.Config) []Check {
	checks := make([]Check, 0, len(cfg.Platforms))
	for _, p := range cfg.Platforms {
		c := Check{Name: fmt.Sprintf("platform %s (%s)", p.Name, p.Type), Status: OK}
		tokens := p.Tokens()
		if len(tokens) == 0 {
			c.Detail = "no token needed"
			checks = append(checks, c)
			continue
		}
		var problems, set []string
		for _, tok := range tokens {
			v := tok.Value.Reveal()
			switch {
			case v == "":
				problems = append(problems, tok.Key+" is empty")
			case strings.TrimSpace(v) != v || strings.ContainsAny(v, " \t\r\n"):
				problems = append(problems, tok.Key+" contains spaces or a line break (left over from an env file?)")
			case tok.Prefix != "" && !strings.HasPrefix(v, tok.Prefix):
				problems = append(problems, tok.Key+" does not start with "+tok.Prefix)
			default:
				set = append(set, tok.Key)
			}
		}
		if len(problems) > 0 {
			c.Status, c.Detail = Fail, strings.Join(problems, "; ")
		} else {
			c.Detail = strings.Join(set, ", ") + " set (not sent anywhere)"
		}
		checks = append(checks, c)
	}
	return checks
}

// checkLocks takes and at once releases each lock `run` would hold, so
// that a second cc-connect is found before it starts (and fails) and
// the holder's pid is named.
func checkLocks(cfg *config.Config, opts Options) []Check {
	var checks []Check
	state := Check{Name: "state dir lock"}
	if _, err := os.Stat(cfg.State.Dir); errors.Is(err, fs.ErrNotExist) {
		state.Status, state.Detail = OK, "free (the state dir does not exist yet)"
	} else if sd := checkStateDir(cfg.State.Dir); sd.Status == Fail {
		// Taking the lock would create locks/ in a folder `run` refuses
		// (a shared one, say).
		state.Status, state.Detail = Fail, "not checked: the state dir is not usable (see \"state dir\")"
	} else {
		state = lockCheck(state.Name, func() (*lease.Lock, error) { return lease.StateDir(cfg.State.Dir) },
			"another cc-connect runs on this state dir; stop it, or give this one its own state.dir")
	}
	checks = append(checks, state)
	if opts.hostLocksMoved != nil && cfg.Cluster == nil {
		checks = append(checks, Check{Name: "host lock dir", Status: Warn, Detail: opts.hostLocksMoved.Error() +
			" (another user may have made the usual folder to block cc-connect: find who owns it, and remove it)"})
	}

	for _, p := range cfg.Platforms {
		tok := tokenOf(p)
		if tok == "" {
			continue
		}
		checks = append(checks, lockCheck("token lock "+p.Name, func() (*lease.Lock, error) {
			return lease.Token(opts.HostLockDir, p.Name, tok)
		}, "another cc-connect on this host uses this bot token, and two would steal each other's events; stop it or use another bot"))
	}
	return checks
}

func lockCheck(name string, acquire func() (*lease.Lock, error), heldHint string) Check {
	l, err := acquire()
	var held *lease.HeldError
	switch {
	case errors.As(err, &held):
		holder := "another process"
		if held.PID > 0 {
			holder = fmt.Sprintf("pid %d", held.PID)
		}
		return Check{Name: name, Status: Fail, Detail: fmt.Sprintf("held by %s (%s): %s", holder, held.Path, heldHint)}
	case err != nil:
		return Check{Name: name, Status: Fail, Detail: err.Error()}
	}
	path := l.Path()
	if err := l.Release(); err != nil {
		return Check{Name: name, Status: Fail, Detail: err.Error()}
	}
	return Check{Name: name, Status: OK, Detail: "free (" + path + ")"}
}

// tokenOf is the token whose lock identifies a platform's bot on this
// host, as `run` locks it (config.Platform.IdentityToken).
func tokenOf(p config.Platform) string { return p.IdentityToken().Reveal() }

// checkMetrics tries the metrics address the way `run` will listen on it.
func checkMetrics(cfg *config.Config) Check {
	c := Check{Name: "metrics"}
	m := cfg.Metrics
	if m.Addr == "" {
		c.Status, c.Detail = OK, "off (set [metrics] addr to serve /metrics and /healthz)"
		return c
	}
	ln, err := metrics.Listen(m.Addr, m.AllowRemote)
	if err != nil {
		c.Status, c.Detail = Fail, err.Error()
		if !errors.Is(err, metrics.ErrNotLoopback) {
			c.Detail += " (is cc-connect already running, or another exporter on this port?)"
		}
		return c
	}
	ln.Close()
	c.Status, c.Detail = OK, "http://"+m.Addr+"/metrics and /healthz can be served"
	if m.AllowRemote {
		if loop, _ := metrics.IsLoopback(m.Addr); !loop {
			c.Status = Warn
			c.Detail += "; reachable from other hosts (allow_remote): keep a firewall or proxy in front"
		}
	}
	return c
}
