package conv

import (
	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/engine/render"
)

// publisher stamps a conversation's events (activity) with when, which
// conversation and which binding, and hands them to the Set's sink. Each
// event is published once, where it happens; Record never blocks, so a
// publish costs the conversation's goroutine nothing it waits on.
type publisher struct {
	e   *Set
	key string
	tr  *turnRunner // the binding in force, read at each publish
}

func (p publisher) publish(ev activity.Event) {
	if p.e == nil {
		return // a part built alone in a test
	}
	ev.Time = p.e.now()
	ev.Conversation = p.key
	if p.tr != nil && p.tr.binding != nil {
		b := p.tr.binding()
		ev.Binding, ev.Platform = b.Key().String(), b.Platform
	}
	p.e.activity.Record(ev)
}

// todosOf is a checklist as the activity's todo list.
func todosOf(items []render.TodoItem) []activity.Todo {
	out := make([]activity.Todo, len(items))
	for i, it := range items {
		out[i] = activity.Todo{Text: orDefault(it.Active, it.Text), Status: it.Status}
		if it.Status != "in_progress" {
			out[i].Text = it.Text
		}
	}
	return out
}
