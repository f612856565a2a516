package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestClusterKilledHolderPromptAnsweredByStandby: the holder of a Slack
// binding posts a permission prompt and is killed -9 with it pending.
// The standby that takes the binding does not ask again: it tells the
// thread the request above still waits, the Allow button of the old
// prompt (pressed after the kill, so it reaches the standby through the
// stream) answers it, and the standby's fake claude runs the tool once,
// its reply posted once. Before requests travelled with the binding, the
// standby posted a second prompt and the old one's button was "no longer
// pending".
func TestClusterKilledHolderPromptAnsweredByStandby(t *testing.T) {
	t.Parallel()
	nc := clustertest.StartCluster(t, 3)
	f := fakeslack.New(t)
	f.SetSpread(35)
	f.SetWaitLimit(time.Minute)
	a, b, c := newClusterMember(t, "a", nc.URLs(), f), newClusterMember(t, "b", nc.URLs(), f), newClusterMember(t, "c", nc.URLs(), f)
	a.start(t)
	a.p.waitErr(t, "Serving the binding")
	b.start(t)
	c.start(t)
	f.WaitConn(t, 3)

	const ts = "1700000040.000100"
	f.WaitEventAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> please [[TOOL:make deploy]]", nil)))
	prompt := f.WaitPost(t, "the owner's permission prompt", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && len(m.Buttons()) > 0
	})
	var allow string
	for _, bt := range prompt.Buttons() {
		if isAllow(bt.Text) {
			allow = bt.ActionID
		}
	}
	if allow == "" {
		t.Fatalf("no Allow button on the prompt: %+v", prompt.Buttons())
	}
	// The host that holds the binding is killed: a, unless a starved
	// renewal moved the binding to b (see tenureStart) and b asks now;
	// then b is killed, and a, the owner, takes the binding back once b's
	// lease expired. Either way the next holder answers, once.
	held, next := a, b
	if h := holder(a, b); h == b {
		t.Log("b holds the binding (a starved renewal moved it): b is killed, a takes over")
		held, next = b, a
	}
	ranBefore := next.ran(t, "make deploy") // a turn the move cut
	if err := held.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-held.p.exited

	f.WaitPost(t, "the standby saying the request still waits", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "still waits for an answer")
	})
	f.WaitAck(t, f.Press(t, prompt, allow, "U1"))
	f.WaitPost(t, "the standby's reply once the tool ran", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "(fake) ran: make deploy")
	})
	// The outcome: on the old prompt, or, when the kill came before the
	// owner kept where its prompt is, as a message below it.
	f.Wait(t, "the answer shown in the thread", func() bool {
		for _, m := range f.Posts() {
			if m.ThreadTS == ts && strings.Contains(strings.ToLower(m.Text+m.Blocks), "allowed once") {
				return true
			}
		}
		return false
	})
	if n := next.ran(t, "make deploy") - ranBefore; n != 1 {
		t.Errorf("the next holder's claude was sent the message %d times after the kill, want once", n)
	}
	if got := postsIn(f, ts, "(fake) ran: make deploy"); len(got) != 1 {
		t.Errorf("the reply was posted %d times, want once: %q", len(got), got)
	}
	prompts := 0
	for _, m := range f.Posts() {
		if m.ThreadTS == ts && m.TS != prompt.TS && len(m.Buttons()) > 0 {
			prompts++
		}
	}
	if prompts != 0 {
		t.Errorf("the standby posted %d new prompts", prompts)
	}
	if got := postsIn(f, ts, "no longer pending"); len(got) != 0 {
		t.Errorf("the press on the old prompt was refused: %q", got)
	}
	if got := next.logsAbout("Adopted the requests a handed-over turn waited on"); len(got) != 1 {
		t.Errorf("the next holder adopted the request %d times: %q", len(got), got)
	}
}
