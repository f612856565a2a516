// Package config loads cc-connect's TOML configuration: it reads the file
// with viper, expands ${ENV_VAR} references (secrets live in the
// environment), applies defaults and validates everything, naming the key of
// every problem. It owns the file format and nothing else: it builds no
// adapters, starts nothing and imports neither the engine nor agentproc (it
// describes the agent; agentcfg builds the driver's options from it, and
// agentenv is the rule for the agent's user and environment it checks).
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentenv"
	"github.com/cc-connect/cc-connect/spend"
)

// ErrNotFound means the config file does not exist. The caller points the
// user at `cc-connect init`, which writes a starter config.
var ErrNotFound = errors.New("config file not found")

// Platform types cc-connect knows about. Whether a build can run one is the
// binary's business (its adapter registry), not the loader's.
const (
	TypeSlack    = "slack"
	TypeDiscord  = "discord"
	TypeTelegram = "telegram"
	TypeLocal    = "local"
)

// Config is a loaded, validated configuration. Paths in it are absolute.
// The toml tags are the keys of the file; a field without one is not a key.
type Config struct {
	// Path is the absolute path of the file this config came from.
	Path string

	State     State      `toml:"state"`
	Log       Log        `toml:"log"`
	Agent     Agent      `toml:"agent"`
	Files     Files      `toml:"files"`
	Chat      Chat       `toml:"chat"`
	Platforms []Platform `toml:"platforms"`
	Bindings  []Binding  `toml:"bindings"`
	Metrics   Metrics    `toml:"metrics"`
	Console   Console    `toml:"console"`
	Audit     Audit      `toml:"audit"`
	// Cluster makes this cc-connect one host of several serving one bot
	// ([cluster]); nil without the table, and then no NATS code runs.
	Cluster *Cluster `toml:"cluster"`

	// SecretVars maps each environment variable a secret is read from (a
	// ${VAR} in a platform's bot_token, app_token or token, or in a
	// webhook's secret) to the first key that reads it. No child gets
	// these variables (secrets.go).
	SecretVars map[string]string
	// LiteralSecrets lists the secret keys whose value is written in the
	// file itself ("platforms[0].token"): whoever can read the file has it.
	LiteralSecrets []string
	// SecretVarValues holds the value each of SecretVars had when the
	// file was read (SecretValues): a copy of it under another name is a
	// copy of a secret. Printed redacted.
	SecretVarValues map[string]Secret

	// Work that starts without a person (unattended.go).
	Schedules []Schedule `toml:"schedules"`
	Webhooks  Webhooks   `toml:"webhooks"`
	Spend     Spend      `toml:"spend"`

	// Warnings are things that load but probably do not do what the admin
	// meant (a binding nobody may use, a platform no binding names). The
	// binary logs them at start.
	Warnings []string
}

// State says where cc-connect keeps its own files.
type State struct {
	// Dir holds sessions, inboxes and locks (created 0700). "~" is
	// expanded; a relative path is taken from the config file's folder.
	Dir string `toml:"dir"`
	// SeenWindow is how long accepted message ids are remembered, so a
	// platform's redelivery after a restart is not answered twice.
	SeenWindow Duration `toml:"seen_window"`
}

// Files limits what cc-connect writes into workspaces for Claude to read.
type Files struct {
	// ArtifactThreshold: a message longer than this is saved as a file in
	// the workspace and Claude is given its path and an excerpt.
	ArtifactThreshold Size `toml:"artifact_threshold"`
	// ArtifactQuota bounds the saved messages and attachments per workspace.
	ArtifactQuota Size `toml:"artifact_quota"`
	// AttachmentMaxSize is the largest attachment passed on to Claude.
	AttachmentMaxSize Size `toml:"attachment_max_size"`
	// SendFileMaxSize is the largest file Claude may post into the chat
	// with its send_file tool (the platform's own limit may be lower).
	SendFileMaxSize Size `toml:"send_file_max_size"`
}

// Log configures the process log on stderr.
type Log struct {
	Level  string `toml:"level"`  // debug|info|warn|error
	Format string `toml:"format"` // text|json
}

