package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestClusterFailoverAnswersOnce: replies in a thread without a mention,
// as teams write them, across two failovers. Each host that takes the
// thread over reads it back from Slack (its root when it has no
// conversation for the thread, the messages before the first one after
// its start when it has): what another host already answered must not
// run again.
func TestClusterFailoverAnswersOnce(t *testing.T) {
	t.Parallel()
	nc := clustertest.StartCluster(t, 3)
	f := fakeslack.New(t)
	f.SetSpread(35)
	f.SetRedeliverAfter(3 * time.Second)
	f.SetRetries(5)
	// A dead host's envelope is redelivered to a live one after 3 s, and
	// a busy machine adds to each failover: the waits allow for both.
	f.SetWaitLimit(time.Minute)
	a := newClusterMember(t, "a", nc.URLs(), f)
	b := newClusterMember(t, "b", nc.URLs(), f)
	c := newClusterMember(t, "c", nc.URLs(), f)
	a.start(t)
	a.p.waitErr(t, "Serving the binding")
	b.start(t)
	c.start(t)
	f.WaitConn(t, 3)
	kill := func(m *clusterMember) {
		t.Helper()
		if err := m.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-m.p.exited
	}
	reply := func(ts, text string) {
		t.Helper()
		f.WaitEventAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", ts, "U1", text, map[string]any{"thread_ts": root})))
	}

	x, y := f.DeliverMention(t, fakeslack.MsgEvent("C1", root, "U1", "<@UBOT> the root", nil))
	f.WaitEventAck(t, x)
	f.WaitEventAck(t, y)
	waitEchoes(t, f, root, []string{"the root"})
	// The root's context replicated (after its reply): the standby finds
	// it, in a's workspace, which is not b's. The host that answered the
	// root replicates it: a, unless a starved renewal moved the binding to
	// b before a answered (see tenureStart); then b ran the root itself.
	const replicated = "Replicated the conversation's context"
	f.Wait(t, "the root's turn replicated", func() bool {
		return strings.Contains(a.p.stderr.String()+b.p.stderr.String(), replicated)
	})
	ownerAnswered := strings.Contains(a.p.stderr.String(), replicated)

	// The owner dies; the standby, with no conversation for the thread,
	// reads its root back: a answered it.
	kill(a)
	reply("1700000020.000100", "first reply")
	waitEchoes(t, f, root, []string{"the root", "first reply"})

	// a comes back (as a standby now: b keeps the lease); b dies. a knows
	// the thread from before its kill and reads it back for what a dead
	// instance took: b answered the first reply. b's replicated context,
	// newer than a's record, ran in b's workspace, which is not a's: a
	// cannot restore it and goes on in its own session, unannounced
	// (docs/cluster.md, "Moved conversations").
	a.start(t)
	a.p.waitErr(t, "Joined the cluster")
	f.WaitConn(t, 3)
	kill(b)
	reply("1700000030.000100", "second reply")
	waitEchoes(t, f, root, []string{"the root", "first reply", "second reply"})
	// A last reply, answered after whatever a redelivery could still run.
	reply("1700000040.000100", "third reply")
	waitEchoes(t, f, root, []string{"the root", "first reply", "second reply", "third reply"})

	switch n := b.turns(t, "the root"); {
	case n != 0 && ownerAnswered:
		t.Errorf("the standby ran the thread's root, which the owner had answered, %d times", n)
	case n > 1:
		t.Errorf("the standby ran the thread's root %d times", n)
	case n == 1:
		b.ranOnlyServing(t, n, "the root, before the owner answered it", a)
	}
	if n := a.turns(t, "first reply"); n != 0 {
		t.Errorf("the restarted owner ran the first reply, which the standby had answered, %d times", n)
	}
	// cluster status: the thread, served by a (b is dead), its context
	// on a alone.
	cmd := exec.Command(buildBinary(t), "--config", c.config, "cluster", "status")
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cluster status: %v", err)
	}
	stdout, line := string(out), ""
	for _, ln := range strings.Split(stdout, "\n") {
		if strings.Contains(ln, "thread "+root) {
			line = ln
		}
	}
	for _, want := range []string{"chat/*", "C1 thread " + root, "served by a", "last answered on a", "context replicated: yes"} {
		if !strings.Contains(line, want) {
			t.Errorf("cluster status shows the thread as %q, without %q:\n%s", line, want, stdout)
		}
	}
	// Each host's workspace is its own folder (the config's relative
	// path): the replicated context cannot be used, and the thread is told
	// why. If b took the root over before a answered it, there was no
	// context to replicate at that move: the thread is told it starts a
	// new session, in other words.
	fresh, why := 0, 0
	for _, p := range f.Posts() {
		if p.ThreadTS == root && p.BotID != "" && !strings.Contains(p.Text, "echo:") {
			t.Logf("notice in the thread: %q", p.Text)
		}
		if p.ThreadTS == root && strings.Contains(p.Text, "It continues in a new Claude session") {
			fresh++
			if strings.Contains(p.Text, "It continues in a new Claude session, because it ran in the workspace ") {
				why++
			}
		}
	}
	switch {
	case fresh == 0:
		t.Error("the thread was not told that the standby, whose workspace is at another path, started a new session")
	case why == 0 && ownerAnswered:
		t.Error("the thread was not told why the standby, whose workspace is at another path, started a new session")
	}
}

const root = "1700000010.000100"

// turns counts the turns this host's fake claude ran for message text: a
// prompt that is text, after the thread's earlier messages given as
// context when the conversation starts in a thread.
func (m *clusterMember) turns(t *testing.T, text string) int {
	n := 0
	for _, p := range m.prompts(t) {
		if _, after, ok := strings.Cut(p, "End of the earlier messages.\n\n"); ok {
			p = after
		}
		if p == text {
			n++
		}
	}
	return n
}
