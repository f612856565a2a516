package agentproc

import "strings"

// defaultEnv is set for every agent unless the admin's environment or
// Config.Env already sets the key: it keeps the CLI from phoning home or
// updating itself under a running bridge (PROTOCOL.md §1).
var defaultEnv = [][2]string{
	{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
	{"DISABLE_AUTOUPDATER", "1"},
}

// BuildArgs returns the CLI arguments (without the command itself) for one
// long-lived stream-json agent process. StartOptions.Model and
// StartOptions.PermissionMode override the Config values; Config.Args come
// last so an admin can add flags agentproc does not know about.
func BuildArgs(cfg Config, opts StartOptions) []string {
	args := []string{
		"-p",
		"--input-format", "stream-json",
		"--output-format", "stream-json",
		"--verbose",
		"--permission-prompt-tool", "stdio",
		// Always "snapshot off": otherwise a resumed session keeps the
		// appended prompt it was created with and silently ignores a new
		// one, or its absence (§8). Turning the self-report off must take
		// effect on sessions created while it was on, even by hand.
		"--system-prompt-snapshot", "off",
	}
	if opts.ResumeID != "" {
		args = append(args, "--resume", opts.ResumeID)
		if opts.Fork {
			args = append(args, "--fork-session")
		}
	}
	if opts.SessionID != "" {
		args = append(args, "--session-id", opts.SessionID)
	}
	if opts.PartialMessages {
		args = append(args, "--include-partial-messages")
	}
	if m := firstNonEmpty(opts.Model, cfg.Model); m != "" {
		args = append(args, "--model", m)
	}
	if pm := firstNonEmpty(opts.PermissionMode, cfg.PermissionMode); pm != "" {
		args = append(args, "--permission-mode", pm)
	}
	if cfg.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", cfg.AppendSystemPrompt)
	}
	args = append(args, cfg.Args...)
	if !opts.ReadOnly {
		// After the admin's own --allowedTools: repeated flags add up
		// (TestRealCLICaptureSdkMCPBesideAdminRules).
		for _, t := range opts.Tools {
			args = append(args, "--allowedTools", HostToolName(t.Name))
		}
	}
	if opts.ReadOnly {
		// Seen on the real CLI (engine's TestRealCLIBtwCannotWrite): --tools
		// leaves only these built-in tools ("No such tool available: Write"),
		// even after a --tools default and in bypassPermissions; it keeps
		// MCP tools, which the deny rule removes; a later --permission-mode
		// wins over an earlier one, and plan refuses what would still write.
		args = append(args,
			"--tools", strings.Join(ReadOnlyTools, ","),
			"--disallowedTools", "mcp__*",
			"--permission-mode", "plan")
	}
	return args
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