// Agent is how the Claude Code processes are started and limited.
type Agent struct {
	Command string   `toml:"command"`
	Args    []string `toml:"args"`
	// Env is extra environment for the agent. Keys keep the case they have
	// in the file (viper would lowercase them).
	Env                      map[string]Secret `toml:"env"`
	Model                    string            `toml:"model"`
	PermissionMode           string            `toml:"permission_mode"`
	AppendSystemPrompt       string            `toml:"append_system_prompt"`
	IdleTimeout              Duration          `toml:"idle_timeout"`
	PermissionTimeout        Duration          `toml:"permission_timeout"`
	ApprovalReminder         Duration          `toml:"approval_reminder"`
	ContextWindow            int64             `toml:"context_window"`
	SelfReport               bool              `toml:"self_report"`
	MaxProcesses             int               `toml:"max_processes"`
	MaxProcessesPerWorkspace int               `toml:"max_processes_per_workspace"`
	Prewarm                  int               `toml:"prewarm"` // spare processes per recently active workspace; 0 keeps none
	QueueLimit               int               `toml:"queue_limit"`
	ShutdownGrace            Duration          `toml:"shutdown_grace"`
	CloseGrace               Duration          `toml:"close_grace"`
	// AllowedModes are the permission modes users may switch to with !mode.
	AllowedModes []string `toml:"allowed_modes"`
	// ShellTimeout kills an admin's !sh command after this long.
	ShellTimeout Duration `toml:"shell_timeout"`
	// StallNotice posts one notice in a turn's thread when claude has sent
	// nothing for this long; 0 turns it off. MaxTurnTime interrupts a
	// turn that runs longer; 0 (the default) is no limit. See live.go.
	StallNotice Duration `toml:"stall_notice"`
	MaxTurnTime Duration `toml:"max_turn_time"`
	// LimitRetry is the first wait for a usage window whose reset Claude
	// Code did not report (docs/turns.md "Usage limits"); each refusal
	// doubles it, up to an hour.
	LimitRetry Duration `toml:"limit_retry"`
	// EnvDrop names the variables of cc-connect's environment the agent
	// does not inherit: exact names or patterns (agentenv.DefaultEnvDrop).
	EnvDrop []string `toml:"env_drop"`
	// User is the OS user (name or uid) the agent, its forks and !sh run
	// as; "" is cc-connect's own user. Another user needs cc-connect to
	// run as root.
	User string `toml:"user"`
	// RunAs is User resolved in the user database by Load; nil when User
	// is empty.
	RunAs *agentenv.User
	// AllowRoot lets cc-connect run as root with the agent as root too
	// (no agent.user) while it serves chat platforms, webhooks or a
	// cluster. Off, `run` refuses that setup (CheckRoot): Claude's Bash,
	// as root, reads every token.
	AllowRoot bool `toml:"allow_root"`
}

// Platform is one chat connection ([[platforms]]). Which token fields apply
// depends on Type; a field set for a type that does not use it is an error.
type Platform struct {
	Name     string `toml:"name"`
	Type     string `toml:"type"`
	BotToken Secret `toml:"bot_token"` // slack: xoxb-…
	AppToken Secret `toml:"app_token"` // slack: xapp-… (Socket Mode)
	Token    Secret `toml:"token"`     // discord, telegram
	// APIURL points the platform client at another API base (a proxy,
	// GovSlack, a local Telegram Bot API server, a test server).
	APIURL string `toml:"api_url"`
	// ThreadPerMessage (discord) opens a thread for each top-level message
	// in a bound channel.
	ThreadPerMessage bool `toml:"thread_per_message"`
	// Slack's pacing (type slack; zero means the default, see
	// docs/configuration.md): the chat.update budget across the workspace,
	// the edits that may go back to back, the least time between two edits
	// in a channel, and the backoff bounds between attempts to reach Slack.
	EditsPerMinute int      `toml:"edits_per_minute"`
	EditBurst      int      `toml:"edit_burst"`
	EditInterval   Duration `toml:"edit_interval"`
	ReconnectMin   Duration `toml:"reconnect_min"`
	ReconnectMax   Duration `toml:"reconnect_max"`
}

