package activity

import (
	"sync"
	"unicode/utf8"
)

// MaxText bounds each text of an event kept by the audit trail (Input,
// Text, Outcome…): a tool's input or a message is summarized, not copied
// whole. Live events (Text, Todos, State) keep their length: a watcher
// shows the reply as it is written.
const MaxText = 1000

// Feed is the one stream of events: conversations, the engine and the
// cluster publish to it, and every observer (the audit trail, a console)
// subscribes to it. Before an event reaches anyone, Feed replaces every
// secret in its texts (Redact) and bounds the texts of kept events, so
// that no observer has to and none can forget to. Record does not block
// beyond its subscribers' Record, which must not block either.
type Feed struct {
	// Redact returns a text without the config's secrets; nil keeps
	// texts as they are (tests). Set it before the first event.
	Redact func(string) string

	mu   sync.RWMutex // guards subs
	subs []*sub
}

type sub struct{ s Sink }

// Subscribe adds s to the feed's observers until the returned func is
// called.
func (f *Feed) Subscribe(s Sink) (cancel func()) {
	n := &sub{s: s}
	f.mu.Lock()
	f.subs = append(f.subs, n)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.subs {
			if x == n {
				f.subs = append(f.subs[:i:i], f.subs[i+1:]...)
				return
			}
		}
	}
}

// Record implements Sink: e, cleaned, goes to every subscriber.
func (f *Feed) Record(e Event) {
	if f == nil {
		return
	}
	e = f.clean(e)
	f.mu.RLock()
	subs := f.subs
	f.mu.RUnlock()
	for _, s := range subs {
		s.s.Record(e)
	}
}

// clean redacts every text of e and bounds those of a kept event.
func (f *Feed) clean(e Event) Event {
	live := e.Live()
	for _, p := range []*string{&e.Binding, &e.Conversation, &e.Platform, &e.User, &e.UserName, &e.Host,
		&e.Tool, &e.Input, &e.Text, &e.Choice, &e.Outcome} {
		if *p == "" {
			continue
		}
		if f.Redact != nil {
			*p = f.Redact(*p)
		}
		if !live {
			*p = Bound(*p, MaxText)
		}
	}
	if f.Redact != nil && len(e.Todos) > 0 {
		todos := make([]Todo, len(e.Todos))
		for i, t := range e.Todos {
			todos[i] = Todo{Text: f.Redact(t.Text), Status: t.Status}
		}
		e.Todos = todos
	}
	if len(e.Questions) > 0 {
		clean := func(s string) string {
			if f.Redact != nil {
				s = f.Redact(s)
			}
			return Bound(s, MaxText)
		}
		qs := make([]Question, len(e.Questions))
		for i, q := range e.Questions {
			qs[i] = Question{Header: clean(q.Header), Text: clean(q.Text), Multi: q.Multi, Options: make([]string, len(q.Options))}
			for j, o := range q.Options {
				qs[i].Options[j] = clean(o)
			}
		}
		e.Questions = qs
	}
	return e
}

// Bound cuts s to at most n bytes on a rune boundary, marking the cut
// with "…".
func Bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
