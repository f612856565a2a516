// Package ingress carries normalized inbound chat events between the hosts
// of a cc-connect cluster over NATS JetStream. Whichever host a platform
// event reaches publishes it (Publisher) to the ingress stream, on the
// subject of its binding and conversation ending in its own name, with the
// platform's id as Nats-Msg-Id so that the stream drops a redelivery
// another host already published; the host that holds the binding's lease
// consumes it (Consumer) in order per conversation, drops what its
// publisher may not send, and hands the rest to the engine, which
// journals it. It owns the wire form of an event and the delivery rules;
// it decides nothing about what an event means.
package ingress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/format"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/trigger"
)

// The wire form's version is the project's one format version (package
// format): an event carries the format its publisher writes, and a
// consumer that reads an older one reads it, a newer one it refuses.

// Errors callers branch on.
var (
	// ErrMalformed: the event is not one this build can accept (bad
	// fields, or not JSON). It is never delivered; a consumer terminates
	// it and logs why.
	ErrMalformed = errors.New("malformed ingress event")
	// ErrNewerVersion: written by a newer cc-connect (it wraps
	// format.ErrNewer too). Never terminated: the consumer stops serving
	// the binding and hands it over, leaving the event for a host that
	// reads it (docs/cluster.md, Rolling upgrades).
	ErrNewerVersion = errors.New("ingress event of a newer version")
	// ErrForged: the event claims what its publisher may not send (another
	// publisher's name, a binding it may not publish for). Terminated and
	// logged: a host's credentials may be in other hands.
	ErrForged = errors.New("ingress event its publisher may not send")
)

// Kind is what an event carries.
type Kind string

// Event kinds. Chat commands (!stop, !btw, !new, …) are messages: their
// text is what the owner's engine parses, and travelling as messages keeps
// them in order with the rest of their conversation.
const (
	KindMessage Kind = "message"
	KindAction  Kind = "action" // a button press on a permission prompt
	// KindRun is a run without a person (a schedule's, a webhook's):
	// whichever host it started on, the binding's owner journals it.
	KindRun Kind = "run"
)

// Event is one normalized inbound event on the wire.
type Event struct {
	V    int  `json:"v"`
	Kind Kind `json:"kind"`
	// Binding is the [[bindings]] entry the event was routed by, as the
	// config spells it: the subject and the consumer follow from it.
	Binding Binding `json:"binding"`
	// Origin is the host that received the event from the platform.
	Origin string `json:"origin"`
	// Published is the origin's clock when it published, for latency
	// figures only.
	Published time.Time `json:"published"`
	Message   *Message  `json:"message,omitempty"`
	Action    *Action   `json:"action,omitempty"`
	Run       *Run      `json:"run,omitempty"`
}

// Run is trigger.Run on the wire. Target is where its conversation lives
// (no message id: the run has none on the platform yet).
type Run struct {
	ID           string       `json:"id"`
	Kind         trigger.Kind `json:"kind"`
	Name         string       `json:"name,omitempty"`
	Target       Target       `json:"target"`
	Conversation string       `json:"conversation,omitempty"`
	Header       string       `json:"header,omitempty"`
	Prompt       string       `json:"prompt"`
	UserID       string       `json:"user_id"`
	UserName     string       `json:"user_name,omitempty"`
	At           time.Time    `json:"at"`
}

// TriggerRun is the run as the trigger package has it.
func (r *Run) TriggerRun() trigger.Run {
	return trigger.Run{ID: r.ID, Kind: r.Kind, Name: r.Name, Platform: r.Target.Platform, Channel: r.Target.Channel,
		Thread: r.Target.Thread, Conversation: r.Conversation, Header: r.Header, Prompt: r.Prompt,
		UserID: r.UserID, UserName: r.UserName, At: r.At}
}

// NewRun makes the event of a run routed by binding b.
func NewRun(b Binding, r trigger.Run) (Event, error) {
	ev := Event{V: format.Written(), Kind: KindRun, Binding: b, Run: &Run{ID: r.ID, Kind: r.Kind, Name: r.Name,
		Target:       Target{Platform: r.Platform, Channel: r.Channel, Thread: r.Thread},
		Conversation: r.Conversation, Header: r.Header, Prompt: r.Prompt, UserID: r.UserID, UserName: r.UserName, At: r.At}}
	return ev, ev.Validate()
}