// Binding connects a platform's channel to a workspace ([[bindings]]).
type Binding struct {
	Platform string `toml:"platform"`
	Channel  string `toml:"channel"`
	// Workspace is absolute and normalized (workspace.Normalize) after Load.
	Workspace  string   `toml:"workspace"`
	AllowUsers []string `toml:"allow_users"`
	Admins     []string `toml:"admins"`
	// Approvers may answer permission prompts here (buttons, !allow,
	// !deny). Nil when the file does not say: every allowed user may.
	// Only users in AllowUsers can approve either way.
	Approvers []string `toml:"approvers"`
	// RequireMention is nil when the file does not say: the engine then
	// requires a mention in channels and not in DMs.
	RequireMention *bool `toml:"require_mention"`
	// AllowShell lets this binding's admins run !sh in the workspace.
	AllowShell bool `toml:"allow_shell"`
	// Worktree gives each conversation its own git worktree of the
	// workspace (which must be the top of a git repository).
	Worktree bool `toml:"worktree"`
	// Spending caps in USD, from the costs Claude Code reports; zero means
	// none. The first two cap the whole binding, the last two each user.
	CapDailyUSD       USD `toml:"cap_daily_usd"`
	CapMonthlyUSD     USD `toml:"cap_monthly_usd"`
	CapUserDailyUSD   USD `toml:"cap_user_daily_usd"`
	CapUserMonthlyUSD USD `toml:"cap_user_monthly_usd"`
	// Host is the cluster member that owns this binding's workspace, and
	// Standby the members that may take it over ([cluster] only).
	Host    string   `toml:"host"`
	Standby []string `toml:"standby"`
	// Progress is what a turn shows while it runs: quiet, normal or
	// verbose ("" until validated: ProgressOf gives the default). See
	// live.go.
	Progress string `toml:"progress"`
	// FollowUps is what a message sent while a turn runs does: queue
	// (the next turn) or steer (into the running turn); "" until
	// validated: FollowUpsOf gives the default. See live.go.
	FollowUps string `toml:"follow_ups"`

	// Overrides of [agent] and [files] for this binding's conversations
	// (team.go: AgentFor, FilesFor); nil keeps the global value.
	Model                    *string           `toml:"model"`
	PermissionMode           *string           `toml:"permission_mode"`
	AllowedModes             []string          `toml:"allowed_modes"`
	AppendSystemPrompt       *string           `toml:"append_system_prompt"`
	Args                     []string          `toml:"args"` // after agent.args
	Env                      map[string]Secret `toml:"env"`  // over agent.env; keys keep their case
	MaxProcessesPerWorkspace *int              `toml:"max_processes_per_workspace"`
	ArtifactThreshold        *Size             `toml:"artifact_threshold"`
	ArtifactQuota            *Size             `toml:"artifact_quota"`
	AttachmentMaxSize        *Size             `toml:"attachment_max_size"`
	SendFileMaxSize          *Size             `toml:"send_file_max_size"`
	// Switches of the team features ([chat]); nil is the default: the
	// sender header on in channels and off in DMs, the mention on.
	SenderHeader  *bool `toml:"sender_header"`
	NotifyMention *bool `toml:"notify_mention"`
	// Checkpoints: nil is on (the CLI checkpoints the files each turn
	// changes, so that they can be rewound).
	Checkpoints *bool `toml:"checkpoints"`
}

// Metrics configures the Prometheus endpoint ([metrics]); off unless Addr
// is set.
type Metrics struct {
	// Addr is host:port for /metrics and /healthz; "" turns them off.
	Addr string `toml:"addr"`
	// AllowRemote permits an Addr reachable from other hosts. Without it
	// only loopback addresses are accepted: the metrics name platforms and
	// show activity.
	AllowRemote bool `toml:"allow_remote"`
}

// Duration is a time.Duration written as a Go duration string ("30m").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// Size is a number of bytes, written as an integer or with a unit
// ("16KiB", "64MiB", "10MB").
type Size int64

// String writes the size with the largest binary unit that divides it.
func (s Size) String() string {
	for _, u := range []struct {
		name string
		n    Size
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if s != 0 && s%u.n == 0 {
			return fmt.Sprintf("%d%s", s/u.n, u.name)
		}
	}
	return fmt.Sprintf("%dB", int64(s))
}

// Default returns the configuration used for every key the file leaves out.
func Default() Config {
	return Config{
		State: State{Dir: "~/.cc-connect", SeenWindow: Duration(24 * time.Hour)},
		Files: Files{
			ArtifactThreshold: 16 << 10,
			ArtifactQuota:     64 << 20,
			AttachmentMaxSize: 10 << 20,
			SendFileMaxSize:   defaultSendFileMaxSize,
		},
		Chat:  defaultChat(),
		Log:   Log{Level: "info", Format: "text"},
		Audit: defaultAudit(),
		Agent: Agent{
			Command:                  "claude",
			PermissionMode:           "default",
			IdleTimeout:              Duration(30 * time.Minute),
			PermissionTimeout:        Duration(10 * time.Minute),
			ApprovalReminder:         Duration(30 * time.Minute),
			ContextWindow:            200000,
			SelfReport:               true,
			MaxProcesses:             8,
			MaxProcessesPerWorkspace: 4,
			Prewarm:                  1,
			QueueLimit:               20,
			ShutdownGrace:            Duration(30 * time.Second),
			CloseGrace:               Duration(5 * time.Second),
			AllowedModes:             []string{"default", "acceptEdits", "plan"},
			ShellTimeout:             Duration(2 * time.Minute),
			StallNotice:              Duration(DefaultStallNotice),
			LimitRetry:               Duration(DefaultLimitRetry),
			EnvDrop:                  slices.Clone(agentenv.DefaultEnvDrop),
		},
		Console:  defaultConsole(),
		Webhooks: Webhooks{MaxBody: 1 << 20},
		Spend:    Spend{Timezone: "Local", TurnReserveUSD: spend.DefaultReserve},
	}
}

