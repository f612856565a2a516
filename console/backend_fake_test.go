package console

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/activity"
)

// fakeBackend is a Backend over a fixed set of conversations and rights,
// for the handlers' tests (the binary's tests run the engine's).
type fakeBackend struct {
	mu      sync.Mutex
	convs   []Conversation
	allowed map[string]bool // user id → may see
	approve map[string]bool
	answers []string
	stops   []string
	// changes are the conversations' last turns; reverts the presses of
	// their Revert buttons ("user key turn"), each told to record as the
	// engine would publish its outcome (none when silent).
	changes map[string]TurnChanges
	reverts []string
	record  func(activity.Event)
	silent  bool
}

func (f *fakeBackend) Conversations(who Identity) ([]Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.allowed[who.UserID] {
		return nil, nil
	}
	out := make([]Conversation, len(f.convs))
	for i, c := range f.convs {
		c.Rights.Approve = f.approve[who.UserID]
		out[i] = c
	}
	return out, nil
}

func (f *fakeBackend) Conversation(who Identity, key string) (Conversation, bool) {
	cs, _ := f.Conversations(who)
	for _, c := range cs {
		if c.Key == key {
			return c, true
		}
	}
	return Conversation{}, false
}

func (f *fakeBackend) Answer(_ context.Context, who Identity, key string, a Answer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := who.UserID + " " + key + " " + a.Request + " " + a.Choice
	if a.Choice == "answer" {
		s += fmt.Sprintf(" q%d %v", a.Question, a.Options)
	}
	f.answers = append(f.answers, s)
	return nil
}

func (f *fakeBackend) Stop(_ context.Context, who Identity, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, who.UserID+" "+key)
	return nil
}

func (f *fakeBackend) Schedules(_ context.Context, who Identity) ([]Schedule, error) {
	if !f.allowed[who.UserID] {
		return nil, nil
	}
	return []Schedule{{Name: "nightly<b>", Cron: "0 3 * * *", Binding: "slack/C1", Admin: f.approve[who.UserID],
		LastError: "the run was refused: <i>over the cap</i>", LastErrorAt: time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)}}, nil
}

func (f *fakeBackend) SetPaused(_ context.Context, who Identity, name string, paused bool) error {
	if !f.approve[who.UserID] {
		return ErrNotAllowed
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, who.UserID+" pause "+name)
	return nil
}

func (f *fakeBackend) Spend(who Identity) []SpendRow {
	if !f.allowed[who.UserID] {
		return nil
	}
	return []SpendRow{{Binding: "slack/C1", Day: 1.5, Month: 12}, {Binding: "slack/C1", User: "UUSER", Day: 0.25, Month: 2}}
}

func (f *fakeBackend) Audit(_ context.Context, who Identity, af AuditFilter) ([]AuditRow, error) {
	if !f.allowed[who.UserID] {
		return nil, nil
	}
	return []AuditRow{{Kind: "asked", Conversation: convKey, User: af.User, Input: "<script>x</script>"}}, nil
}

func (f *fakeBackend) SpendByDay(who Identity) []SpendDay {
	if !f.allowed[who.UserID] {
		return nil
	}
	return []SpendDay{{Day: "2026-01-01", Binding: "slack/C1", USD: 3.25}, {Day: "2025-12-31", Binding: "slack/C1", User: "<b>UUSER</b>", USD: 0.5}}
}

func (f *fakeBackend) Changes(who Identity, key string) (TurnChanges, bool) {
	if _, ok := f.Conversation(who, key); !ok {
		return TurnChanges{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.changes[key]
	return c, ok
}

// Revert records the press and publishes its outcome as the engine does:
// refused with the turn's refusal, else reverted (and refused after).
func (f *fakeBackend) Revert(_ context.Context, who Identity, key, turn string) (string, error) {
	f.mu.Lock()
	f.reverts = append(f.reverts, who.UserID+" "+key+" "+turn)
	id := fmt.Sprintf("revert-press:%d", len(f.reverts))
	c := f.changes[key]
	e := activity.Event{Kind: activity.Reverted, Conversation: key, User: who.UserID, Request: id}
	if c.Refusal != "" {
		e.Outcome = "refused: " + c.Refusal
	} else {
		e.Outcome, e.Input = "reverted", strings.Join(c.Files, ", ")
		c.Refusal = "The last turn was already reverted (by " + who.UserID + ", 2026-01-01 12:00 UTC): it cannot be reverted twice."
		f.changes[key] = c
	}
	record, silent := f.record, f.silent
	f.mu.Unlock()
	if !silent {
		record(e)
	}
	return id, nil
}
