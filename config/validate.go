package config

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/workspace"
)

var (
	logLevels       = []string{"debug", "info", "warn", "error"}
	logFormats      = []string{"text", "json"}
	permissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto", "manual"}
	platformTypes   = []string{TypeSlack, TypeDiscord, TypeTelegram, TypeLocal}
)

// platformKeys says which type-specific keys each platform type uses; a key
// set for a type that ignores it is reported, since it usually means the
// entry's type or the key is wrong.
var platformKeys = map[string][]string{
	TypeSlack:    {"bot_token", "app_token", "api_url", "edits_per_minute", "edit_burst", "edit_interval", "reconnect_min", "reconnect_max"},
	TypeDiscord:  {"token", "api_url", "thread_per_message"},
	TypeTelegram: {"token", "api_url"},
	TypeLocal:    {},
}

// validate resolves paths and checks every value, reporting problems
// through d (skipping keys whose decoding already failed). It returns
// warnings: settings that are valid but probably not meant.
func validate(c *Config, dir string, d *decoder) (warnings []string) {
	bad := func(key string) bool { return d.failed[key] }

	if !bad("state.dir") {
		if c.State.Dir == "" {
			d.failf("state.dir", "must not be empty")
		} else if p, err := resolvePath(c.State.Dir, dir); err != nil {
			d.failf("state.dir", "%v", err)
		} else {
			c.State.Dir = p
		}
	}

	if !bad("state.seen_window") && c.State.SeenWindow <= 0 {
		d.failf("state.seen_window", "must be greater than zero, got %s", c.State.SeenWindow)
	}
	for _, f := range []struct {
		key string
		val Size
	}{
		{"artifact_threshold", c.Files.ArtifactThreshold},
		{"artifact_quota", c.Files.ArtifactQuota},
		{"attachment_max_size", c.Files.AttachmentMaxSize},
	} {
		if !bad("files."+f.key) && f.val <= 0 {
			d.failf("files."+f.key, "must be greater than zero, got %d", int64(f.val))
		}
	}
	if !bad("files.artifact_threshold") && c.Files.ArtifactThreshold > 1<<31-1 {
		d.failf("files.artifact_threshold", "%s is too large (a message that long is not chat)", c.Files.ArtifactThreshold)
	}

	if !bad("log.level") && !slices.Contains(logLevels, c.Log.Level) {
		d.failf("log.level", "%q is not one of %s", c.Log.Level, strings.Join(logLevels, ", "))
	}
	if !bad("log.format") && !slices.Contains(logFormats, c.Log.Format) {
		d.failf("log.format", "%q is not one of %s", c.Log.Format, strings.Join(logFormats, ", "))
	}

	validateAgent(c, d)
	validateChat(c, d)
	validateFilesSendMax(c, d)
	warnings = append(warnings, validateLimits(c, d)...)
	warnings = append(warnings, validateLive(c, d)...)
	warnings = append(warnings, dangerWarnings(c)...)
	// (Claude Code refuses as root only; with agent.user it runs as that
	// user. RunAs is resolved after this, so the key is read here.)
	asRoot := os.Getuid() == 0 && (c.Agent.User == "" || c.Agent.User == "0" || c.Agent.User == "root")
	if c.Agent.PermissionMode == "bypassPermissions" && asRoot && c.Agent.Env["IS_SANDBOX"] != "1" && os.Getenv("IS_SANDBOX") != "1" {
		warnings = append(warnings, `agent.permission_mode: Claude Code refuses bypassPermissions when run as root unless IS_SANDBOX=1 is set (in agent.env, inside a sandbox)`)
	}
	warnings = append(warnings, validatePlatforms(c, d)...)
	warnings = append(warnings, validateCluster(c, dir, d)...) // before validateBindings resolves workspaces
	warnings = append(warnings, validateBindings(c, dir, d)...)
	validateMetrics(c, d)
	validateConsole(c, dir, d)
	validateAudit(c, dir, d)
	warnings = append(warnings, validateUnattended(c, d)...)
	return warnings
}

