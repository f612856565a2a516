package agentproc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/cc-connect/cc-connect/agentenv"
)

// Every process cc-connect starts for the agent (the claude CLI, its forks
// for !btw, the admins' !sh commands, doctor's version check) gets its
// environment from BuildEnv and its OS user from Credential, so that no
// child started elsewhere gets more than the rule allows. The rule keeps
// from the child what cc-connect holds for itself: the platform tokens and
// the credentials that EnvDrop names. Claude's Bash runs as the child's
// user, so what the child can read, Claude can post in a chat.

// userScopedVars name the cc-connect user's own folders and sockets. A
// child that runs as another user (Config.User) does not inherit them: it
// gets that user's HOME, USER and LOGNAME instead, and anything else
// through Config.Env.
var userScopedVars = []string{
	"CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
	"XDG_STATE_HOME", "XDG_RUNTIME_DIR", "MAIL",
}

// The user and the drop list are agentenv's, shared with the config's
// checks; these names keep agentproc's callers in its own terms.
var (
	// ErrNotRoot: see agentenv.ErrNotRoot.
	ErrNotRoot = agentenv.ErrNotRoot
	// DefaultEnvDrop: see agentenv.DefaultEnvDrop.
	DefaultEnvDrop = agentenv.DefaultEnvDrop
	// AgentOwnPrefixes: see agentenv.AgentOwnPrefixes.
	AgentOwnPrefixes = agentenv.AgentOwnPrefixes
)

// User is the OS user the agent's children run as (agent.user).
type User = agentenv.User

// SecretVars is the set of variables platform secrets are read from.
type SecretVars = agentenv.SecretVars

// NewSecretVars returns a set holding names.
func NewSecretVars(names ...string) *SecretVars { return agentenv.NewSecretVars(names...) }

// LookupUser finds a user by name or uid (agentenv.LookupUser).
func LookupUser(spec string) (*User, error) { return agentenv.LookupUser(spec) }

// CheckSwitch reports whether children can start as u (agentenv.CheckSwitch).
func CheckSwitch(u *User) error { return agentenv.CheckSwitch(u) }

// IsEnvPattern reports whether an agent.env_drop entry is a pattern.
func IsEnvPattern(entry string) bool { return agentenv.IsEnvPattern(entry) }

// CheckEnvPattern reports whether an agent.env_drop entry is usable.
func CheckEnvPattern(entry string) error { return agentenv.CheckEnvPattern(entry) }

// switchesUser reports whether children run as another user than this
// process.
func (c Config) switchesUser() bool {
	return c.User != nil && int(c.User.UID) != os.Geteuid()
}

// Credential is the process credential of every child: nil when children
// run as cc-connect's own user, else agent.user's uid, primary group and
// supplementary groups (cc-connect's own groups are not kept).
func Credential(cfg Config) *syscall.Credential {
	if !cfg.switchesUser() {
		return nil
	}
	return &syscall.Credential{Uid: cfg.User.UID, Gid: cfg.User.GID, Groups: slices.Clone(cfg.User.Groups)}
}

// AgentUID is the uid the children run as.
func AgentUID(cfg Config) int {
	if cfg.User != nil {
		return int(cfg.User.UID)
	}
	return os.Geteuid()
}

// DropReason says why BuildEnv keeps the variable name, inherited from
// cc-connect's environment, from the agent: "" when it passes. The reasons
// are for doctor and logs ("platform secret", "agent.env_drop *_TOKEN",
// "agent.user").
func DropReason(name string, cfg Config) string {
	if cfg.Secrets.Has(name) {
		return "platform secret"
	}
	if cfg.switchesUser() && (slices.Contains(userScopedVars, name) || name == "HOME" || name == "USER" || name == "LOGNAME") {
		return "agent.user"
	}
	if entry := agentenv.MatchDrop(name, cfg.EnvDrop); entry != "" {
		return "agent.env_drop " + entry
	}
	return ""
}

// ConfigDirFor is the Claude Code configuration directory the agent
// started with cfg uses, and so where its transcripts are: CLAUDE_CONFIG_DIR
// of the environment BuildEnv gives it, else that environment's
// $HOME/.claude (agent.user's home when children run as another user).
func ConfigDirFor(cfg Config) string {
	env := BuildEnv(os.Environ(), cfg)
	var home string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "CLAUDE_CONFIG_DIR":
			if v != "" {
				return v
			}
		case "HOME":
			home = v
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}
