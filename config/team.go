package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// The keys for teams in one thread: [chat] (what a prompt tells Claude
// about the conversation, whom a message mentions) and, per binding, the
// overrides of the agent setup and of the files limits, and the switches of
// the sender header and the mention.

// Chat configures what cc-connect tells Claude about the conversation it
// works in, and whom it mentions ([chat]).
type Chat struct {
	// NotifyAfter: when a turn that ran at least this long ends, its last
	// message mentions the person who asked (bindings[].notify_mention).
	NotifyAfter Duration `toml:"notify_after"`
	// ThreadContextMessages bounds the earlier messages of a thread given
	// to Claude with the first prompt of a conversation it was called
	// into; 0 gives none.
	ThreadContextMessages int `toml:"thread_context_messages"`
	// ThreadContextBytes bounds the text of those messages; the oldest
	// are left out first.
	ThreadContextBytes Size `toml:"thread_context_bytes"`
	// ThreadContextOnFresh also gives the thread so far with the first
	// prompt of a session started afresh in a conversation that had one
	// (!new, a fallback after "Prompt is too long").
	ThreadContextOnFresh bool `toml:"thread_context_on_fresh"`
}

const (
	defaultSendFileMaxSize = 20 << 20
	maxSendFileSize        = 1 << 30 // the file is held in memory while it is posted
	maxThreadMessages      = 1000
	maxThreadBytes         = 1 << 20
)

func defaultChat() Chat {
	return Chat{
		NotifyAfter:           Duration(2 * time.Minute),
		ThreadContextMessages: 50,
		ThreadContextBytes:    16 << 10,
	}
}

func (c Chat) write(w *strings.Builder) {
	fmt.Fprintf(w, "\n[chat]\nnotify_after = %q\nthread_context_messages = %d\nthread_context_bytes = %q\nthread_context_on_fresh = %t\n",
		c.NotifyAfter.String(), c.ThreadContextMessages, c.ThreadContextBytes.String(), c.ThreadContextOnFresh)
}

// AgentFor is the agent setup of b's conversations: [agent] with b's
// overrides. Args are agent.args then b's; Env is agent.env with b's
// entries added over it.
func (c *Config) AgentFor(b Binding) Agent {
	a := c.Agent
	a.Args = slices.Concat(c.Agent.Args, b.Args)
	if len(b.Env) > 0 {
		a.Env = maps.Clone(c.Agent.Env)
		if a.Env == nil {
			a.Env = make(map[string]Secret, len(b.Env))
		}
		maps.Copy(a.Env, b.Env)
	}
	if b.Model != nil {
		a.Model = *b.Model
	}
	if b.PermissionMode != nil {
		a.PermissionMode = *b.PermissionMode
	}
	if b.AllowedModes != nil {
		a.AllowedModes = slices.Clone(b.AllowedModes)
	}
	if b.AppendSystemPrompt != nil {
		a.AppendSystemPrompt = *b.AppendSystemPrompt
	}
	if b.MaxProcessesPerWorkspace != nil {
		a.MaxProcessesPerWorkspace = *b.MaxProcessesPerWorkspace
	}
	return a
}

// FilesFor is the files limits of b's conversations: [files] with b's
// overrides.
func (c *Config) FilesFor(b Binding) Files {
	f := c.Files
	for _, o := range []struct {
		dst *Size
		src *Size
	}{{&f.ArtifactThreshold, b.ArtifactThreshold}, {&f.ArtifactQuota, b.ArtifactQuota},
		{&f.AttachmentMaxSize, b.AttachmentMaxSize}, {&f.SendFileMaxSize, b.SendFileMaxSize}} {
		if o.src != nil {
			*o.dst = *o.src
		}
	}
	return f
}

// SenderHeaderOn says whether b's prompts start with who wrote them: the
// binding's switch, else on in channels and off in direct messages.
func (b Binding) SenderHeaderOn(dm bool) bool {
	if b.SenderHeader != nil {
		return *b.SenderHeader
	}
	return !dm
}

// NotifyMentionOn says whether b's long turns and waiting prompts mention
// the person who asked (on unless the binding says not).
func (b Binding) NotifyMentionOn() bool { return b.NotifyMention == nil || *b.NotifyMention }

