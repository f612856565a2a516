// Package binding is what a binding is: which platform channel reaches
// which workspace, who may use it there, what its conversations run with,
// and which cluster host serves it; and the one rule that routes a
// channel to its binding. The config builds bindings, the engine serves
// them, the cluster places them on hosts. It does no I/O.
package binding

import (
	"slices"

	"github.com/cc-connect/cc-connect/spend"
)

// Binding connects a platform channel to a workspace and says who may use it.
type Binding struct {
	Platform   string   // adapter instance name
	Channel    string   // channel/chat id, or "*" for any
	Workspace  string   // normalized with workspace.Normalize at resolution
	AllowUsers []string // empty = nobody; "*" = everyone
	Admins     []string
	// Approvers may answer permission prompts (buttons, !allow, !deny);
	// empty = every allowed user. Only allowed users approve either way.
	Approvers []string
	// RequireMention: nil = default (on in channels, off in DMs).
	RequireMention *bool
	// AllowShell lets this binding's Admins run !sh in the workspace.
	AllowShell bool
	// Worktree gives each conversation its own git worktree of Workspace
	// (the engine makes it); Caps are its spending caps.
	Worktree bool
	Caps     spend.Caps
	// Progress is what a turn shows while it runs: ProgressQuiet,
	// ProgressNormal ("" too) or ProgressVerbose.
	Progress string
	// FollowUps is what a message an allowed user sends while a turn
	// runs does: FollowUpsQueue ("" too) or FollowUpsSteer.
	FollowUps string
	// Setup is this binding's own agent setup and team switches.
	Setup Setup
	// Host is the cluster member that serves this binding, and Standby
	// the members that may take it over ([cluster] only; "" alone).
	Host    string
	Standby []string
}

// Key names a binding as the config writes it: its platform and its
// channel ("*" for any).
type Key struct{ Platform, Channel string }

// String is "platform/channel".
func (k Key) String() string { return k.Platform + "/" + k.Channel }

// Key is b's key.
func (b Binding) Key() Key { return Key{Platform: b.Platform, Channel: b.Channel} }

// Progress levels of a binding: what a turn shows while it runs.
const (
	ProgressQuiet   = "quiet"
	ProgressNormal  = "normal"
	ProgressVerbose = "verbose"
)

// What a message sent while a turn runs does.
const (
	FollowUpsQueue = "queue" // waits, and runs as the next turn
	FollowUpsSteer = "steer" // goes into the running turn
)

// Setup overrides the agent setup and the files limits for one binding's
// conversations, and switches its team features; nil and empty fields keep
// the engine's Options. A reload applies it to each conversation's next
// process (the running one keeps the setup it started with).
type Setup struct {
	Model              *string
	PermissionMode     *string
	AllowedModes       []string
	AppendSystemPrompt *string
	Args               []string          // after Options.Agent.Args
	Env                map[string]string // over Options.Agent.Env
	// MaxProcessesPerWorkspace is the workspace cap this binding's
	// conversations wait for (every binding's processes in the workspace
	// count).
	MaxProcessesPerWorkspace *int
	ArtifactThreshold        *int
	ArtifactQuota            *int64
	AttachmentMaxBytes       *int64
	SendFileMaxBytes         *int64
	// SenderHeader: nil = on in channels, off in direct messages.
	SenderHeader *bool
	// NotifyMention: nil = on.
	NotifyMention *bool
	// Checkpoints: nil = on (CheckpointsOn).
	Checkpoints *bool
}

// Route finds the binding of a platform channel in bs: the one that names
// the channel, else the first that binds its platform with "*". It is the
// one routing rule: config validation, the engine and the cluster call it,
// so that every host and every check routes a message alike.
func Route(bs []Binding, plat, channel string) (Binding, bool) {
	var wildcard *Binding
	for i := range bs {
		b := &bs[i]
		if b.Platform != plat {
			continue
		}
		if b.Channel == channel {
			return *b, true
		}
		if b.Channel == "*" && wildcard == nil {
			wildcard = b
		}
	}
	if wildcard != nil {
		return *wildcard, true
	}
	return Binding{}, false
}

func listed(list []string, id string) bool {
	return id != "" && (slices.Contains(list, "*") || slices.Contains(list, id))
}

// Allowed says whether a user may reach the agent through b.
func (b Binding) Allowed(userID string) bool { return listed(b.AllowUsers, userID) }

// Admin says whether a user may run Admin-only commands through b.
func (b Binding) Admin(userID string) bool { return listed(b.Admins, userID) }

// Approver says whether a user may answer permission prompts through b:
// an allowed user, and one of the approvers when b names any.
func (b Binding) Approver(userID string) bool {
	return b.Allowed(userID) && (len(b.Approvers) == 0 || listed(b.Approvers, userID))
}

// NeedsMention says whether messages in this conversation must mention the
// bot to start a session: by default in channels, not in DMs.
func (b Binding) NeedsMention(dm bool) bool {
	if b.RequireMention != nil {
		return *b.RequireMention && !dm
	}
	return !dm
}

// HeaderOn says whether prompts in a conversation of b start with who
// wrote them.
func (b Binding) HeaderOn(dm bool) bool {
	if b.Setup.SenderHeader != nil {
		return *b.Setup.SenderHeader
	}
	return !dm
}

// NotifyOn says whether b's conversations ring the person who asked.
func (b Binding) NotifyOn() bool { return b.Setup.NotifyMention == nil || *b.Setup.NotifyMention }

// CheckpointsOn says whether the CLI of b's conversations checkpoints the
// files each turn changes, so that a turn can be rewound.
func (b Binding) CheckpointsOn() bool { return b.Setup.Checkpoints == nil || *b.Setup.Checkpoints }
