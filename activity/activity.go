// Package activity is what happens in conversations, as events that
// observers read: the audit trail (who asked what, which tool ran, who
// approved) and the console's live views. A conversation publishes each
// event once, through one Sink; every observer reads the same events.
//
// Publishing never waits on an observer: Record must not block, so that a
// slow disk or a slow browser never holds a conversation's goroutine.
package activity

import "time"

// Kind says what happened. Kinds are short fixed words: stable in the
// audit file and in filters.
type Kind string

// The kinds a conversation, the engine or the cluster publishes. Live
// kinds (Text, Todos, State) are for watchers only; the audit trail keeps
// the others.
//
// Each is published at the one place it happens: Asked when the message
// joins its conversation's queue (so it always precedes its Started),
// Started and Finished around a turn, Tool, Asking and Answered on the
// turn's events, Shell where a !sh is accepted or refused.
const (
	Asked     Kind = "asked"     // a person's message accepted into a conversation
	Started   Kind = "started"   // a turn started (By: whose message, or the schedule/webhook)
	Finished  Kind = "finished"  // a turn ended (Outcome)
	Text      Kind = "text"      // the reply so far, as it streams (live)
	Tool      Kind = "tool"      // a tool Claude ran (Tool, Input: a bounded summary)
	Todos     Kind = "todos"     // Claude's todo list changed (live)
	State     Kind = "state"     // a conversation's state or queue changed (live)
	Asking    Kind = "asking"    // an approval, question or plan waits (Tool, Input)
	Answered  Kind = "answered"  // someone answered one (By, Choice)
	Shell     Kind = "shell"     // a !sh command (By, Input)
	Scheduled Kind = "scheduled" // a schedule started a run
	Webhook   Kind = "webhook"   // a webhook started a run
	Stopped   Kind = "stopped"   // someone stopped a turn (By)
	Reverted  Kind = "reverted"  // someone reverted a turn's file changes, or was refused (By, Input: the files, Outcome)
	Reloaded  Kind = "reloaded"  // the config was reloaded (Input: what changed)
	Rights    Kind = "rights"    // a binding's rights changed (Input: what changed)
	Lease     Kind = "lease"     // a cluster lease moved (Host)
)

// Event is one thing that happened. Texts carry no secret and those of
// kept events are bounded: the Feed cleans every event before an
// observer sees it.
type Event struct {
	Time         time.Time `json:"time"`
	Kind         Kind      `json:"kind"`
	Binding      string    `json:"binding,omitempty"`      // the binding's name
	Conversation string    `json:"conversation,omitempty"` // the conversation's key
	Platform     string    `json:"platform,omitempty"`
	User         string    `json:"user,omitempty"`      // who it concerns: the asker, the approver (their id)
	UserName     string    `json:"user_name,omitempty"` // the same person's name, when known
	Host         string    `json:"host,omitempty"`
	Tool         string    `json:"tool,omitempty"`
	Input        string    `json:"input,omitempty"`
	Text         string    `json:"text,omitempty"`
	Choice       string    `json:"choice,omitempty"`
	Outcome      string    `json:"outcome,omitempty"`
	// Request names a pending approval, question or plan (Asking,
	// Answered): what an answer from the console refers to. Of a
	// Reverted, the message that asked for it (a press's, RevertPressID),
	// so that the console can wait for the outcome of its own press.
	Request string `json:"request,omitempty"`
	// Todos is Claude's todo list as it is now (Todos).
	Todos []Todo `json:"todos,omitempty"`
	// Questions are Claude's questions (an Asking of AskUserQuestion),
	// for a watcher to offer their options.
	Questions []Question `json:"questions,omitempty"`
}

// Question is one of Claude's questions: its options in order, by label.
type Question struct {
	Header  string   `json:"header,omitempty"`
	Text    string   `json:"text"`
	Options []string `json:"options"`
	Multi   bool     `json:"multi,omitempty"`
}

// Todo is one item of Claude's todo list.
type Todo struct {
	Text   string `json:"text"`
	Status string `json:"status"` // pending, in_progress or completed
}

// Live says whether an event is for watchers only, not for the audit trail.
func (e Event) Live() bool { return e.Kind == Text || e.Kind == Todos || e.Kind == State }

// Sink receives events. Record must not block and must not keep e's
// strings beyond what it copies.
type Sink interface {
	Record(e Event)
}

// Sinks publishes each event to every sink in order.
type Sinks []Sink

// Record implements Sink.
func (s Sinks) Record(e Event) {
	for _, k := range s {
		k.Record(e)
	}
}

// Discard is a Sink that keeps nothing.
type Discard struct{}

// Record implements Sink.
func (Discard) Record(Event) {}

// Or returns s, or Discard when s is nil.
func Or(s Sink) Sink {
	if s == nil {
		return Discard{}
	}
	return s
}