// Overrides lists the keys of [agent] and [files] that b sets, in file
// order, for logs and `check`.
func (b Binding) Overrides() []string {
	var keys []string
	for _, o := range []struct {
		key string
		set bool
	}{
		{"model", b.Model != nil}, {"permission_mode", b.PermissionMode != nil}, {"allowed_modes", b.AllowedModes != nil},
		{"append_system_prompt", b.AppendSystemPrompt != nil}, {"args", len(b.Args) > 0}, {"env", len(b.Env) > 0},
		{"max_processes_per_workspace", b.MaxProcessesPerWorkspace != nil},
		{"artifact_threshold", b.ArtifactThreshold != nil}, {"artifact_quota", b.ArtifactQuota != nil},
		{"attachment_max_size", b.AttachmentMaxSize != nil}, {"send_file_max_size", b.SendFileMaxSize != nil},
	} {
		if o.set {
			keys = append(keys, o.key)
		}
	}
	return keys
}

// validateChat checks [chat].
func validateChat(c *Config, d *decoder) {
	ch := c.Chat
	bad := func(k string) bool { return d.failed["chat."+k] }
	if !bad("notify_after") && (ch.NotifyAfter < 0 || ch.NotifyAfter.D() > maxDuration) {
		d.failf("chat.notify_after", "must be 0 (every turn) to a year, got %s", ch.NotifyAfter)
	}
	if !bad("thread_context_messages") && (ch.ThreadContextMessages < 0 || ch.ThreadContextMessages > maxThreadMessages) {
		d.failf("chat.thread_context_messages", "must be 0 (none) to %d, got %d", maxThreadMessages, ch.ThreadContextMessages)
	}
	if !bad("thread_context_bytes") && (ch.ThreadContextBytes <= 0 || ch.ThreadContextBytes > maxThreadBytes) {
		d.failf("chat.thread_context_bytes", "must be more than 0 and at most %s (it goes with one prompt), got %s",
			Size(maxThreadBytes), sizeText(ch.ThreadContextBytes))
	}
}

// validateTeamBinding checks b's overrides the way validateAgent and
// validate check the global keys, naming bindings[i].key.
func validateTeamBinding(c *Config, key string, b *Binding, d *decoder) (warnings []string) {
	bad := func(k string) bool { return d.failed[key+"."+k] }
	if b.Model != nil && !bad("model") && strings.TrimSpace(*b.Model) != *b.Model {
		d.failf(key+".model", "%q has spaces around it", *b.Model)
	}
	if b.PermissionMode != nil && !bad("permission_mode") && !slices.Contains(permissionModes, *b.PermissionMode) {
		d.failf(key+".permission_mode", "%q is not one of %s", *b.PermissionMode, strings.Join(permissionModes, ", "))
	}
	if b.AllowedModes != nil && !bad("allowed_modes") {
		if len(b.AllowedModes) == 0 {
			d.failf(key+".allowed_modes", `must list at least one mode (["default"] lets nobody change it), or be left out to keep agent.allowed_modes`)
		}
		for i, m := range b.AllowedModes {
			k := fmt.Sprintf("%s.allowed_modes[%d]", key, i)
			if !d.failed[k] && !slices.Contains(permissionModes, m) {
				d.failf(k, "%q is not one of %s", m, strings.Join(permissionModes, ", "))
			}
		}
	}
	for i, a := range b.Args {
		if k := fmt.Sprintf("%s.args[%d]", key, i); !d.failed[k] && a == "" {
			d.failf(k, "must not be empty")
		}
	}
	for k := range b.Env {
		if !validEnvName(k) {
			d.failf(key+".env", "%q is not a valid environment variable name", k)
		}
	}
	if b.MaxProcessesPerWorkspace != nil && !bad("max_processes_per_workspace") && *b.MaxProcessesPerWorkspace < 0 {
		d.failf(key+".max_processes_per_workspace", "must be 0 (unlimited) or more, got %d", *b.MaxProcessesPerWorkspace)
	}
	for _, s := range []struct {
		key string
		val *Size
		max Size
	}{
		{"artifact_threshold", b.ArtifactThreshold, 1<<31 - 1},
		{"artifact_quota", b.ArtifactQuota, maxArtifactQuota},
		{"attachment_max_size", b.AttachmentMaxSize, maxAttachmentSize},
		{"send_file_max_size", b.SendFileMaxSize, maxSendFileSize},
	} {
		switch {
		case s.val == nil || bad(s.key):
		case *s.val <= 0:
			d.failf(key+"."+s.key, "must be greater than zero, got %d", int64(*s.val))
		case *s.val > s.max:
			d.failf(key+"."+s.key, "%s is too large: at most %s", sizeText(*s.val), s.max)
		}
	}
	a := c.AgentFor(*b)
	if b.PermissionMode != nil && !bad("permission_mode") && a.PermissionMode == "bypassPermissions" && c.Agent.PermissionMode != "bypassPermissions" {
		warnings = append(warnings, fmt.Sprintf("%s.permission_mode is bypassPermissions: Claude runs every tool in %s without asking anyone", key, b.Workspace))
	}
	return warnings
}

