package replykit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

// fakeWire splits on "|" and logs each call as "post <index>/<of> <key>
// <text>" or "edit <id> <final> <key> <text>". Posts get ids m1, m2, …
type fakeWire struct {
	calls    []string
	n        int
	failPost int // the part index whose post fails; -1: none
	failEdit string
}

var errWire = errors.New("wire down")

func newWire() *fakeWire { return &fakeWire{failPost: -1} }

func (w *fakeWire) Split(text string) []string { return strings.Split(text, "|") }

func (w *fakeWire) Post(_ context.Context, to platform.Target, p Part) (platform.Target, error) {
	w.calls = append(w.calls, fmt.Sprintf("post %d/%d %s %s", p.Index, p.Of, p.Key, p.Text))
	if p.Index == w.failPost {
		return platform.Target{}, errWire
	}
	w.n++
	return platform.Target{Platform: "p", Channel: to.Channel, Thread: to.Thread, MessageID: fmt.Sprintf("m%d", w.n)}, nil
}

func (w *fakeWire) Edit(_ context.Context, msg platform.Target, p Part, final bool) error {
	w.calls = append(w.calls, fmt.Sprintf("edit %s %t %s %s", msg.MessageID, final, p.Key, p.Text))
	if msg.MessageID == w.failEdit {
		return errWire
	}
	return nil
}

func (w *fakeWire) ShownKey(msg platform.Target) string { return msg.Channel + ":" + msg.MessageID }

// findingWire is a fakeWire whose platform finds tagged parts.
type findingWire struct {
	*fakeWire
	found map[int]string
	err   error
	asked []string
}

func (w *findingWire) FindReply(_ context.Context, _ platform.Target, key, after string) (map[int]string, error) {
	w.asked = append(w.asked, key+" after "+after)
	return w.found, w.err
}

var to = platform.Target{Platform: "p", Channel: "C", Thread: "T"}

func msgs(ids ...string) []platform.Target {
	var out []platform.Target
	for _, id := range ids {
		out = append(out, platform.Target{Platform: "p", Channel: "C", Thread: "T", MessageID: id})
	}
	return out
}

func ids(ts []platform.Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.MessageID)
	}
	return out
}

func TestSendReply(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		reply     platform.Reply
		find      map[int]string // nil: the wire cannot find
		findErr   error
		failPost  int
		wantCalls []string
		want      platform.ReplyResult
		landed    []int
		wantErr   error
	}{
		{name: "split and tagged", text: "a|b|c", reply: platform.Reply{Key: "k"}, failPost: -1,
			wantCalls: []string{"post 0/3 k a", "post 1/3 k b", "post 2/3 k c"},
			want:      platform.ReplyResult{Last: msgs("m3")[0], Parts: 3, Posted: 3}, landed: []int{0, 1, 2}},
		{name: "parts done are skipped", text: "a|b|c", failPost: -1,
			reply:     platform.Reply{Key: "k", Done: func(i int) bool { return i != 1 }},
			wantCalls: []string{"post 1/3 k b"},
			want:      platform.ReplyResult{Last: msgs("m1")[0], Parts: 3, Posted: 1}, landed: []int{1}},
		{name: "found parts are not posted again", text: "a|b|c", failPost: -1,
			reply: platform.Reply{Key: "k", After: "q", Again: true}, find: map[int]string{0: "x0", 2: "x2"},
			wantCalls: []string{"post 1/3 k b"},
			want:      platform.ReplyResult{Last: msgs("x2")[0], Parts: 3, Posted: 1, Found: 2}, landed: []int{1}},
		{name: "found only after a restart", text: "a|b", failPost: -1,
			reply: platform.Reply{Key: "k"}, find: map[int]string{0: "x0"},
			wantCalls: []string{"post 0/2 k a", "post 1/2 k b"},
			want:      platform.ReplyResult{Last: msgs("m2")[0], Parts: 2, Posted: 2}, landed: []int{0, 1}},
		{name: "a failed lookup posts what it did not find", text: "a|b|c", failPost: -1,
			reply: platform.Reply{Key: "k", Again: true, Done: func(i int) bool { return i == 2 }},
			find:  map[int]string{0: "x0"}, findErr: errWire,
			wantCalls: []string{"post 1/3 k b"},
			want:      platform.ReplyResult{Last: msgs("m1")[0], Parts: 3, Posted: 1, Found: 1}, landed: []int{1}},
		{name: "a failed post keeps what landed", text: "a|b|c", failPost: 1, reply: platform.Reply{Key: "k"},
			wantCalls: []string{"post 0/3 k a", "post 1/3 k b"},
			want:      platform.ReplyResult{Last: msgs("m1")[0], Parts: 3, Posted: 1}, landed: []int{0}, wantErr: errWire},
		{name: "empty", text: " \n", failPost: -1, want: platform.ReplyResult{Last: msgs("")[0]}, wantErr: ErrEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fw := newWire()
			fw.failPost = tt.failPost
			var w Wire = fw
			if tt.find != nil {
				w = &findingWire{fakeWire: fw, found: tt.find, err: tt.findErr}
			}
			var landed []int
			tt.reply.Landed = func(part, parts int) {
				if parts != tt.want.Parts {
					t.Errorf("Landed(%d, %d): %d parts", part, parts, tt.want.Parts)
				}
				landed = append(landed, part)
			}
			res, err := New("p", w, nil).SendReply(context.Background(), to, tt.text, tt.reply)
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if res != tt.want {
				t.Errorf("result %+v, want %+v", res, tt.want)
			}
			if !slices.Equal(fw.calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", fw.calls, tt.wantCalls)
			}
			if !slices.Equal(landed, tt.landed) {
				t.Errorf("landed %v, want %v", landed, tt.landed)
			}
		})
	}
}

