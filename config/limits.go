package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Upper bounds of the size, duration and count keys. Past them a value is
// refused: it means nothing as a limit, and arithmetic on it overflows
// (attachment_max_size = 9223372036854775807 made every download read
// nothing, so every file was stored empty).
const (
	maxAttachmentSize = 1 << 30 // an attachment is held in memory while it is stored
	maxArtifactQuota  = 1 << 40
	maxDuration       = 365 * 24 * time.Hour
	maxQueueLimit     = 1000
	maxContextWindow  = 1_000_000_000
	maxPrewarm        = 8
)

// validateLimits refuses sizes, durations and counts past their bounds and
// warns about values that defeat what the key is for.
func validateLimits(c *Config, d *decoder) (warnings []string) {
	bad := func(key string) bool { return d.failed[key] }
	for _, s := range []struct {
		key string
		val Size
		max Size
		why string
	}{
		{"files.attachment_max_size", c.Files.AttachmentMaxSize, maxAttachmentSize, "an attachment is held in memory while it is stored"},
		{"files.artifact_quota", c.Files.ArtifactQuota, maxArtifactQuota, "a quota that large bounds nothing"},
	} {
		if !bad(s.key) && s.val > s.max {
			d.failf(s.key, "%s is too large: at most %s (%s)", sizeText(s.val), s.max, s.why)
		}
	}
	if !bad("files.attachment_max_size") && !bad("files.artifact_quota") && c.Files.AttachmentMaxSize > c.Files.ArtifactQuota &&
		c.Files.ArtifactQuota > 0 && c.Files.AttachmentMaxSize <= maxAttachmentSize {
		warnings = append(warnings, fmt.Sprintf("files.attachment_max_size (%s) is larger than files.artifact_quota (%s): an attachment over the quota can never be stored",
			c.Files.AttachmentMaxSize, c.Files.ArtifactQuota))
	}
	for _, dur := range []struct {
		key string
		val Duration
	}{
		{"state.seen_window", c.State.SeenWindow},
		{"agent.idle_timeout", c.Agent.IdleTimeout},
		{"agent.permission_timeout", c.Agent.PermissionTimeout},
		{"agent.shutdown_grace", c.Agent.ShutdownGrace},
		{"agent.close_grace", c.Agent.CloseGrace},
		{"agent.shell_timeout", c.Agent.ShellTimeout},
	} {
		if !bad(dur.key) && dur.val.D() > maxDuration {
			d.failf(dur.key, "%s is too long: at most %s (a year)", dur.val, Duration(maxDuration))
		}
	}
	if w := c.State.SeenWindow.D(); !bad("state.seen_window") && w > 0 && w < time.Hour {
		warnings = append(warnings, fmt.Sprintf("state.seen_window is %s: platforms redeliver messages for up to an hour (Slack), so a redelivered message may be answered twice", c.State.SeenWindow))
	}
	if p := c.Agent.PermissionTimeout.D(); !bad("agent.permission_timeout") && p > 0 && p < 10*time.Second {
		warnings = append(warnings, fmt.Sprintf("agent.permission_timeout is %s: a permission request is denied before anyone can answer it", c.Agent.PermissionTimeout))
	}
	if !bad("agent.queue_limit") && c.Agent.QueueLimit > maxQueueLimit {
		d.failf("agent.queue_limit", "%d is too large: at most %d (a conversation's journal holds 8 MiB of waiting messages)", c.Agent.QueueLimit, maxQueueLimit)
	}
	if !bad("agent.context_window") && c.Agent.ContextWindow > maxContextWindow {
		d.failf("agent.context_window", "%d is too large: at most %d tokens", c.Agent.ContextWindow, maxContextWindow)
	}
	if !bad("agent.prewarm") && c.Agent.Prewarm > maxPrewarm {
		d.failf("agent.prewarm", "%d is too large: at most %d spare processes per workspace (each is a whole claude process)", c.Agent.Prewarm, maxPrewarm)
	}
	if n, perWS := c.Agent.Prewarm, c.Agent.MaxProcessesPerWorkspace; !bad("agent.prewarm") && n > 0 && perWS > 0 && n >= perWS && n <= maxPrewarm {
		warnings = append(warnings, fmt.Sprintf("agent.prewarm (%d) is not below agent.max_processes_per_workspace (%d): spares may fill a workspace's slots, and each new conversation there that cannot use one waits for a spare to close",
			n, perWS))
	}
	return warnings
}

