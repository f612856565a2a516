package launch

import (
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/cc-connect/cc-connect/agentenv"
)

// Rule is as whom, and with what of cc-connect's environment, every child
// starts. cc-connect has one: the [agent] section's (agentproc.Config.Rule),
// with a binding's env added for that binding's claude. Claude's Bash runs
// as the child's user with the child's environment, so what a child can
// read, Claude can post in a chat.
type Rule struct {
	// Env is added to (and overrides) what the child inherits: agent.env,
	// and a binding's env. Keys keep their case. A secret's name or value
	// is never passed, even from here.
	Env map[string]string
	// Defaults are set when neither the inherited environment nor Env
	// sets the key (the CLI's "no updater, no telemetry").
	Defaults [][2]string
	// EnvDrop names the inherited variables the child does not get: exact
	// names, or patterns with '*' and '?' (agentenv.DefaultEnvDrop,
	// matched without regard to case).
	EnvDrop []string
	// Secrets are what the config marks secret: no child gets a variable
	// a secret is read from, nor one whose value is a secret's. Shared by
	// copies of the Rule; nil is an empty set.
	Secrets *agentenv.SecretVars
	// User, when set and not cc-connect's own user, is the OS user every
	// child runs as (Credential): that needs cc-connect to run as root
	// (agentenv.CheckSwitch).
	User *agentenv.User
}

// userScopedVars name the cc-connect user's own folders and sockets. A
// child that runs as another user (Rule.User) does not inherit them: it
// gets that user's HOME, USER and LOGNAME instead, and anything else
// through Rule.Env. Without TMPDIR it uses /tmp: a service's TMPDIR (where
// cc-connect keeps its token locks) is its own user's, where Claude Code
// as the agent user could not make its temporary folder.
var userScopedVars = []string{
	"CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
	"XDG_STATE_HOME", "XDG_RUNTIME_DIR", "MAIL", "TMPDIR", "TMP", "TEMP",
}

// SwitchesUser reports whether children run as another user than this
// process.
func (r Rule) SwitchesUser() bool {
	return r.User != nil && int(r.User.UID) != os.Geteuid()
}

// Credential is the process credential of every child: nil when children
// run as cc-connect's own user, else agent.user's uid, primary group and
// supplementary groups (cc-connect's own groups are not kept).
func (r Rule) Credential() *syscall.Credential {
	if !r.SwitchesUser() {
		return nil
	}
	return &syscall.Credential{Uid: r.User.UID, Gid: r.User.GID, Groups: slices.Clone(r.User.Groups)}
}

// UID is the uid the children run as.
func (r Rule) UID() int {
	if r.User != nil {
		return int(r.User.UID)
	}
	return os.Geteuid()
}

// DropReason says why Environ keeps the variable name=value, inherited
// from cc-connect's environment, from a child: "" when it passes. The
// reasons are for doctor and logs ("config secret", "value of a config
// secret", "agent.env_drop *_TOKEN", "agent.user"); none shows the value.
func (r Rule) DropReason(name, value string) string {
	if r.Secrets.Has(name) {
		return "config secret"
	}
	if r.Secrets.HasValue(value) {
		return "value of a config secret"
	}
	if r.SwitchesUser() && (slices.Contains(userScopedVars, name) || name == "HOME" || name == "USER" || name == "LOGNAME") {
		return "agent.user"
	}
	if entry := agentenv.MatchDrop(name, r.EnvDrop); entry != "" {
		return "agent.env_drop " + entry
	}
	return ""
}

// secret reports whether name=value must never reach a child, wherever it
// comes from.
func (r Rule) secret(name, value string) bool {
	return r.Secrets.Has(name) || r.Secrets.HasValue(value)
}

// Environ returns the environment of a child started under r: base
// (normally os.Environ()) less the variables DropReason names, then, for
// another user, that user's HOME, USER and LOGNAME, then the Defaults that
// are not set yet, then Env, which wins over all of them, except that a
// secret (by name or by value) is never passed. Keys keep their case; a
// later entry replaces an earlier one with the same key, so the result
// never holds a key twice.
func (r Rule) Environ(base []string) []string { return r.environ(base, nil, nil) }

// environ is Environ with extra (the child's own settings, set last) and
// the prefixes of names no entry but extra's may have.
func (r Rule) environ(base, extra, dropPrefixes []string) []string {
	out := make([]string, 0, len(base)+len(r.Defaults)+len(r.Env)+len(extra)+3)
	index := make(map[string]int, cap(out))
	dropped := func(key string) bool {
		return slices.ContainsFunc(dropPrefixes, func(p string) bool { return strings.HasPrefix(key, p) })
	}
	set := func(kv string) {
		key, val, _ := strings.Cut(kv, "=")
		if r.secret(key, val) {
			return
		}
		if i, ok := index[key]; ok {
			out[i] = kv
			return
		}
		index[key] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		key, val, _ := strings.Cut(kv, "=")
		if r.DropReason(key, val) == "" && !dropped(key) {
			set(kv)
		}
	}
	if r.SwitchesUser() {
		set("HOME=" + r.User.Home)
		set("USER=" + r.User.Name)
		set("LOGNAME=" + r.User.Name)
	}
	for _, d := range r.Defaults {
		if _, ok := index[d[0]]; ok {
			continue
		}
		if _, ok := r.Env[d[0]]; ok {
			continue
		}
		if !dropped(d[0]) {
			set(d[0] + "=" + d[1])
		}
	}
	keys := make([]string, 0, len(r.Env))
	for k := range r.Env {
		if !dropped(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // deterministic order for tests and logs
	for _, k := range keys {
		set(k + "=" + r.Env[k])
	}
	for _, kv := range extra {
		set(kv)
	}
	// An empty CLAUDE_CONFIG_DIR is not unset to the CLI: it resolves ""
	// to its working directory and keeps its config and transcripts in
	// the workspace. Dropped, the CLI uses ~/.claude, where its
	// transcripts are looked for.
	if i, ok := index["CLAUDE_CONFIG_DIR"]; ok && out[i] == "CLAUDE_CONFIG_DIR=" {
		out = append(out[:i], out[i+1:]...)
	}
	return out
}
