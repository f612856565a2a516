package activity

import (
	"strings"
	"sync"
	"testing"
)

type recorder struct {
	mu  sync.Mutex
	got []Event
}

func (r *recorder) Record(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, e)
}

// TestFeedRedactsAndBounds: every observer gets the event with each text
// redacted, and a kept event's texts bounded (after the redaction, so
// that a cut never leaves half a secret); live events keep their length.
func TestFeedRedactsAndBounds(t *testing.T) {
	const secret = "xoxb-CANARY"
	f := &Feed{Redact: func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }}
	var a, b recorder
	f.Subscribe(&a)
	cancel := f.Subscribe(&b)

	long := strings.Repeat("é", MaxText) + secret
	f.Record(Event{Kind: Tool, User: secret, UserName: "x" + secret, Tool: secret, Input: "run " + secret, Text: secret + long,
		Choice: secret, Outcome: secret, Host: secret, Binding: secret, Conversation: secret, Platform: secret})
	f.Record(Event{Kind: Text, Text: long})
	cancel()
	f.Record(Event{Kind: Asked, Text: "only a"})

	if len(a.got) != 3 || len(b.got) != 2 {
		t.Fatalf("a got %d events, b %d; want 3 and 2 (b cancelled before the last)", len(a.got), len(b.got))
	}
	kept := a.got[0]
	for _, s := range []string{kept.User, kept.UserName, kept.Tool, kept.Input, kept.Text, kept.Choice, kept.Outcome,
		kept.Host, kept.Binding, kept.Conversation, kept.Platform} {
		if strings.Contains(s, "CANARY") {
			t.Errorf("a text keeps the secret: %q", s)
		}
		if len(s) > MaxText {
			t.Errorf("a kept text is %d bytes, over %d", len(s), MaxText)
		}
	}
	if !strings.HasPrefix(kept.Text, "[redacted]") || !strings.HasSuffix(kept.Text, "…") || !strings.Contains(kept.Input, "run [redacted]") {
		t.Errorf("kept event %+v", kept)
	}
	if live := a.got[1]; live.Text != strings.Repeat("é", MaxText)+"[redacted]" {
		t.Errorf("live text cut or not redacted: %d bytes", len(live.Text))
	}
}

// TestFeedCleansQuestions: a question's header, text and options are
// redacted and bounded like the event's other texts.
func TestFeedCleansQuestions(t *testing.T) {
	const secret = "xoxb-CANARY"
	f := &Feed{Redact: func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }}
	var a recorder
	f.Subscribe(&a)
	q := Question{Header: secret, Text: strings.Repeat("q", 2*MaxText) + secret, Options: []string{"use " + secret, "no"}, Multi: true}
	f.Record(Event{Kind: Asking, Questions: []Question{q}})
	got := a.got[0].Questions[0]
	if strings.Contains(got.Header+got.Text+strings.Join(got.Options, " "), "CANARY") || len(got.Text) > MaxText ||
		got.Options[0] != "use [redacted]" || got.Options[1] != "no" || !got.Multi {
		t.Errorf("question %+v", got)
	}
	if q.Options[0] != "use "+secret {
		t.Error("cleaning changed the publisher's question")
	}
}

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer text", 10, "a longe…"},
		{"ééééé", 7, "éé…"}, // never half a rune
	} {
		if got := Bound(tc.in, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("Bound(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
