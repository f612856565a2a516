package conv

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// feed is a conversation's side of the activity feed (package activity):
// it says where and when an event happened, so that each place that
// publishes says only what happened. Each event is published once, where
// it happens; the feed redacts and bounds its texts.
type feed struct {
	sink    activity.Sink // never nil
	now     func() time.Time
	key     string
	to      platform.Target
	binding func() binding.Binding // in force now
}

// record publishes e as this conversation's.
func (f feed) record(e activity.Event) {
	if f.sink == nil {
		return
	}
	e.Time = f.now()
	e.Conversation, e.Platform = f.key, f.to.Platform
	if f.binding != nil {
		e.Binding = BindingName(f.binding())
	}
	f.sink.Record(e)
}

// asked publishes a message (or a queued command, or a run) joining the
// conversation's queue: the journal's queued hook, so that it precedes
// the turn's start.
func (f feed) asked(it workItem) {
	m := it.msg
	e := activity.Event{Kind: activity.Asked, User: m.UserID, UserName: m.UserName, Text: m.Text}
	if len(m.Attachments) > 0 {
		names := make([]string, len(m.Attachments))
		for i, a := range m.Attachments {
			names[i] = a.Name
		}
		e.Input = "files: " + strings.Join(names, ", ")
	}
	f.record(e)
}

// BindingName names a binding as the config writes it: platform/channel.
func BindingName(b binding.Binding) string {
	if b.Platform == "" {
		return ""
	}
	return b.Platform + "/" + b.Channel
}

// inputSummary is a tool's input as one line for the trail: its fields,
// sorted, with string values as they are (so that the feed's redaction
// finds a secret in them) and others as compact JSON. The feed bounds it.
// questionsOf are the questions of an AskUserQuestion request as the
// activity feed carries them (the console offers their options); nil for
// another tool, or questions the chat cannot show as such either.
func questionsOf(tool string, input json.RawMessage) []activity.Question {
	if tool != "AskUserQuestion" {
		return nil
	}
	qs, err := newQuestionSet(input)
	if err != nil {
		return nil
	}
	out := make([]activity.Question, len(qs.qs))
	for i, q := range qs.qs {
		out[i] = activity.Question{Header: q.Header, Text: q.Question, Multi: q.MultiSelect}
		for _, o := range q.Options {
			out[i].Options = append(out[i].Options, o.Label)
		}
	}
	return out
}

func inputSummary(raw json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return string(raw)
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := in[k].(string)
		if !ok {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(in[k])
			v = strings.TrimSpace(b.String())
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// todosOf is a checklist as the activity's todo list, for the console's
// live view: an item in progress by its active form.
func todosOf(items []render.TodoItem) []activity.Todo {
	out := make([]activity.Todo, len(items))
	for i, it := range items {
		out[i] = activity.Todo{Text: it.Text, Status: it.Status}
		if it.Status == "in_progress" && it.Active != "" {
			out[i].Text = it.Active
		}
	}
	return out
}
