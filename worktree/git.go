package worktree

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cc-connect/cc-connect/launch"
)

// How cc-connect runs git. The workspace is a repository that Claude can
// write, so its config, its hooks and its attributes are Claude's (or a
// hostile clone's) to set: nothing in them may make cc-connect run a
// command, which would run without any approver seeing it. So git runs
// through launch like every child (the agent's environment without a
// secret, as the agent's OS user, which also keeps git from running as
// root and from refusing the agent's repository as "dubious ownership"),
// and with:
//   - no system or global config (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL),
//     and none of the GIT_* variables of cc-connect's environment;
//   - every config key git's documentation lists as running a command set
//     to run none, as command-line config, which wins over the
//     repository's (GIT_CONFIG_COUNT: key and value apart, so a crafted
//     subsection name cannot change what is set): hooks (core.hooksPath),
//     core.fsmonitor, core.sshCommand, core.pager, core.editor,
//     core.askPass, core.gitProxy, core.alternateRefsCommand,
//     credential.helper, diff.external, gpg programs,
//     uploadpack.packObjectsHook, any transport (protocol.allow=never),
//     submodule recursion, automatic gc and maintenance;
//   - for every driver the repository's config defines (read with `git
//     config --list` before each command), its commands emptied:
//     filter.<x>.clean/smudge/process (and required=false),
//     diff.<x>.command/textconv, merge.<x>.driver,
//     credential.<url>.helper, remote.<x>.uploadpack/receivepack/vcs,
//     hook.<x>.command;
//   - arguments taken from anywhere but cc-connect's own constants after
//     "--" or --end-of-options, and a note's base branch checked first.
// safe.directory is never set: the repository must belong to the user
// git runs as (agent.user, else cc-connect's), and git's refusal of
// another's is reported as it is.

// staticConfig is the command-line config of every git command.
var staticConfig = [][2]string{
	// /dev/null is a directory no hook can ever be in (git finds
	// "/dev/null/post-checkout" is not there).
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
	{"core.sshCommand", ""},
	{"core.pager", "cat"},
	{"core.editor", "false"},
	{"sequence.editor", "false"},
	{"core.askPass", ""},
	{"core.gitProxy", ""},
	{"core.alternateRefsCommand", ""},
	{"credential.helper", ""}, // an empty value resets the list
	{"diff.external", ""},
	{"gpg.program", "false"},
	{"gpg.openpgp.program", "false"},
	{"gpg.x509.program", "false"},
	{"gpg.ssh.program", "false"},
	{"gpg.ssh.defaultKeyCommand", ""},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"uploadpack.packObjectsHook", ""},
	{"protocol.allow", "never"},
	{"submodule.recurse", "false"},
	{"status.submoduleSummary", "false"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
}

// driverCommands are, by section, the variables of a driver (a
// subsection the repository names) that hold a command, and what they are
// set to instead.
var driverCommands = map[string]map[string]string{
	"filter":     {"clean": "", "smudge": "", "process": "", "required": "false"},
	"diff":       {"command": "", "textconv": ""},
	"merge":      {"driver": ""},
	"credential": {"helper": ""},
	"remote":     {"uploadpack": "", "receivepack": "", "vcs": ""},
	"hook":       {"command": ""},
}

// gitEnv are the environment settings of every git command, with config
// set as command-line config.
func gitEnv(config [][2]string) []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		// Never wait on a prompt (an empty GIT_ASKPASS stops git from
		// falling back to core.askPass or SSH_ASKPASS).
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"GIT_PAGER=cat",
		// Parse output that is not translated.
		"LC_ALL=C",
		"GIT_CONFIG_COUNT=" + strconv.Itoa(len(config)),
	}
	for i, kv := range config {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

// neutralize returns the command-line config that empties the commands of
// every driver named in keys (the names `git config --list --name-only`
// prints: section and variable in lower case, the subsection as written).
func neutralize(keys []string) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	for _, key := range keys {
		section, rest, ok := strings.Cut(key, ".")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i < 0 {
			continue // no subsection: the static list covers it
		}
		sub := rest[:i]
		vars, ok := driverCommands[strings.ToLower(section)]
		if !ok {
			continue
		}
		for v, val := range vars {
			k := section + "." + sub + "." + v
			if !seen[k] {
				seen[k] = true
				out = append(out, [2]string{k, val})
			}
		}
	}
	// Deterministic, for the tests and the logs.
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

// git runs git with args in dir under the Manager's rule, hardened as
// above, and returns its stdout. The error carries git's stderr.
func (m *Manager) git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	// What the repository's config defines now: read right before the
	// command, so that a driver added since the last command is emptied
	// too.
	keys, err := m.exec(ctx, dir, staticConfig, "config", "--list", "--null", "--name-only")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, k := range bytes.Split(keys, []byte{0}) {
		if len(k) > 0 {
			names = append(names, string(k))
		}
	}
	config := append(append([][2]string(nil), staticConfig...), neutralize(names)...)
	return m.exec(ctx, dir, config, args...)
}

// exec runs one git command with config as command-line config.
func (m *Manager) exec(ctx context.Context, dir string, config [][2]string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	err := launch.Run(ctx, m.rule, launch.Spec{
		Path:         m.gitBin,
		Args:         append([]string{"--no-pager"}, args...),
		Dir:          dir,
		Env:          gitEnv(config),
		DropPrefixes: []string{"GIT_"},
		Stdout:       &stdout,
		Stderr:       &stderr,
	})
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		if strings.Contains(msg, "dubious ownership") {
			msg += fmt.Sprintf(" (cc-connect runs git as %s, who must own the repository: chown it, or set agent.user to its owner)", m.runsAs())
		}
		return stdout.Bytes(), &GitError{Args: args, Stderr: msg, Err: err}
	}
	return stdout.Bytes(), nil
}

// runsAs names the user git runs as, for messages.
func (m *Manager) runsAs() string {
	if m.rule.SwitchesUser() {
		return m.rule.User.String()
	}
	return "uid " + strconv.Itoa(m.rule.UID())
}

// refName accepts what git would take as a branch name or a commit id,
// and never something that reads as an option: no leading '-', no
// control characters or spaces, none of ~^:?*[\, no "..", "@{" or "//",
// no component starting with '.' or ending with ".lock".
var (
	refChars = regexp.MustCompile(`^[^\x00-\x20\x7f~^:?*\[\\]+$`)
	hexID    = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
)

func validRef(s string) bool {
	if hexID.MatchString(s) {
		return true
	}
	if s == "" || s == "@" || strings.HasPrefix(s, "-") || !refChars.MatchString(s) ||
		strings.Contains(s, "..") || strings.Contains(s, "@{") || strings.Contains(s, "//") ||
		strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.HasSuffix(s, ".") {
		return false
	}
	for c := range strings.SplitSeq(s, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return false
		}
	}
	return true
}