// defaultBinding is the starting point of every [[bindings]] entry.
func defaultBinding() Binding { return Binding{Channel: "*"} }

// EnvValues is the agent's extra environment with the values revealed,
// for the process that starts the agent; nil when there is none.
func (a Agent) EnvValues() map[string]string {
	if len(a.Env) == 0 {
		return nil
	}
	env := make(map[string]string, len(a.Env))
	for k, v := range a.Env {
		env[k] = v.Reveal()
	}
	return env
}

// SlogLevel returns the configured log level.
func (l Log) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// LogValue summarizes the config for a log line; secrets appear only as
// Redacted.
func (c *Config) LogValue() slog.Value {
	platforms := make([]string, len(c.Platforms))
	for i, p := range c.Platforms {
		platforms[i] = p.Name + "(" + p.Type + ")"
	}
	return slog.GroupValue(
		slog.String("path", c.Path),
		slog.String("state_dir", c.State.Dir),
		slog.String("agent_command", c.Agent.Command),
		slog.String("model", c.Agent.Model),
		slog.String("permission_mode", c.Agent.PermissionMode),
		slog.Any("agent_env_keys", c.Agent.envKeys()),
		slog.String("agent_user", c.Agent.User),
		slog.Any("platforms", platforms),
		slog.Int("bindings", len(c.Bindings)),
	)
}

// LogValue describes a platform without its tokens.
func (p Platform) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", p.Name),
		slog.String("type", p.Type),
		slog.String("bot_token", p.BotToken.String()),
		slog.String("app_token", p.AppToken.String()),
		slog.String("token", p.Token.String()),
		slog.String("api_url", redactURL(p.APIURL)),
	)
}

// String describes a platform without its tokens, so that printing a
// Config with %v or %+v does not leak them either.
func (p Platform) String() string {
	return fmt.Sprintf("{name:%s type:%s bot_token:%s app_token:%s token:%s api_url:%s thread_per_message:%t}",
		p.Name, p.Type, p.BotToken, p.AppToken, p.Token, redactURL(p.APIURL), p.ThreadPerMessage)
}

// GoString is String, for %#v.
func (p Platform) GoString() string { return "config.Platform" + p.String() }

// GoString is String, for %#v.
func (c *Config) GoString() string { return c.String() }

