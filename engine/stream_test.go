package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// pacedStream is a streaming platform whose edits of a streamed reply wait
// until the test lets them go, as an edit waits for a platform's pacing.
type pacedStream struct {
	streamPlatform
	editing chan struct{} // an edit began waiting
	pace    chan struct{} // closed: edits go on
}

func (p pacedStream) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	select {
	case p.editing <- struct{}{}:
	default:
	}
	select {
	case <-p.pace:
	case <-ctx.Done():
		return msgs, ctx.Err()
	}
	return p.streamPlatform.EditReply(ctx, to, msgs, text)
}

// TestStopDoesNotWaitForAPacedEdit: an edit of the streamed reply waiting
// for the platform never holds up !stop: the stream edits off the
// conversation's goroutine, which answers the command while the edit
// still waits.
func TestStopDoesNotWaitForAPacedEdit(t *testing.T) {
	s := newStreamStore("slack")
	paced := pacedStream{editing: make(chan struct{}, 1), pace: make(chan struct{})}
	h := newHarness(t, func(_ *Options, c *harnessConfig) {
		c.adapter = func(rec *fakePlatform) platform.Adapter {
			paced.streamPlatform = s.adapter(rec).(streamPlatform)
			return paced
		}
	})
	h.say("alice", "T1", "[[STREAM]] tell me about the build")
	select {
	case <-paced.editing:
	case <-time.After(waitLimit):
		t.Fatal("the streamed reply was never edited")
	}
	h.say("alice", "T1", "!stop")
	if got := h.rec.waitSend(t, "Stopping the current turn"); !strings.Contains(got.Text, "The session is kept") {
		t.Errorf("stop's notice = %q", got.Text)
	}
	close(paced.pace) // only now: the stop was answered while the edit waited
	h.waitIdle()
}

// TestStreamedReplyMovesBelowAMidTurnPrompt: a permission prompt posted in
// the middle of a streamed reply takes the reply with it (docs/turns.md:
// "the reply so far moves below the prompt"): the messages streamed above
// the prompt are deleted, and the reply lands in messages posted after
// it, where the reader who answered the prompt looks for it. The journal
// forgets the deleted messages as they go.
func TestStreamedReplyMovesBelowAMidTurnPrompt(t *testing.T) {
	s := newStreamStore("slack")
	h := newHarness(t, func(_ *Options, c *harnessConfig) { c.adapter = s.adapter })
	h.say("alice", "T1", "[[DELTA]] [[TOOL:make test]]")
	s.waitFor(t, "the reply's start streamed", func() bool {
		v := s.visible()
		return len(v) == 1 && strings.Contains(v[0], "Let me check.")
	})
	above := map[string]bool{}
	s.mu.Lock()
	for _, m := range s.msgs {
		above[m.id] = true
	}
	s.mu.Unlock()
	h.fa.release(t) // the turn asks now
	ask := waitAsk(t, h)
	s.waitFor(t, "the messages above the prompt deleted", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range s.msgs {
			if above[m.id] && !m.deleted {
				return false
			}
		}
		return true
	})
	// The journal names them no longer: a restart while the prompt waits
	// (a kill -9) must not try to mark deleted messages cut off.
	pollFor(t, "the journal to forget the deleted messages", func() bool {
		for _, en := range h.e.convs.Lookup(t1Key).Pending() {
			for _, p := range en.Streamed {
				if above[p.ID] {
					return false
				}
			}
		}
		return true
	})
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	s.waitFor(t, "the reply", func() bool {
		for _, v := range s.visible() {
			if strings.Contains(v, "ran: make test") {
				return true
			}
		}
		return false
	})
	h.waitIdle()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		switch {
		case above[m.id] && !m.deleted:
			t.Errorf("message %s streamed above the prompt still shows %q", m.id, m.text)
		case !above[m.id] && m.deleted:
			t.Errorf("message %s posted below the prompt was deleted (%q)", m.id, m.text)
		}
	}
}