// sizeText writes a size as its key would, huge ones as bytes.
func sizeText(s Size) string {
	if s > maxArtifactQuota {
		return fmt.Sprintf("%d bytes", int64(s))
	}
	return s.String()
}

// dangerWarnings names settings that turn off what keeps the agent in
// check: anyone in the channel an admin, or Claude Code's permission
// prompts skipped. They are valid (a sandbox may want them), so they are
// warnings, shown by check, doctor and run.
func dangerWarnings(c *Config) (warnings []string) {
	for i, b := range c.Bindings {
		if slices.Contains(b.Admins, "*") {
			what := "everyone allowed in this binding is an admin: they may resume any session id"
			if b.AllowShell {
				what += " and run shell commands with !sh"
			}
			warnings = append(warnings, fmt.Sprintf(`bindings[%d].admins = ["*"]: %s; list the admins' user ids instead`, i, what))
		}
	}
	if c.Agent.PermissionMode == "bypassPermissions" {
		warnings = append(warnings, `agent.permission_mode = "bypassPermissions" `+skipPrompts+" (in every conversation)")
	}
	warnings = append(warnings, modeWarnings("agent", "anyone in a bound channel", c.Agent.AllowedModes)...)
	warnings = append(warnings, argsWarnings("agent", c.Agent.Args)...)
	for i, b := range c.Bindings {
		key := fmt.Sprintf("bindings[%d]", i)
		warnings = append(warnings, modeWarnings(key, "anyone in this binding's channels", b.AllowedModes)...)
		warnings = append(warnings, argsWarnings(key, b.Args)...)
	}
	return warnings
}

const skipPrompts = "turns off Claude Code's permission prompts: every tool runs without anyone asking"

// modeWarnings names bypassPermissions in prefix.allowed_modes, which lets
// who switch a conversation to it.
func modeWarnings(prefix, who string, modes []string) (warnings []string) {
	for i, m := range modes {
		if m == "bypassPermissions" {
			warnings = append(warnings, fmt.Sprintf(`%s.allowed_modes[%d] = "bypassPermissions" lets %s send !mode bypassPermissions, which %s`, prefix, i, who, skipPrompts))
		}
	}
	return warnings
}

// argsWarnings names the CLI flags in prefix.args that skip or move the
// permission prompts.
func argsWarnings(prefix string, args []string) (warnings []string) {
	for i, a := range args {
		key := fmt.Sprintf("%s.args[%d]", prefix, i)
		flag, value, hasValue := strings.Cut(a, "=")
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		switch strings.ToLower(flag) {
		case "--dangerously-skip-permissions":
			warnings = append(warnings, fmt.Sprintf("%s = %q %s, whatever agent.permission_mode and !mode say", key, a, skipPrompts))
		case "--allow-dangerously-skip-permissions":
			warnings = append(warnings, fmt.Sprintf("%s = %q lets the session switch to bypassPermissions, which %s", key, a, skipPrompts))
		case "--permission-mode":
			if strings.EqualFold(strings.TrimSpace(value), "bypassPermissions") {
				warnings = append(warnings, fmt.Sprintf("%s: --permission-mode %s %s, whatever agent.permission_mode and !mode say", key, value, skipPrompts))
			} else {
				warnings = append(warnings, fmt.Sprintf("%s: --permission-mode in %s.args overrides %s.permission_mode and !mode; set %s.permission_mode instead", key, prefix, prefix, prefix))
			}
		case "--permission-prompt-tool", "--permission-prompts":
			warnings = append(warnings, fmt.Sprintf("%s: %s in %s.args takes permission prompts away from the chat, where cc-connect asks them", key, flag, prefix))
		}
	}
	return warnings
}