// validateFilesSendMax checks files.send_file_max_size.
func validateFilesSendMax(c *Config, d *decoder) {
	s := c.Files.SendFileMaxSize
	switch {
	case d.failed["files.send_file_max_size"]:
	case s <= 0:
		d.failf("files.send_file_max_size", "must be greater than zero, got %d", int64(s))
	case s > maxSendFileSize:
		d.failf("files.send_file_max_size", "%s is too large: at most %s (the file is held in memory while it is posted)", sizeText(s), Size(maxSendFileSize))
	}
}

// writeTeam adds a binding's overrides and switches to String's TOML;
// env values appear as Redacted.
func (b Binding) writeTeam(w *strings.Builder) {
	if b.Model != nil {
		fmt.Fprintf(w, "model = %q\n", *b.Model)
	}
	if b.PermissionMode != nil {
		fmt.Fprintf(w, "permission_mode = %q\n", *b.PermissionMode)
	}
	list := func(xs []string) string {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = fmt.Sprintf("%q", x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if b.AllowedModes != nil {
		fmt.Fprintf(w, "allowed_modes = %s\n", list(b.AllowedModes))
	}
	if b.AppendSystemPrompt != nil {
		fmt.Fprintf(w, "append_system_prompt = %q\n", *b.AppendSystemPrompt)
	}
	if len(b.Args) > 0 {
		fmt.Fprintf(w, "args = %s\n", list(b.Args))
	}
	if len(b.Env) > 0 {
		keys := slices.Sorted(maps.Keys(b.Env))
		env := make([]string, len(keys))
		for i, k := range keys {
			env[i] = fmt.Sprintf("%q = %q", k, b.Env[k].String())
		}
		fmt.Fprintf(w, "env = { %s }\n", strings.Join(env, ", "))
	}
	if b.MaxProcessesPerWorkspace != nil {
		fmt.Fprintf(w, "max_processes_per_workspace = %d\n", *b.MaxProcessesPerWorkspace)
	}
	for _, s := range []struct {
		key string
		val *Size
	}{{"artifact_threshold", b.ArtifactThreshold}, {"artifact_quota", b.ArtifactQuota},
		{"attachment_max_size", b.AttachmentMaxSize}, {"send_file_max_size", b.SendFileMaxSize}} {
		if s.val != nil {
			fmt.Fprintf(w, "%s = %q\n", s.key, s.val.String())
		}
	}
	if b.SenderHeader != nil {
		fmt.Fprintf(w, "sender_header = %t\n", *b.SenderHeader)
	}
	if b.NotifyMention != nil {
		fmt.Fprintf(w, "notify_mention = %t\n", *b.NotifyMention)
	}
	if b.Checkpoints != nil {
		fmt.Fprintf(w, "checkpoints = %t\n", *b.Checkpoints)
	}
}

// decodeBindingEnv reads each binding's env from the raw tree, which keeps
// the keys' case (viper lowercases them).
func decodeBindingEnv(raw map[string]any, cfg *Config, d *decoder) {
	bindings, _ := raw["bindings"].([]any)
	for i, item := range bindings {
		m, ok := item.(map[string]any)
		if !ok || i >= len(cfg.Bindings) {
			continue
		}
		if env, ok := m["env"]; ok {
			d.decodeValue(fmt.Sprintf("bindings[%d].env", i), env, reflect.ValueOf(&cfg.Bindings[i].Env).Elem())
		}
	}
}
