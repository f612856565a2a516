package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/platform"
)

// TestClusterStopHandsOverAPermissionWait: a cluster host that stops while
// a turn waits for a person's approval keeps the prompt up for the
// shutdown grace, then hands the turn over: nothing is posted as its
// answer (no "Stopped"), its event is neither settled nor acknowledged,
// and the standby, once the stopping host gave its events back and
// released the lease, tells the thread once that it moved, and that the
// request above still waits; the old prompt's button answers it, and the
// standby runs the turn with that answer (cluster_approvals_test.go has
// the other requests and the kill).
func TestClusterStopHandsOverAPermissionWait(t *testing.T) {
	srv := clustertest.Single(t)
	a := startClusterHostWith(t, "a", srv.ClientURL(), func(o *Options, _ *harnessConfig) { o.ShutdownGrace = 300 * time.Millisecond })
	b := startClusterHost(t, "b", srv.ClientURL())
	publish(t, b, "h-1", "T1", "please [[TOOL:make deploy]]")
	old := waitAsk(t, a.h)

	// What the binary does on SIGTERM: no more from the stream, the
	// engine stops within its grace, then the bindings are handed over.
	a.node.Quiesce()
	a.h.stop()
	a.halt()
	if got := a.h.rec.sends("Stopped"); len(got) != 0 {
		t.Errorf("the stopping host answered the cut turn: %q", got)
	}
	if got := a.h.rec.sends("ran: make deploy"); len(got) != 0 {
		t.Errorf("the stopping host ran the command: %q", got)
	}
	if len(a.h.logs.Records("Handing a message to the binding's next holder")) == 0 {
		t.Error("the stopping host did not hand the cut turn over")
	}

	b.h.rec.waitSend(t, "still waits for an answer")
	b.h.press("alice", old.Prompt.RequestID, platform.ChoiceAllow)
	b.h.rec.waitSend(t, "ran: make deploy")
	b.h.waitIdle()
	if n := len(b.h.rec.sends("ran: make deploy")); n != 1 {
		t.Errorf("the standby answered %d times", n)
	}
	if asks := b.h.rec.kinds("ask"); len(asks) != 0 {
		t.Errorf("the standby asked again: %+v", asks)
	}
	if n := len(b.h.rec.sends("moved to host b")); n != 1 {
		t.Errorf("the thread was told %d times that it moved", n)
	}
	for _, r := range b.h.rec.snapshot() {
		if r.Kind == "send" && (strings.Contains(r.Text, "shutting down") || strings.Contains(r.Text, "restarting")) {
			t.Errorf("the thread was told %q", r.Text)
		}
	}
}
