package engine

import "testing"

// While Claude waits on a question or a plan, a plain reply in the thread
// answers it only when its sender may answer (conv's gate, the approvers
// in force): anyone else's reply is a message of its own. The flag is set
// by hand, as a pending question sets it.
func TestOnlyAnApproversReplyAnswers(t *testing.T) {
	h := approversHarness(t, true)
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	s := h.e.convs.Lookup("fake/C1/T1")
	s.AwaitReply(true)
	h.say("alice", "T1", "blue, says a user who may not approve")
	h.rec.waitSend(t, "echo: blue, says a user who may not approve")
	h.waitIdle()
	if n := len(h.logs.Records("A reply came after its question or plan was settled; it runs as a turn")); n != 0 {
		t.Fatalf("a reply from someone who may not approve was taken for an answer (%d)", n)
	}
	// bob is an approver: his reply is taken for the answer (none is
	// pending any more, so it runs as a turn after all).
	h.say("bob", "T1", "green")
	h.logs.WaitRecords(t, waitLimit, "A reply came after its question or plan was settled; it runs as a turn", 1)
	s.AwaitReply(false)
	h.rec.waitSend(t, "echo: green")
}
