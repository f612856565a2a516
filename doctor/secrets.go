package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/launch"
)

// Who the agent runs as, and what of cc-connect's secrets it can reach
// from there. Claude's Bash runs as the agent's OS user: whatever that
// user can read, an allowed user (or a prompt-injected file) can have
// Claude post in a chat.

// accessAs reports whether the agent's user may read ("r") or write ("w")
// path, as the kernel judges it (ACLs and mounts included): with
// access(2) when the agent is cc-connect's own user, else by a `test`
// child started as that user, which needs root.
func accessAs(ctx context.Context, agent agentproc.Config, env []string, path, mode string) (bool, error) {
	cred := agentproc.Credential(agent)
	if cred == nil {
		return access(path, mode), nil
	}
	if err := agentproc.CheckSwitch(agent.User); err != nil {
		return false, err
	}
	err := launch.Run(ctx, agent.Rule(), launch.Spec{
		Path: "/bin/sh", Args: []string{"-c", `test -` + mode + ` "$1"`, "sh", path},
		Environ: env, Dir: "/",
	})
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, nil
	}
	return false, fmt.Errorf("testing %s as %s: %w", path, agent.User, err)
}

// checkAgentUser says who the agent runs as and whether that user can do
// its work: switch to it at all (cc-connect must be root), write the
// workspaces, and keep its Claude Code config dir.
func checkAgentUser(ctx context.Context, cfg *config.Config, agent agentproc.Config, env []string) Check {
	c := Check{Name: "agent user", Status: OK}
	if err := cfg.CheckAgentUser(); err != nil {
		c.Status, c.Detail = Fail, err.Error()+" (doctor judges the user it runs as to be the one cc-connect runs as)"
		return c
	}
	if err := cfg.CheckRoot(); err != nil {
		c.Status, c.Detail = Fail, err.Error()
		return c
	}
	if agentproc.Credential(agent) == nil {
		c.Detail = fmt.Sprintf("claude, its forks, !sh and git run as uid %d, the user cc-connect runs as (agent.user is not set to another user)", os.Geteuid())
		if exposed, what := cfg.RootExposed(); exposed {
			// allow_root: the admin accepted it; say what it costs.
			c.Status = Warn
			c.Detail = fmt.Sprintf("claude, its forks, !sh and git run as root (agent.allow_root = true) for %s: Claude's Bash can read every token, "+
				"from /proc/<cc-connect pid>/environ, the config file or any file, and post it in a chat; set agent.user to a user of its own (docs/operations.md)", what)
		}
		return c
	}
	var problems []string
	seen := map[string]bool{}
	for _, b := range cfg.Bindings {
		if seen[b.Workspace] || cfg.ServedElsewhere(b) {
			continue
		}
		seen[b.Workspace] = true
		if ok, err := accessAs(ctx, agent, env, b.Workspace, "w"); err != nil {
			problems = append(problems, err.Error())
		} else if !ok {
			problems = append(problems, fmt.Sprintf("cannot write the workspace %s (chown it to the agent's user, or give its group write access)", b.Workspace))
		}
	}
	dir := agentproc.ConfigDirFor(agent)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		parent := existingParent(dir)
		if ok, err := accessAs(ctx, agent, env, parent, "w"); err != nil || !ok {
			problems = append(problems, fmt.Sprintf("cannot create its Claude Code config dir %s (%s is not writable by it)", dir, parent))
		}
	} else if ok, err := accessAs(ctx, agent, env, dir, "w"); err != nil || !ok {
		problems = append(problems, fmt.Sprintf("cannot write its Claude Code config dir %s (sessions and transcripts live there)", dir))
	}
	if agent.User.GID == 0 {
		problems = append(problems, "its primary group is root's: give it a group of its own, which cc-connect shares .cc-connect/ with")
	}
	if len(problems) > 0 {
		c.Status = Warn
		c.Detail = fmt.Sprintf("agent.user %s: ", agent.User) + strings.Join(problems, "; ")
		return c
	}
	c.Detail = fmt.Sprintf("claude, its forks and !sh run as %s, not as cc-connect (uid %d); it can write the workspaces and %s", agent.User, os.Geteuid(), dir)
	return c
}