// Binding names a [[bindings]] entry.
type Binding struct {
	Platform string `json:"platform"`
	Channel  string `json:"channel"` // as in the config: an id or "*"
}

// Names is the binding as the names package spells it.
func (b Binding) Names() names.Binding {
	return names.Binding{Platform: b.Platform, Channel: b.Channel}
}

// Target is platform.Target on the wire.
type Target struct {
	Platform  string `json:"platform"`
	Channel   string `json:"channel"`
	Thread    string `json:"thread,omitempty"`
	MessageID string `json:"message_id,omitempty"`
}

func wireTarget(t platform.Target) Target {
	return Target{Platform: t.Platform, Channel: t.Channel, Thread: t.Thread, MessageID: t.MessageID}
}

// Platform is the target as the platform package has it.
func (t Target) ToPlatform() platform.Target {
	return platform.Target{Platform: t.Platform, Channel: t.Channel, Thread: t.Thread, MessageID: t.MessageID}
}

// Message is platform.Message on the wire.
type Message struct {
	ID          string       `json:"id"`
	Target      Target       `json:"target"`
	UserID      string       `json:"user_id"`
	UserName    string       `json:"user_name,omitempty"`
	Text        string       `json:"text"`
	IsDM        bool         `json:"is_dm,omitempty"`
	Mentioned   bool         `json:"mentioned,omitempty"`
	IsBot       bool         `json:"is_bot,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	Received    time.Time    `json:"received"`
	// Seq is the platform's order of the message in its conversation
	// (platform.Message.Seq): the owner runs waiting messages by it.
	Seq uint64 `json:"seq,omitempty"`
}

// Attachment is a file of a message, by reference: the owner fetches it
// from the platform itself (with the same token), so only the reference
// travels. Ref is the adapter's own, and must hold no secret (a Telegram
// file_id, not a download URL with the bot token in it).
type Attachment struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Mime string `json:"mime,omitempty"`
	Ref  string `json:"ref"`
}

// Action is platform.Action on the wire. ID is the platform's id of the
// press (Slack's action_ts with the user, a Discord interaction id, a
// Telegram callback query id): its Nats-Msg-Id.
type Action struct {
	ID        string          `json:"id,omitempty"`
	Target    Target          `json:"target"`
	UserID    string          `json:"user_id"`
	UserName  string          `json:"user_name,omitempty"`
	RequestID string          `json:"request_id"`
	Choice    platform.Choice `json:"choice"`
	// Question and Options: a press on a question prompt.
	Question int                `json:"question,omitempty"`
	Options  platform.OptionSet `json:"options,omitempty"`
}

// NewMessage makes the event of a chat message routed by binding b. refs
// are the attachments' references, one per m.Attachments entry, in order.
func NewMessage(b Binding, m platform.Message, refs []string) (Event, error) {
	if len(refs) != len(m.Attachments) {
		return Event{}, fmt.Errorf("%w: %d attachments but %d references", ErrMalformed, len(m.Attachments), len(refs))
	}
	wm := &Message{ID: m.ID, Target: wireTarget(m.Target), UserID: m.UserID, UserName: m.UserName,
		Text: m.Text, IsDM: m.IsDM, Mentioned: m.Mentioned, IsBot: m.IsBot, Received: m.Received, Seq: m.Seq}
	for i, a := range m.Attachments {
		wm.Attachments = append(wm.Attachments, Attachment{Name: a.Name, Size: a.Size, Mime: a.Mime, Ref: refs[i]})
	}
	ev := Event{V: format.Written(), Kind: KindMessage, Binding: b, Message: wm}
	return ev, ev.Validate()
}

// NewAction makes the event of a button press; id is the platform's id of
// the press ("" if it has none: then a redelivery is not deduplicated).
func NewAction(b Binding, id string, a platform.Action) (Event, error) {
	ev := Event{V: format.Written(), Kind: KindAction, Binding: b, Action: &Action{ID: id, Target: wireTarget(a.Target),
		UserID: a.UserID, UserName: a.UserName, RequestID: a.RequestID, Choice: a.Choice, Question: a.Question, Options: a.Options}}
	return ev, ev.Validate()
}

// Target is where the event belongs: its conversation.
func (ev Event) Target() Target {
	if ev.Action != nil {
		return ev.Action.Target
	}
	if ev.Run != nil {
		return ev.Run.Target
	}
	if ev.Message != nil {
		return ev.Message.Target
	}
	return Target{}
}

// Conversation is the event's conversation token: channel and thread.
func (ev Event) Conversation() string {
	t := ev.Target()
	return names.Conversation(t.Channel, t.Thread)
}

// MsgID is the Nats-Msg-Id: the platform instance, the kind and the
// platform's own id, so that the same platform event published by two
// hosts is stored once. "" when the platform gave no id.
func (ev Event) MsgID() string {
	var id string
	switch {
	case ev.Message != nil:
		id = ev.Message.ID
	case ev.Action != nil:
		id = ev.Action.ID
	case ev.Run != nil:
		id = ev.Run.ID
	}
	if id == "" {
		return ""
	}
	return string(ev.Kind) + ":" + ev.Binding.Platform + ":" + id
}

// Validate checks what a consumer relies on.
func (ev Event) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
	switch {
	case format.Check("an event of the stream", ev.V) != nil:
		return fmt.Errorf("%w: %w", ErrNewerVersion, format.Check(fmt.Sprintf("event %s of the stream", ev.MsgID()), ev.V))
	case ev.V < 1:
		return bad("version %d", ev.V)
	case ev.Binding.Platform == "" || ev.Binding.Channel == "":
		return bad("no binding")
	}
	switch ev.Kind {
	case KindMessage:
		if ev.Message == nil || ev.Action != nil || ev.Run != nil {
			return bad("a message event must carry a message only")
		}
	case KindAction:
		if ev.Action == nil || ev.Message != nil || ev.Run != nil {
			return bad("an action event must carry an action only")
		}
		if ev.Action.RequestID == "" {
			return bad("an action without a request id")
		}
	case KindRun:
		if ev.Run == nil || ev.Message != nil || ev.Action != nil {
			return bad("a run event must carry a run only")
		}
		if ev.Run.ID == "" {
			return bad("a run without an id") // its id is what dedupes it
		}
	default:
		return bad("kind %q", ev.Kind)
	}
	t := ev.Target()
	if t.Platform != ev.Binding.Platform {
		return bad("target platform %q is not the binding's %q", t.Platform, ev.Binding.Platform)
	}
	if t.Channel == "" {
		return bad("no channel")
	}
	if ev.Binding.Channel != "*" && ev.Binding.Channel != t.Channel {
		return bad("channel %q is not the binding's %q", t.Channel, ev.Binding.Channel)
	}
	if len(ev.Conversation()) > 2*names.MaxTokenLen || len(ev.Binding.Names().Token()) > names.MaxTokenLen {
		return bad("ids too long for a subject")
	}
	if strings.ContainsAny(ev.MsgID(), "\r\n\x00") {
		return bad("an id with control characters")
	}
	return nil
}

// Decode reads an event off the wire.
func Decode(data []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return ev, ev.Validate()
}

// Opener fetches an attachment by its reference: the adapter's, on the
// host that consumes the event.
type Opener func(ctx context.Context, ref string) (io.ReadCloser, error)

// PlatformMessage is the message as the engine takes it. Attachments open
// through open with the reference each carries; with a nil open they have
// no Open, and the caller must not fetch them.
func (m *Message) PlatformMessage(open Opener) platform.Message {
	pm := platform.Message{ID: m.ID, Target: m.Target.ToPlatform(), UserID: m.UserID, UserName: m.UserName,
		Text: m.Text, IsDM: m.IsDM, Mentioned: m.Mentioned, IsBot: m.IsBot, Received: m.Received, Seq: m.Seq}
	for _, a := range m.Attachments {
		pa := platform.Attachment{Name: a.Name, Size: a.Size, Mime: a.Mime, Ref: a.Ref}
		if open != nil {
			ref := a.Ref
			pa.Open = func(ctx context.Context) (io.ReadCloser, error) { return open(ctx, ref) }
		}
		pm.Attachments = append(pm.Attachments, pa)
	}
	return pm
}

// PlatformAction is the action as the engine takes it.
func (a *Action) PlatformAction() platform.Action {
	return platform.Action{Target: a.Target.ToPlatform(), UserID: a.UserID, UserName: a.UserName,
		RequestID: a.RequestID, Choice: a.Choice, Question: a.Question, Options: a.Options}
}