func validateAgent(c *Config, d *decoder) {
	a := &c.Agent
	bad := func(key string) bool { return d.failed["agent."+key] }
	if !bad("command") && strings.TrimSpace(a.Command) == "" {
		d.failf("agent.command", "must not be empty (the claude executable: a name in PATH or a path)")
	}
	if !bad("permission_mode") && !slices.Contains(permissionModes, a.PermissionMode) {
		d.failf("agent.permission_mode", "%q is not one of %s", a.PermissionMode, strings.Join(permissionModes, ", "))
	}
	if !bad("allowed_modes") {
		if len(a.AllowedModes) == 0 {
			d.failf("agent.allowed_modes", `must list at least one mode (["default"] lets nobody change it)`)
		}
		for i, m := range a.AllowedModes {
			key := fmt.Sprintf("allowed_modes[%d]", i)
			if !bad(key) && !slices.Contains(permissionModes, m) {
				d.failf("agent."+key, "%q is not one of %s", m, strings.Join(permissionModes, ", "))
			}
		}
	}
	for k := range a.Env {
		if !validEnvName(k) {
			d.failf("agent.env", "%q is not a valid environment variable name", k)
		}
	}
	for _, dur := range []struct {
		key string
		val Duration
	}{
		{"idle_timeout", a.IdleTimeout},
		{"permission_timeout", a.PermissionTimeout},
		{"shutdown_grace", a.ShutdownGrace},
		{"close_grace", a.CloseGrace},
		{"shell_timeout", a.ShellTimeout},
	} {
		if !bad(dur.key) && dur.val <= 0 {
			d.failf("agent."+dur.key, "must be greater than zero, got %s", dur.val)
		}
	}
	if !bad("context_window") && a.ContextWindow <= 0 {
		d.failf("agent.context_window", "must be greater than zero, got %d", a.ContextWindow)
	}
	if !bad("max_processes") && a.MaxProcesses < 0 {
		d.failf("agent.max_processes", "must be 0 (unlimited) or more, got %d", a.MaxProcesses)
	}
	if !bad("max_processes_per_workspace") && a.MaxProcessesPerWorkspace < 0 {
		d.failf("agent.max_processes_per_workspace", "must be 0 (unlimited) or more, got %d", a.MaxProcessesPerWorkspace)
	}
	if !bad("approval_reminder") && a.ApprovalReminder < 0 {
		d.failf("agent.approval_reminder", "must be 0 (no reminder) or more, got %s", a.ApprovalReminder)
	}
	if !bad("prewarm") && a.Prewarm < 0 {
		d.failf("agent.prewarm", "must be 0 (no spare processes) or more, got %d", a.Prewarm)
	}
	if !bad("queue_limit") && a.QueueLimit < 1 {
		d.failf("agent.queue_limit", "must be at least 1, got %d", a.QueueLimit)
	}
}

func validatePlatforms(c *Config, d *decoder) (warnings []string) {
	if len(c.Platforms) == 0 && !d.failed["platforms"] {
		d.failf("platforms", "at least one [[platforms]] entry is required")
	}
	names := map[string]int{}
	local := -1
	for i, p := range c.Platforms {
		key := fmt.Sprintf("platforms[%d]", i)
		bad := func(k string) bool { return d.failed[key+"."+k] }
		switch {
		case bad("name"):
		case p.Name == "":
			d.failf(key+".name", "is required")
		default:
			if j, dup := names[p.Name]; dup {
				d.failf(key+".name", "%q is already used by platforms[%d]", p.Name, j)
			} else {
				names[p.Name] = i
			}
		}
		if bad("type") {
			continue
		}
		used, known := platformKeys[p.Type]
		if !known {
			d.failf(key+".type", "%q is not one of %s", p.Type, strings.Join(platformTypes, ", "))
			continue
		}
		set := map[string]bool{
			"bot_token":          p.BotToken != "",
			"app_token":          p.AppToken != "",
			"token":              p.Token != "",
			"api_url":            p.APIURL != "",
			"thread_per_message": p.ThreadPerMessage,
			"edits_per_minute":   p.EditsPerMinute != 0,
			"edit_burst":         p.EditBurst != 0,
			"edit_interval":      p.EditInterval != 0,
			"reconnect_min":      p.ReconnectMin != 0,
			"reconnect_max":      p.ReconnectMax != 0,
		}
		for _, k := range []string{"bot_token", "app_token", "token", "api_url", "thread_per_message",
			"edits_per_minute", "edit_burst", "edit_interval", "reconnect_min", "reconnect_max"} {
			if set[k] && !slices.Contains(used, k) {
				d.failf(key+"."+k, "is not used by type %s", p.Type)
			}
		}
		for _, tok := range p.Tokens() {
			ok := checkToken(d, key+"."+tok.Key, tok.Value, tok.Prefix, tok.What)
			if ok && p.Type == TypeTelegram && !telegramTokenShape(tok.Value.Reveal()) {
				d.failf(key+"."+tok.Key, "does not look like a Telegram bot token (expected <bot id>:<secret> as @BotFather gives it)")
			}
		}
		switch p.Type {
		case TypeSlack:
			checkSlackPacing(d, key, p)
		case TypeLocal:
			if local >= 0 {
				d.failf(key+".type", "only one local platform can read the terminal (platforms[%d] already does)", local)
			}
			local = i
		}
		if p.APIURL != "" && !bad("api_url") {
			if err := checkHTTPURL(p.APIURL); err != nil {
				d.failf(key+".api_url", "%v", err)
			}
		}
	}
	for _, p := range c.Platforms {
		if p.Name == "" {
			continue
		}
		if !slices.ContainsFunc(c.Bindings, func(b Binding) bool { return b.Platform == p.Name }) {
			warnings = append(warnings, fmt.Sprintf("platform %q has no [[bindings]] entry: its messages will be ignored", p.Name))
		}
	}
	return warnings
}

