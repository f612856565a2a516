package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
)

// longReply is Markdown that splits into three Slack messages.
func longReply() string {
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, "Section %d\n\n%s\n\n", i, strings.Repeat("word ", MessageLimit/5-10))
	}
	return b.String()
}

// TestSendReplyTagsEveryPart: each part of a reply carries metadata naming
// the key and the part; Landed hears of each in order.
func TestSendReplyTagsEveryPart(t *testing.T) {
	e := startEnv(t)
	to := platform.Target{Platform: e.a.Name(), Channel: "C1", Thread: "1700000001.000100"}
	e.f.AddMessage("C1", "1700000001.000100", "U1", "<@UBOT> write a lot")
	var landed []string
	res, err := e.a.SendReply(context.Background(), to, longReply(), platform.Reply{Key: "turn-1", After: "1700000001.000100",
		Landed: func(part, parts int) { landed = append(landed, fmt.Sprintf("%d/%d", part, parts)) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Parts != 3 || res.Posted != 3 || res.Found != 0 || strings.Join(landed, " ") != "0/3 1/3 2/3" {
		t.Fatalf("result %+v, landed %q", res, landed)
	}
	for i, c := range e.f.Succeeded("chat.postMessage") {
		want := fmt.Sprintf(`{"event_type":"cc_connect_reply","event_payload":{"key":"turn-1","part":%d,"parts":3}}`, i)
		if c.Form["metadata"] != want || c.Form["thread_ts"] != to.Thread {
			t.Errorf("part %d posted with metadata %s, thread %q; want %s", i, c.Form["metadata"], c.Form["thread_ts"], want)
		}
	}
	if posts := e.f.Posts(); res.Last.MessageID != posts[len(posts)-1].TS {
		t.Errorf("Last = %+v, want the last part", res.Last)
	}
}

// TestSendReplyAgainPostsOnlyWhatIsMissing is the kill after a post: the
// reply (or some of its parts) landed before the restart; posting it again
// with Again finds those parts in the thread (with include_all_metadata)
// and posts only the others. Parts of another reply, or another bot's, do
// not count.
func TestSendReplyAgainPostsOnlyWhatIsMissing(t *testing.T) {
	tests := []struct {
		name     string
		thread   bool
		before   int // parts posted before the "restart"
		done     []int
		posted   int
		found    int
		wantPost int // chat.postMessage calls of the second SendReply
		distinct int // parts in the conversation at the end, each once
	}{
		{"all parts landed, in a thread", true, 3, nil, 0, 3, 0, 3},
		{"two of three landed, in a thread", true, 2, nil, 1, 2, 1, 3},
		{"none landed", true, 0, nil, 3, 0, 3, 3},
		// The journal is trusted: a part it names is not posted again.
		{"the journal names a part the lookup misses", true, 1, []int{0, 1}, 1, 1, 1, 2},
		{"all parts landed, in a DM", false, 3, nil, 0, 3, 0, 3},
		{"one landed, in a DM", false, 1, nil, 2, 1, 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEnv(t)
			const asked = "1700000001.000100"
			to := platform.Target{Platform: e.a.Name(), Channel: "C1", Thread: asked}
			if !tt.thread {
				to = platform.Target{Platform: e.a.Name(), Channel: "D1"}
			}
			e.f.AddMessage(to.Channel, asked, "U1", "<@UBOT> write a lot")
			// Noise: another reply's part and an untagged post.
			if _, err := e.a.SendReply(context.Background(), to, "an earlier answer", platform.Reply{Key: "turn-0"}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.a.Send(context.Background(), to, "a notice"); err != nil {
				t.Fatal(err)
			}
			// The first attempt, killed after tt.before parts: it posts
			// those and no more.
			if _, err := e.a.SendReply(context.Background(), to, longReply(), platform.Reply{Key: "turn-1", After: asked,
				Done: func(part int) bool { return part >= tt.before }}); err != nil {
				t.Fatal(err)
			}

			calls := len(e.f.Calls("chat.postMessage"))
			done := func(part int) bool {
				for _, d := range tt.done {
					if d == part {
						return true
					}
				}
				return false
			}
			res, err := e.a.SendReply(context.Background(), to, longReply(), platform.Reply{Key: "turn-1", After: asked, Again: true, Done: done})
			if err != nil {
				t.Fatal(err)
			}
			if res.Parts != 3 || res.Posted != tt.posted || res.Found != tt.found {
				t.Errorf("again: %+v, want %d posted and %d found", res, tt.posted, tt.found)
			}
			if n := len(e.f.Calls("chat.postMessage")) - calls; n != tt.wantPost {
				t.Errorf("again posted %d parts, want %d", n, tt.wantPost)
			}
			// Every part is in the conversation exactly once.
			count := map[string]int{}
			for _, p := range e.f.Posts() {
				if strings.HasPrefix(p.Text, "*Section") || strings.HasPrefix(p.Text, "Section") {
					count[p.Text[:12]]++
				}
			}
			for part, n := range count {
				if n != 1 {
					t.Errorf("part %q is posted %d times", part, n)
				}
			}
			if len(count) != tt.distinct {
				t.Errorf("%d distinct parts in the conversation, want %d: %v", len(count), tt.distinct, count)
			}
		})
	}
}

// TestSendReplyAgainWhenTheLookupFails: when the conversation cannot be
// read, the reply is posted (a double is better than a loss) and the
// failure is logged.
func TestSendReplyAgainWhenTheLookupFails(t *testing.T) {
	e := startEnv(t)
	to := platform.Target{Platform: e.a.Name(), Channel: "C1", Thread: "1700000001.000100"}
	e.f.AddMessage("C1", to.Thread, "U1", "hi")
	e.f.Fail("conversations.replies", "missing_scope")
	res, err := e.a.SendReply(context.Background(), to, "the answer", platform.Reply{Key: "turn-1", Again: true})
	if err != nil || res.Posted != 1 {
		t.Fatalf("SendReply = %+v, %v", res, err)
	}
	e.logs.waitFor(t, "Looking for a reply posted before the restart failed")
}

// TestSendReplyAgainBeforeRun: after a restart, recovery may post before
// the adapter connected and learnt who it is; the lookup asks Slack
// (auth.test) and still finds the bot's own parts.
func TestSendReplyAgainBeforeRun(t *testing.T) {
	e := startEnv(t)
	to := platform.Target{Platform: e.a.Name(), Channel: "C1", Thread: "1700000001.000100"}
	e.f.AddMessage("C1", to.Thread, "U1", "<@UBOT> hi")
	if _, err := e.a.SendReply(context.Background(), to, "the answer", platform.Reply{Key: "turn-1", After: to.Thread}); err != nil {
		t.Fatal(err)
	}
	fresh, _, _ := newAdapter(t, testConfig(e.f)) // never run
	res, err := fresh.SendReply(context.Background(), to, "the answer", platform.Reply{Key: "turn-1", After: to.Thread, Again: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Found != 1 || res.Posted != 0 {
		t.Fatalf("again before Run: %+v, want the part found", res)
	}
	if n := slackPostsWith(e.f, "the answer"); n != 1 {
		t.Errorf("the reply is in the thread %d times, want once", n)
	}
}

func slackPostsWith(f *fakeslack.Server, text string) int {
	n := 0
	for _, p := range f.Posts() {
		if p.Text == text {
			n++
		}
	}
	return n
}