// checkSecrets warns when a platform token lies where the agent's user
// can read it: a config file it can read holding a token literally, or a
// config it can write (a reload would apply its edit: another api_url, and
// the adapter sends the token there), or, when it is cc-connect's own user,
// the environment the tokens come from.
func checkSecrets(ctx context.Context, cfg *config.Config, agent agentproc.Config, env []string) Check {
	c := Check{Name: "secrets", Status: OK}
	if agentproc.CheckSwitch(agent.User) != nil {
		c.Status, c.Detail = Warn, "not checked: doctor cannot act as agent.user without root"
		return c
	}
	remote := false
	for _, p := range cfg.Platforms {
		remote = remote || p.Type != config.TypeLocal
	}
	if !remote {
		c.Detail = "no platform tokens (the terminal chat only)"
		return c
	}
	who := agent.User.String()
	same := agentproc.Credential(agent) == nil
	if same {
		who = fmt.Sprintf("the agent (uid %d, cc-connect's own user)", os.Geteuid())
	}
	var exposed []string
	if cfg.Path != "" {
		readable, err := accessAs(ctx, agent, env, cfg.Path, "r")
		if err != nil {
			exposed = append(exposed, err.Error())
		}
		if readable && len(cfg.LiteralSecrets) > 0 {
			exposed = append(exposed, fmt.Sprintf("%s written in %s, which %s can read: use ${VAR}, or make the file unreadable to it",
				strings.Join(cfg.LiteralSecrets, ", "), cfg.Path, who))
		}
		if writable, err := accessAs(ctx, agent, env, cfg.Path, "w"); err == nil && writable {
			exposed = append(exposed, fmt.Sprintf("%s can be written by %s: Claude could point a platform's api_url at another server or widen the allow lists, and the reload would apply it", cfg.Path, who))
		} else if err == nil {
			if dirW, err := accessAs(ctx, agent, env, filepath.Dir(cfg.Path), "w"); err == nil && dirW {
				exposed = append(exposed, fmt.Sprintf("%s can be replaced by %s, which can write its folder: Claude could point a platform's api_url at another server, and the reload would apply it", cfg.Path, who))
			}
		}
	}
	if same && len(cfg.SecretVars) > 0 {
		exposed = append(exposed, fmt.Sprintf("%s come from the environment; the agent runs as the same user, so it can read the environment of every process of that user holding them "+
			"(the shell or script that starts cc-connect; cc-connect itself is not dumpable) and every env file that user can read",
			strings.Join(cfg.SecretVarNames(), ", ")))
	}
	if len(exposed) > 0 {
		c.Status = Warn
		c.Detail = "secrets within Claude's reach: " + strings.Join(exposed, "; ")
		if same {
			c.Detail += ". Run cc-connect as root with agent.user set to a user of its own (docs/operations.md)"
		}
		return c
	}
	if same {
		c.Detail = "the config file holds no token the agent can read, and no token comes from the environment"
		return c
	}
	c.Detail = fmt.Sprintf("%s cannot read %s, and cc-connect's environment belongs to another user", who, cfg.Path)
	return c
}

// checkAgentEnv names (never shows) the variables of cc-connect's
// environment that the agent does not get, and why.
func checkAgentEnv(agent agentproc.Config, environ []string) Check {
	c := Check{Name: "agent environment", Status: OK}
	var held []string
	rule := agent.Rule()
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if why := rule.DropReason(name, value); why != "" && why != "agent.user" {
			held = append(held, name+" ("+why+")")
		}
	}
	if len(held) == 0 {
		c.Detail = "inherits cc-connect's environment; nothing in it is held back"
		return c
	}
	c.Detail = "held back from claude, forks and !sh: " + strings.Join(held, ", ")
	return c
}

// envValue is the value of name in an environment list.
func envValue(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