// TestEditReply: parts a message shows already are left alone, changed
// ones edited (not final, untagged), and the rest posted after them.
func TestEditReply(t *testing.T) {
	tests := []struct {
		name      string
		before    string   // what an earlier EditReply made m1, m2 show ("": they are new to the kit)
		msgs      []string // the messages the reply holds
		text      string
		wantCalls []string
		want      []string
		wantErr   bool
	}{
		{name: "first text posts", msgs: nil, text: "a|b",
			wantCalls: []string{"post 0/2  a", "post 1/2  b"}, want: []string{"m1", "m2"}},
		{name: "unknown messages are edited", msgs: []string{"x1"}, text: "a|b",
			wantCalls: []string{"edit x1 false  a", "post 1/2  b"}, want: []string{"x1", "m1"}},
		{name: "unchanged parts are not edited", before: "a|b", msgs: []string{"m1", "m2"}, text: "a|b2",
			wantCalls: []string{"edit m2 false  b2"}, want: []string{"m1", "m2"}},
		{name: "nothing changed", before: "a|b", msgs: []string{"m1", "m2"}, text: "a|b",
			wantCalls: nil, want: []string{"m1", "m2"}},
		{name: "grown", before: "a", msgs: []string{"m1"}, text: "a|b|c",
			wantCalls: []string{"post 1/3  b", "post 2/3  c"}, want: []string{"m1", "m2", "m3"}},
		{name: "shrunk: the extra message is the caller's", before: "a|b", msgs: []string{"m1", "m2"}, text: "a2",
			wantCalls: []string{"edit m1 false  a2"}, want: []string{"m1"}},
		{name: "empty text changes nothing", before: "a", msgs: []string{"m1"}, text: "  ",
			wantCalls: nil, want: []string{"m1"}},
		{name: "a failed edit returns what holds a part", before: "a|b", msgs: []string{"m1", "bad"}, text: "a|b2",
			wantCalls: []string{"edit bad false  b2"}, want: []string{"m1"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWire()
			w.failEdit = "bad"
			k := New("p", w, nil)
			if tt.before != "" {
				if _, err := k.EditReply(context.Background(), to, nil, tt.before); err != nil {
					t.Fatal(err)
				}
				w.calls = nil
			}
			got, err := k.EditReply(context.Background(), to, msgs(tt.msgs...), tt.text)
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v", err)
			}
			if !slices.Equal(w.calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", w.calls, tt.wantCalls)
			}
			if !slices.Equal(ids(got), tt.want) {
				t.Errorf("messages %v, want %v", ids(got), tt.want)
			}
		})
	}
}

