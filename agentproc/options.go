package agentproc

import "time"

// Config is how every agent process of this cc-connect is started; it comes
// from the `[agent]` section of the config.
type Config struct {
	// Command is the claude executable (a name looked up in PATH, or a path).
	Command string
	// Args are extra CLI arguments appended after the ones agentproc sets.
	Args []string
	// Env is extra environment for the agent, added to (and overriding)
	// what it inherits from cc-connect's environment (BuildEnv). Keys keep
	// their case.
	Env map[string]string
	// EnvDrop names the inherited variables the agent does not get: exact
	// names, or patterns with '*' and '?' (DefaultEnvDrop, matched without
	// regard to case). Env still adds what the admin gives it.
	EnvDrop []string
	// Secrets are the variables platform tokens are read from: never given
	// to a child. Shared by copies of the Config; nil is an empty set.
	Secrets *SecretVars
	// User, when set and not cc-connect's own user, is the OS user every
	// child runs as (Credential): that needs cc-connect to run as root
	// (CheckSwitch).
	User *User
	// Model is passed as --model when not empty.
	Model string
	// PermissionMode is passed as --permission-mode when not empty.
	PermissionMode string
	// AppendSystemPrompt is passed as --append-system-prompt when not empty.
	// Every process also gets --system-prompt-snapshot off, so that adding,
	// changing or dropping it takes effect on resumed sessions too.
	AppendSystemPrompt string
	// CloseGrace is how long Close waits after stdin EOF before SIGTERM, and
	// again before SIGKILL. Zero means 5s.
	CloseGrace time.Duration
	// StderrTailBytes bounds the stderr kept for diagnostics. Zero means 8 KiB.
	StderrTailBytes int
}

// StartOptions say which session a process runs and where.
type StartOptions struct {
	// Dir is the working directory: the workspace's normalized real path.
	Dir string
	// ResumeID resumes that session (--resume) when not empty.
	ResumeID string
	// Fork, with ResumeID, starts a new session from a copy of its history
	// (--fork-session); the original transcript is left untouched.
	Fork bool
	// SessionID, when not empty, fixes the new session's id (--session-id).
	SessionID string
	// Model overrides Config.Model for this process when not empty.
	Model string
	// PermissionMode overrides Config.PermissionMode when not empty.
	PermissionMode string
	// PartialMessages asks the CLI for the text as it is written
	// (--include-partial-messages): TextDelta, ThinkingDelta and CallStart
	// events, for a reply streamed into the chat.
	PartialMessages bool
	// ReadOnly starts a process that cannot change anything: only the
	// ReadOnlyTools, no MCP tools, plan mode. The flags come after
	// Config.Args, so no permission mode or tool list in the config (or in
	// Config.Args) widens them (BuildArgs).
	ReadOnly bool
	// Init is what the host declares in the initialize request that
	// every process is sent at its start (initialize.go). Start adds the
	// host's SDK MCP server to it when Tools are served.
	Init InitOptions
	// Tools are the host's tools served to this process (hosttools.go):
	// declared in initialize and allowed without a prompt. A ReadOnly
	// process gets none.
	Tools []HostTool
}

// ReadOnlyTools are the only tools a ReadOnly process has: they read and
// search files, and nothing else.
var ReadOnlyTools = []string{"Read", "Grep", "Glob"}