// Slack's pacing: how far a setting may go, and the reconnect defaults
// that the check of min against max needs. The edit defaults are the
// adapter's (slack.DefaultEditRate), written once there.
const (
	DefaultSlackReconnectMin = time.Second
	DefaultSlackReconnectMax = 2 * time.Minute

	maxSlackEditsPerMinute = 600 // past Slack's limits: every edit would wait out a 429
	minSlackReconnect      = 100 * time.Millisecond
)

// checkSlackPacing checks a Slack entry's edit and reconnect settings
// (zero: the default).
func checkSlackPacing(d *decoder, key string, p Platform) {
	bad := func(k string) bool { return d.failed[key+"."+k] }
	if n := p.EditsPerMinute; !bad("edits_per_minute") && (n < 0 || n > maxSlackEditsPerMinute) {
		d.failf(key+".edits_per_minute", "%d is not between 1 and %d (0 or unset: Slack's rate for chat.update)", n, maxSlackEditsPerMinute)
	}
	if n := p.EditBurst; !bad("edit_burst") && n < 0 {
		d.failf(key+".edit_burst", "%d is negative (0 or unset: the default)", n)
	}
	if v := p.EditInterval.D(); !bad("edit_interval") && v < 0 {
		d.failf(key+".edit_interval", "%s is negative (0 or unset: the default)", v)
	}
	for _, r := range []struct {
		k   string
		v   time.Duration
		def time.Duration
	}{{"reconnect_min", p.ReconnectMin.D(), DefaultSlackReconnectMin}, {"reconnect_max", p.ReconnectMax.D(), DefaultSlackReconnectMax}} {
		if !bad(r.k) && r.v != 0 && r.v < minSlackReconnect {
			d.failf(key+"."+r.k, "%s is less than %s: reconnecting that fast hammers Slack (0 or unset: %s)", r.v, minSlackReconnect, r.def)
		}
	}
	lo, hi := cmp.Or(p.ReconnectMin.D(), DefaultSlackReconnectMin), cmp.Or(p.ReconnectMax.D(), DefaultSlackReconnectMax)
	switch {
	case hi >= lo || bad("reconnect_min") || bad("reconnect_max"):
	case p.ReconnectMax != 0:
		d.failf(key+".reconnect_max", "%s is less than reconnect_min (%s)", hi, lo)
	default:
		d.failf(key+".reconnect_min", "%s is more than reconnect_max (unset: %s)", lo, hi)
	}
}

// checkToken reports a missing token or one with the wrong prefix, and says
// whether the token is present and well formed. The value is never printed.
func checkToken(d *decoder, key string, tok Secret, prefix, what string) bool {
	if d.failed[key] {
		return false
	}
	if tok == "" {
		d.failf(key, "is required: %s; keep it in the environment and write ${VAR}", what)
		return false
	}
	if prefix != "" && !strings.HasPrefix(tok.Reveal(), prefix) {
		d.failf(key, "must start with %s: expected %s", prefix, what)
		return false
	}
	return true
}

func telegramTokenShape(tok string) bool {
	id, secret, ok := strings.Cut(tok, ":")
	if !ok || id == "" || secret == "" {
		return false
	}
	for _, r := range id {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", redactURL(raw))
	}
	return nil
}

// redactURL hides credentials a URL may carry (user info, query).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Redacted
	}
	if u.User != nil {
		u.User = url.User(Redacted)
	}
	if u.RawQuery != "" {
		u.RawQuery = Redacted
	}
	return u.String()
}