// String renders the config as TOML with every secret replaced by
// Redacted, for `--check`-style output and debugging.
func (c *Config) String() string {
	var b strings.Builder
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	list := func(xs []string) string {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = q(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	fmt.Fprintf(&b, "# %s\n[state]\ndir = %s\nseen_window = %s\n\n", c.Path, q(c.State.Dir), q(c.State.SeenWindow.String()))
	fmt.Fprintf(&b, "[log]\nlevel = %s\nformat = %s\n\n", q(c.Log.Level), q(c.Log.Format))
	a := c.Agent
	fmt.Fprintf(&b, "[agent]\ncommand = %s\nargs = %s\n", q(a.Command), list(a.Args))
	env := make([]string, 0, len(a.Env))
	for _, k := range a.envKeys() {
		env = append(env, fmt.Sprintf("%q = %q", k, a.Env[k].String()))
	}
	fmt.Fprintf(&b, "env = { %s }\nenv_drop = %s\nuser = %s\nallow_root = %t\n", strings.Join(env, ", "), list(a.EnvDrop), q(a.User), a.AllowRoot)
	fmt.Fprintf(&b, "model = %s\npermission_mode = %s\nappend_system_prompt = %s\n", q(a.Model), q(a.PermissionMode), q(a.AppendSystemPrompt))
	fmt.Fprintf(&b, "idle_timeout = %s\npermission_timeout = %s\napproval_reminder = %s\ncontext_window = %d\nself_report = %t\n",
		q(a.IdleTimeout.String()), q(a.PermissionTimeout.String()), q(a.ApprovalReminder.String()), a.ContextWindow, a.SelfReport)
	fmt.Fprintf(&b, "max_processes = %d\nmax_processes_per_workspace = %d\nqueue_limit = %d\nshutdown_grace = %s\nclose_grace = %s\n",
		a.MaxProcesses, a.MaxProcessesPerWorkspace, a.QueueLimit, q(a.ShutdownGrace.String()), q(a.CloseGrace.String()))
	fmt.Fprintf(&b, "prewarm = %d\n", a.Prewarm)
	fmt.Fprintf(&b, "allowed_modes = %s\nshell_timeout = %s\n", list(a.AllowedModes), q(a.ShellTimeout.String()))
	fmt.Fprintf(&b, "stall_notice = %s\nmax_turn_time = %s\n", q(a.StallNotice.String()), q(a.MaxTurnTime.String()))
	fmt.Fprintf(&b, "limit_retry = %s\n", q(a.LimitRetry.String()))
	f := c.Files
	fmt.Fprintf(&b, "\n[files]\nartifact_threshold = %s\nartifact_quota = %s\nattachment_max_size = %s\nsend_file_max_size = %s\n",
		q(f.ArtifactThreshold.String()), q(f.ArtifactQuota.String()), q(f.AttachmentMaxSize.String()), q(f.SendFileMaxSize.String()))
	c.Chat.write(&b)
	for _, p := range c.Platforms {
		fmt.Fprintf(&b, "\n[[platforms]]\nname = %s\ntype = %s\n", q(p.Name), q(p.Type))
		for _, t := range p.setTokens() {
			fmt.Fprintf(&b, "%s = %s\n", t.Key, q(t.Value.String()))
		}
		if p.APIURL != "" {
			fmt.Fprintf(&b, "api_url = %s\n", q(redactURL(p.APIURL)))
		}
		if p.ThreadPerMessage {
			b.WriteString("thread_per_message = true\n")
		}
		for _, kv := range []struct {
			key string
			set bool
			val string
		}{
			{"edits_per_minute", p.EditsPerMinute != 0, fmt.Sprint(p.EditsPerMinute)},
			{"edit_burst", p.EditBurst != 0, fmt.Sprint(p.EditBurst)},
			{"edit_interval", p.EditInterval != 0, q(p.EditInterval.String())},
			{"reconnect_min", p.ReconnectMin != 0, q(p.ReconnectMin.String())},
			{"reconnect_max", p.ReconnectMax != 0, q(p.ReconnectMax.String())},
		} {
			if kv.set {
				fmt.Fprintf(&b, "%s = %s\n", kv.key, kv.val)
			}
		}
	}
	if c.Metrics.Addr != "" {
		fmt.Fprintf(&b, "\n[metrics]\naddr = %s\nallow_remote = %t\n", q(c.Metrics.Addr), c.Metrics.AllowRemote)
	}
	c.Console.write(&b)
	fmt.Fprintf(&b, "\n[audit]\nenabled = %t\npath = %s\nmax_size = %s\nkeep = %d\n", c.Audit.Enabled, q(c.Audit.Path), q(c.Audit.MaxSize.String()), c.Audit.Keep)
	for _, bd := range c.Bindings {
		fmt.Fprintf(&b, "\n[[bindings]]\nplatform = %s\nchannel = %s\nworkspace = %s\nallow_users = %s\nadmins = %s\n",
			q(bd.Platform), q(bd.Channel), q(bd.Workspace), list(bd.AllowUsers), list(bd.Admins))
		if bd.Approvers != nil {
			fmt.Fprintf(&b, "approvers = %s\n", list(bd.Approvers))
		}
		if bd.RequireMention != nil {
			fmt.Fprintf(&b, "require_mention = %t\n", *bd.RequireMention)
		}
		if bd.AllowShell {
			b.WriteString("allow_shell = true\n")
		}
		bd.writeUnattended(&b)
		fmt.Fprintf(&b, "progress = %s\nfollow_ups = %s\n", q(bd.ProgressOf()), q(bd.FollowUpsOf()))
		bd.writeTeam(&b)
		if bd.Host != "" {
			fmt.Fprintf(&b, "host = %s\nstandby = %s\n", q(bd.Host), list(bd.Standby))
		}
	}
	if c.Cluster != nil {
		b.WriteString(c.Cluster.render())
	}
	c.writeUnattended(&b)
	return b.String()
}

func (a Agent) envKeys() []string {
	keys := make([]string, 0, len(a.Env))
	for k := range a.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var (
	_ slog.LogValuer = (*Config)(nil)
	_ slog.LogValuer = Platform{}
	_ fmt.Stringer   = (*Config)(nil)
)