// TestFinishReply: every message that holds a part is edited for good
// (final, tagged), whatever it shows; parts found tagged beyond the
// messages are edited too, the rest posted as SendReply does.
func TestFinishReply(t *testing.T) {
	tests := []struct {
		name      string
		msgs      []string
		text      string
		reply     platform.Reply
		find      map[int]string
		wantCalls []string
		want      []string
		landed    []int
	}{
		{name: "edits even what the stream showed", msgs: []string{"s1"}, text: "a|b", reply: platform.Reply{Key: "k"},
			wantCalls: []string{"edit s1 true k a", "post 1/2 k b"}, want: []string{"s1", "m1"}, landed: []int{1}},
		{name: "parts done beyond the messages are skipped", msgs: []string{"s1"}, text: "a|b|c",
			reply:     platform.Reply{Key: "k", Done: func(i int) bool { return i == 1 }},
			wantCalls: []string{"edit s1 true k a", "post 2/3 k c"}, want: []string{"s1", "m1"}, landed: []int{2}},
		{name: "a message in msgs is edited though done", msgs: []string{"s1", "s2"}, text: "a|b",
			reply:     platform.Reply{Key: "k", Done: func(int) bool { return true }},
			wantCalls: []string{"edit s1 true k a", "edit s2 true k b"}, want: []string{"s1", "s2"}},
		{name: "found parts are edited, not posted", msgs: []string{"s1"}, text: "a|b|c",
			reply: platform.Reply{Key: "k", After: "q", Again: true}, find: map[int]string{1: "x1"},
			wantCalls: []string{"edit s1 true k a", "edit x1 true k b", "post 2/3 k c"}, want: []string{"s1", "x1", "m1"}, landed: []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fw := newWire()
			var w Wire = fw
			if tt.find != nil {
				w = &findingWire{fakeWire: fw, found: tt.find}
			}
			k := New("p", w, nil)
			// The stream showed the first part already: the finish edits it
			// all the same (recovery applies it again).
			if len(tt.msgs) > 0 {
				k.shown.Put(w.ShownKey(msgs(tt.msgs[0])[0]), "a")
			}
			var landed []int
			tt.reply.Landed = func(part, _ int) { landed = append(landed, part) }
			got, err := k.FinishReply(context.Background(), to, msgs(tt.msgs...), tt.text, tt.reply)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(fw.calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", fw.calls, tt.wantCalls)
			}
			if !slices.Equal(ids(got), tt.want) {
				t.Errorf("messages %v, want %v", ids(got), tt.want)
			}
			if !slices.Equal(landed, tt.landed) {
				t.Errorf("landed %v, want %v", landed, tt.landed)
			}
		})
	}
	if _, err := New("p", newWire(), nil).FinishReply(context.Background(), to, msgs("m1"), "", platform.Reply{}); !errors.Is(err, ErrEmpty) {
		t.Errorf("FinishReply of empty text = %v, want ErrEmpty", err)
	}
}

// TestFinishedTextIsRemembered: what a post or a final edit left is what
// the next EditReply compares with, until the message is forgotten.
func TestFinishedTextIsRemembered(t *testing.T) {
	w := newWire()
	k := New("p", w, nil)
	ctx := context.Background()
	if _, err := k.FinishReply(ctx, to, msgs("x1"), "a|b", platform.Reply{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	w.calls = nil
	if _, err := k.EditReply(ctx, to, msgs("x1", "m1"), "a|b"); err != nil || len(w.calls) != 0 {
		t.Fatalf("EditReply of what the messages show: calls %q, err %v", w.calls, err)
	}
	k.Forget(msgs("m1")[0])
	if _, err := k.EditReply(ctx, to, msgs("x1", "m1"), "a|b"); err != nil || !slices.Equal(w.calls, []string{"edit m1 false  b"}) {
		t.Errorf("EditReply after Forget: calls %q, err %v", w.calls, err)
	}
}

// TestLookupOnlyWhenAsked: the platform is searched only for a reply that
// may have been posted before (Again) and has a key.
func TestLookupOnlyWhenAsked(t *testing.T) {
	for _, r := range []platform.Reply{{Key: "k"}, {Again: true}, {Key: "k", After: "q", Again: true}} {
		w := &findingWire{fakeWire: newWire()}
		if _, err := New("p", w, nil).SendReply(context.Background(), to, "a", r); err != nil {
			t.Fatal(err)
		}
		want := r.Again && r.Key != ""
		if (len(w.asked) > 0) != want || want && w.asked[0] != "k after q" {
			t.Errorf("Reply %+v: lookups %q", r, w.asked)
		}
	}
}