func validateBindings(c *Config, dir string, d *decoder) (warnings []string) {
	if len(c.Bindings) == 0 && !d.failed["bindings"] {
		d.failf("bindings", "at least one [[bindings]] entry is required (which channel drives which workspace)")
	}
	seen := map[[2]string]int{}
	for i := range c.Bindings {
		b := &c.Bindings[i]
		key := fmt.Sprintf("bindings[%d]", i)
		bad := func(k string) bool { return d.failed[key+"."+k] }
		if !bad("platform") {
			switch {
			case b.Platform == "":
				d.failf(key+".platform", "is required (the name of a [[platforms]] entry)")
			case !slices.ContainsFunc(c.Platforms, func(p Platform) bool { return p.Name == b.Platform }):
				d.failf(key+".platform", "%q is not the name of any [[platforms]] entry", b.Platform)
			}
		}
		if !bad("channel") {
			if b.Channel == "" {
				d.failf(key+".channel", `must not be empty (a channel or chat id, or "*" for any)`)
			} else if j, dup := seen[[2]string{b.Platform, b.Channel}]; dup {
				d.failf(key+".channel", "%q on platform %q is already bound by bindings[%d]", b.Channel, b.Platform, j)
			} else {
				seen[[2]string{b.Platform, b.Channel}] = i
			}
		}
		if !bad("workspace") && c.ServedElsewhere(*b) {
			// Another cluster member's workspace: it need not exist here.
			switch ws, err := resolvePath(b.Workspace, dir); {
			case b.Workspace == "":
				d.failf(key+".workspace", "is required (the folder Claude Code works in)")
			case err != nil:
				d.failf(key+".workspace", "%v", err)
			default:
				b.Workspace = ws
			}
		} else if !bad("workspace") {
			if ws, err := resolveWorkspace(b.Workspace, dir); err != nil {
				d.failf(key+".workspace", "%v", err)
			} else {
				b.Workspace = ws
			}
		}
		for _, list := range []struct {
			name  string
			users []string
		}{{"allow_users", b.AllowUsers}, {"admins", b.Admins}, {"approvers", b.Approvers}} {
			for j, u := range list.users {
				if strings.TrimSpace(u) == "" {
					d.failf(fmt.Sprintf("%s.%s[%d]", key, list.name, j), "must not be empty")
				}
			}
		}
		if !bad("channel") && b.Channel != "*" && b.Channel != "" && c.platformType(b.Platform) == TypeLocal && b.Channel != "local" {
			d.failf(key+".channel", `%q never matches: the local platform's only channel is "local" (or write "*")`, b.Channel)
		}
		if b.Approvers != nil && len(b.Approvers) == 0 && !bad("approvers") {
			d.failf(key+".approvers", "is empty, so nobody could answer a permission prompt here: leave it out to let every user in allow_users answer, or name who may")
		}
		if !slices.Contains(b.AllowUsers, "*") {
			for _, admin := range b.Admins {
				if admin != "" && !slices.Contains(b.AllowUsers, admin) {
					warnings = append(warnings, fmt.Sprintf("%s.admins: %q is not in allow_users, so cannot use this binding at all", key, admin))
				}
			}
			for _, u := range b.Approvers {
				if u != "" && u != "*" && !slices.Contains(b.AllowUsers, u) {
					warnings = append(warnings, fmt.Sprintf("%s.approvers: %q is not in allow_users, so cannot answer permission prompts", key, u))
				}
			}
		}
		warnings = append(warnings, validateTeamBinding(c, key, b, d)...)
		if len(b.AllowUsers) == 0 && !bad("allow_users") {
			warnings = append(warnings, fmt.Sprintf(`%s.allow_users is empty: nobody may use this binding (write ["*"] for everyone in the channel)`, key))
		}
		// Each wildcard alone is common and fine; together, on a chat
		// platform, whoever can add the bot to a channel or write to it
		// (on Telegram: anyone at all) works in the workspace. The local
		// platform's only user is whoever holds the terminal.
		if b.Channel == "*" && slices.Contains(b.AllowUsers, "*") && c.platformType(b.Platform) != TypeLocal && c.platformType(b.Platform) != "" {
			warnings = append(warnings, fmt.Sprintf(`%s (platform %q): channel = "*" with allow_users = ["*"] lets anyone who can reach the bot, in any channel it is in or a direct message, drive Claude Code in %s: name the channel, or the users`, key, b.Platform, b.Workspace))
		}
	}
	return warnings
}

// platformType returns the type of the platform named name, or "".
func (c *Config) platformType(name string) string {
	for _, p := range c.Platforms {
		if p.Name == name {
			return p.Type
		}
	}
	return ""
}

// resolvePath expands "~" and makes p absolute from dir.
func resolvePath(p, dir string) (string, error) {
	p, err := workspace.ExpandHome(p)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p), nil
}

func resolveWorkspace(p, dir string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("is required (the folder Claude Code works in)")
	}
	abs, err := resolvePath(p, dir)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(abs)
	switch {
	case os.IsNotExist(err):
		return "", fmt.Errorf("%s does not exist", abs)
	case err != nil:
		return "", fmt.Errorf("checking %s: %w", abs, err)
	case !info.IsDir():
		return "", fmt.Errorf("%s is not a folder", abs)
	}
	return workspace.Normalize(abs, nil), nil
}
