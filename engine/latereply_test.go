package engine

import (
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

// A thread reply taken for the answer to a question or a plan that was
// settled before the session read it (a button pressed first, the CLI
// withdrawing it, the turn ending) runs as the next turn: the sender's
// words are not dropped with a "not waiting" notice. The flag is set by
// hand here, as a question settled between the accept and the read
// leaves it.
func TestLateReplyRunsAsATurn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running bool // a turn runs when the reply is read
	}{
		{"idle", false},
		{"during a turn", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.say("alice", "T1", "hello")
			h.rec.waitSend(t, "echo: hello")
			h.waitIdle()
			if tc.running {
				h.say("alice", "T1", "think [[HANG]]")
				h.waitTurnStarts(t, 2)
			}
			s := h.e.convs.Lookup("fake/C1/T1")
			s.AwaitReply(true)
			late := h.message("alice", "T1", "and the colour is green")
			h.deliver(late)
			h.logs.WaitRecords(t, waitLimit, "A reply came after its question or plan was settled; it runs as a turn", 1)
			s.AwaitReply(false)
			if tc.running {
				h.rec.waitSend(t, "Queued (position 1)")
				h.say("alice", "T1", "!stop")
			}
			h.rec.waitSend(t, "echo: and the colour is green")
			if got := h.rec.sends("did not reach Claude"); len(got) != 0 {
				t.Errorf("the reply was dropped with a notice: %q", got)
			}
			// A redelivery of the same platform message is still a duplicate.
			if res := h.deliver(late); res.Status != platform.Duplicate {
				t.Errorf("a redelivery of the late reply: %+v, want a duplicate", res)
			}
			h.waitIdle()
			if n := len(h.rec.sends("echo: and the colour is green")); n != 1 {
				t.Errorf("the late reply ran %d times, want 1", n)
			}
		})
	}
}
