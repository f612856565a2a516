package agentproc

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cc-connect/cc-connect/agentenv"
	"github.com/cc-connect/cc-connect/launch"
)

// Every process cc-connect starts (the claude CLI, its forks for !btw, the
// admins' !sh commands, git, doctor's probes) goes through launch, under
// the Rule the agent's Config makes (Config.Rule): its environment, its OS
// user, its process group. The rule keeps from the child what cc-connect
// holds for itself: the secrets of the config and the credentials that
// EnvDrop names. Claude's Bash runs as the child's user, so what the child
// can read, Claude can post in a chat. BuildEnv, Credential, DropReason and
// AgentUID are the rule's, in agentproc's terms.

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

// SecretVars is what the config marks secret (agentenv.SecretVars).
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

// Rule is how every child of cc-connect starts under cfg: its
// environment (cfg.Env over cc-connect's own, less the secrets and
// EnvDrop, with the CLI's defaults) and its OS user (cfg.User).
func (c Config) Rule() launch.Rule {
	return launch.Rule{Env: c.Env, Defaults: defaultEnv, EnvDrop: c.EnvDrop, Secrets: c.Secrets, User: c.User}
}

// switchesUser reports whether children run as another user than this
// process.
func (c Config) switchesUser() bool { return c.Rule().SwitchesUser() }

// BuildEnv returns the environment of every child started under cfg
// (launch.Rule.Environ): base (normally os.Environ()) less what DropReason
// names, with agent.user's HOME, USER and LOGNAME, the defaults that are
// not set yet, then cfg.Env, never a secret's name or value.
func BuildEnv(base []string, cfg Config) []string { return cfg.Rule().Environ(base) }

// Credential is the process credential of every child: nil when children
// run as cc-connect's own user, else agent.user's uid, primary group and
// supplementary groups (cc-connect's own groups are not kept).
func Credential(cfg Config) *syscall.Credential { return cfg.Rule().Credential() }

// AgentUID is the uid the children run as.
func AgentUID(cfg Config) int { return cfg.Rule().UID() }

// DropReason says why BuildEnv keeps the variable name, inherited from
// cc-connect's environment, from the agent: "" when it passes
// (launch.Rule.DropReason, without looking at a value).
func DropReason(name string, cfg Config) string { return cfg.Rule().DropReason(name, "") }

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
