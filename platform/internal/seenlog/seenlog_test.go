package seenlog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

func ids(ms []platform.HistoryMessage) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.MessageID)
	}
	return strings.Join(out, ",")
}

func TestLog(t *testing.T) {
	l := New(2, 3)
	a := platform.Target{Channel: "c", Thread: "1"}
	b := platform.Target{Channel: "c", Thread: "2"}
	for i := 1; i <= 5; i++ {
		l.Add(a, platform.HistoryMessage{MessageID: fmt.Sprint(i)})
	}
	tests := []struct {
		name string
		q    platform.HistoryQuery
		want string
	}{
		{"the latest three are kept", platform.HistoryQuery{Limit: 10}, "3,4,5"},
		{"before a message", platform.HistoryQuery{Before: "5", Limit: 10}, "3,4"},
		{"the limit keeps the latest", platform.HistoryQuery{Before: "5", Limit: 1}, "4"},
		{"before one forgotten: all", platform.HistoryQuery{Before: "1", Limit: 10}, "3,4,5"},
		{"no limit", platform.HistoryQuery{}, ""},
	}
	for _, tt := range tests {
		if got := ids(l.History(a, tt.q)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := ids(l.History(b, platform.HistoryQuery{Limit: 5})); got != "" {
		t.Errorf("another thread: %q", got)
	}
	l.Add(b, platform.HistoryMessage{MessageID: "b1"})
	l.Add(platform.Target{Channel: "d"}, platform.HistoryMessage{MessageID: "d1"})
	if got := ids(l.History(a, platform.HistoryQuery{Limit: 5})); got != "" {
		t.Errorf("the oldest conversation is still remembered: %q", got)
	}
	if got := ids(l.History(b, platform.HistoryQuery{Limit: 5})); got != "b1" {
		t.Errorf("b: %q", got)
	}
	l.Edit(b, "b1", "edited")
	l.Edit(b, "nope", "x")
	if got := l.History(b, platform.HistoryQuery{Limit: 5}); len(got) != 1 || got[0].Text != "edited" {
		t.Errorf("after an edit: %+v", got)
	}
}

func TestAddOnceSkipsAnIDAlreadyHeld(t *testing.T) {
	l := New(4, 10)
	conv := platform.Target{Channel: "C1"}
	l.AddOnce(conv, platform.HistoryMessage{ID: "1", Text: "a"})
	l.AddOnce(conv, platform.HistoryMessage{ID: "1", Text: "a again"})
	l.AddOnce(conv, platform.HistoryMessage{Text: "no id"})
	l.AddOnce(conv, platform.HistoryMessage{Text: "no id"})
	got := l.History(conv, platform.HistoryQuery{Limit: 10})
	if len(got) != 3 || got[0].Text != "a" {
		t.Errorf("history %+v, want a and both messages without an id", got)
	}
}
