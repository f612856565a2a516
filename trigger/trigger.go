// Package trigger defines work that starts without a person: a run that a
// schedule or a webhook hands to the engine, and the small interface the
// engine implements to take it. It owns the shape of that hand-over and
// nothing else: it starts nothing, stores nothing and does not import the
// engine, so that schedule/ and webhook/ stay testable without one.
package trigger

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Kind says what started a run.
type Kind string

// The kinds of run.
const (
	KindSchedule Kind = "schedule"
	KindWebhook  Kind = "webhook"
)

// Run is one piece of work started without a person, on its way into a
// conversation.
type Run struct {
	// ID is the run's identity, stable across restarts and redeliveries:
	// the engine journals the run under it as its message id, so that
	// submitting the same run twice runs it once (see Submitter).
	ID   string
	Kind Kind
	// Name is the schedule's or the hook's name, for logs and headers.
	Name string

	// Platform and Channel are where the run's conversation lives: a
	// binding routes them to a workspace like any message.
	Platform string
	Channel  string
	// Thread, when set, is an existing thread the run continues in; ""
	// means the conversation is the thread under the run's header (on a
	// platform without threads, the channel).
	Thread string
	// Conversation groups runs into one conversation: runs with the same
	// value continue the conversation the first of them started (its
	// thread). A run that starts a new thread each time has its ID here.
	Conversation string

	// Header is posted in the channel (or the thread) before the run, so
	// that people see what started it ("Scheduled: nightly-triage"); the
	// reply threads under it.
	Header string
	// Prompt is the text given to Claude, as one user message.
	Prompt string
	// UserID and UserName stand for the run in the conversation, in logs
	// and in spending ledgers ("schedule:nightly-triage").
	UserID   string
	UserName string

	// At is when the run was due: the scheduled instant, or when the
	// webhook's request arrived.
	At time.Time
}

// RunUser is the user ID that stands for the runs of kind named name
// ("schedule:nightly-triage"). Its ":" sets it apart from every platform's
// user IDs, so IsRunUser can tell a run from a person.
func RunUser(kind Kind, name string) string { return string(kind) + ":" + name }

// IsRunUser reports whether id stands for a run (RunUser) rather than a
// person: nobody to mention, nobody to ask.
func IsRunUser(id string) bool {
	for _, k := range []Kind{KindSchedule, KindWebhook} {
		if strings.HasPrefix(id, string(k)+":") {
			return true
		}
	}
	return false
}

// Submitter takes runs into the engine. The engine implements it; schedule/
// and webhook/ call it.
type Submitter interface {
	// Submit journals r durably (the same fsynced journal as a chat
	// message) and returns nil only then; posting the header and running
	// the turn follow on the conversation's own goroutine. It is
	// idempotent on r.ID for at least the engine's seen window: a run
	// already journaled (pending, running or done) returns ErrDuplicate
	// and runs no second time. A run that can never be taken (no binding
	// routes its channel, a spending cap is reached) returns an error
	// wrapping ErrRefused; any other error means it was not journaled and
	// may be submitted again later.
	Submit(ctx context.Context, r Run) error
	// Working reports whether the run journaled under id is still queued
	// or its turn still running (false once it reached a durable end, or
	// for an id the engine does not know).
	Working(id string) bool
}

// Errors a Submitter returns, for callers to branch on.
var (
	// ErrDuplicate: a run with this ID was journaled before. Treat it as
	// accepted; it is not run again.
	ErrDuplicate = errors.New("run already journaled")
	// ErrRefused: the run was refused for good (the error says why). Do
	// not submit it again.
	ErrRefused = errors.New("run refused")
)
