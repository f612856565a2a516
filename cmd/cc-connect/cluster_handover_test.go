package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/format"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testbin"
)

// A stop hands over, it does not drop (docs/cluster.md): two binaries on a
// 3-node JetStream cluster, a owning the binding and b standing by, with a
// lease_ttl of 30 s, so that a standby that waited for the lease to expire
// would take more than half a minute, and a grace of 4 s.

// handoverTTL is the lease TTL of these tests: long, so that a takeover
// by expiry cannot pass for a hand-over.
const handoverTTL = 30 * time.Second

// newHandoverMember is newClusterMember with handoverTTL and a short grace.
func newHandoverMember(t *testing.T, name string, urls []string, f *fakeslack.Server) *clusterMember {
	t.Helper()
	m := newClusterMember(t, name, urls, f)
	data, err := os.ReadFile(m.config)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(data), `lease_ttl = "3s"`, fmt.Sprintf("lease_ttl = %q", handoverTTL), 1)
	s = strings.Replace(s, `shutdown_grace = "5s"`, `shutdown_grace = "4s"`, 1)
	if err := os.WriteFile(m.config, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return m
}

// startBin starts this host with the binary at bin.
func (m *clusterMember) startBin(t *testing.T, bin string) {
	t.Helper()
	m.p = startBinaryPath(t, bin, m.env, "run", "--config", m.config)
	m.runs = append(m.runs, m.p)
}

// stop sends SIGTERM and waits for the exit, which must be clean.
func (m *clusterMember) stop(t *testing.T) {
	t.Helper()
	if err := m.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := m.p.exitCode(t); code != 0 {
		t.Fatalf("%s exited %d after SIGTERM", m.name, code)
	}
}

// drain runs `cluster drain` of this host with its own config (its NATS
// user may write only its own drain key) and returns what it printed.
func (m *clusterMember) drain(t *testing.T, bin string) string {
	t.Helper()
	p := startBinaryPath(t, bin, m.env, "cluster", "drain", m.name, "--config", m.config, "--timeout", "60s")
	var out []string
	for ln := range p.out {
		out = append(out, ln)
	}
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("cluster drain %s exited %d: %s\n%s", m.name, code, strings.Join(out, "\n"), p.stderr.String())
	}
	return strings.Join(out, "\n")
}

// postsIn are the bot's posts in thread ts that contain sub.
func postsIn(f *fakeslack.Server, ts, sub string) []string {
	var out []string
	for _, m := range f.Posts() {
		if m.ThreadTS == ts && m.BotID != "" && strings.Contains(m.Text, sub) {
			out = append(out, m.Text)
		}
	}
	return out
}

// leaseAcquired finds, in a log line, the token of a lease taken and what
// the key held when it was (kvlease.Took).
var leaseAcquired = regexp.MustCompile(`msg="Lease acquired".* token=(\d+) .*took=(\w+)`)

// tookTenure says what the binding's lease held when this run took it for
// its n-th tenure (kvlease.Took: "handed_over", "expired", ...).
func (p *process) tookTenure(t *testing.T, n int) string {
	t.Helper()
	log := p.stderr.String()
	tenures := tenureStart.FindAllStringSubmatch(log, -1)
	if len(tenures) < n {
		t.Fatalf("%d tenures in the log, want #%d", len(tenures), n)
	}
	for _, m := range leaseAcquired.FindAllStringSubmatch(log, -1) {
		if m[1] == tenures[n-1][1] {
			return m[2]
		}
	}
	t.Fatalf("no lease acquired with the token %s of tenure #%d", tenures[n-1][1], n)
	return ""
}

// checkToldOnce: thread ts shows no "Stopped" notice of a shutdown, and at
// most one notice that it moved.
func checkToldOnce(t *testing.T, f *fakeslack.Server, ts string) {
	t.Helper()
	if got := postsIn(f, ts, "shutting down"); len(got) != 0 {
		t.Errorf("thread %s was told of the shutdown: %q", ts, got)
	}
	if got := postsIn(f, ts, "restarting"); len(got) != 0 {
		t.Errorf("thread %s was told of a restart: %q", ts, got)
	}
	if got := postsIn(f, ts, "moved to host"); len(got) > 1 {
		t.Errorf("thread %s was told %d times that it moved: %q", ts, len(got), got)
	}
}

func TestClusterStopHandsOver(t *testing.T) {
	t.Parallel()
	nc := clustertest.StartCluster(t, 3)
	urls := nc.URLs()
	f := fakeslack.New(t)
	f.SetSpread(35)
	bin := buildBinary(t)
	a := newHandoverMember(t, "a", urls, f)
	b := newHandoverMember(t, "b", urls, f)
	b.setRelease(t, true) // [[SLOW]] turns hang on a until released, end at once on b
	top := t              // the hosts outlive each subtest
	a.start(t)
	a.p.waitErr(t, "Serving the binding")
	b.start(t)
	f.WaitConn(t, 2)

	// takeover waits for who to serve the binding (its n-th tenure), as
	// long as the test may run, and checks from its log that it was handed
	// the lease: one taken after the holder's lease expired would say so
	// (took=expired), however soon, and the wait has no bound of its own
	// for a starved host to overrun.
	takeover := func(t *testing.T, who *clusterMember, n int) {
		t.Helper()
		who.p.waitErrCount(t, "Serving the binding", n)
		if took := who.p.tookTenure(t, n); took != "handed_over" {
			t.Errorf("%s took the lease of its tenure #%d as %q, not handed over: it waited out a TTL", who.name, n, took)
		}
	}

	const ts1 = "1700000101.000100"
	t.Run("a turn that finishes within the grace is answered by the stopping owner; the standby serves at once", func(t *testing.T) {
		f.DeliverMention(t, fakeslack.MsgEvent("C1", ts1, "U1", "<@UBOT> [[SLOW]] finishes in the grace", nil))
		waitFile(t, "the owner running the turn", func() bool { return a.ran(t, "finishes in the grace") == 1 })
		if err := a.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		a.p.waitErr(t, "Shutting down: finishing running turns")
		a.setRelease(t, true)
		if code := a.p.exitCode(t); code != 0 {
			t.Fatalf("a exited %d", code)
		}
		waitEchoes(t, f, ts1, []string{"[chunk "})
		takeover(t, b, 1)
		// A new thread: a reply in ts1 would meet the standby's read-back of
		// a thread root it never ran, another matter.
		const ts2 = "1700000101.000200"
		f.DeliverMention(t, fakeslack.MsgEvent("C1", ts2, "U1", "<@UBOT> after the stop", nil))
		waitEchoes(t, f, ts2, []string{"after the stop"})
		if n := a.ran(t, "after the stop"); n != 0 {
			t.Errorf("the stopped owner ran %d turns", n)
		}
		if n := b.ran(t, "finishes in the grace"); n != 0 {
			t.Errorf("the standby ran the finished turn %d times", n)
		}
		if got := a.logsAbout("Lease released"); len(got) == 0 || !strings.Contains(got[0], "hand_over=true") {
			t.Errorf("a did not hand its lease over: %q", got)
		}
		checkToldOnce(t, f, ts1)
	})

	t.Run("a drain moves the binding to the host that may take it and waits until it serves", func(t *testing.T) {
		a.setRelease(t, false)
		conns := f.Conns()
		a.start(top) // rejoins: b holds the binding, a does not take it back
		a.p.waitErr(t, "Joined the cluster")
		f.WaitConn(t, conns+1)
		out := b.drain(t, bin)
		if !strings.Contains(out, "served by a") || !strings.Contains(out, "b is drained") {
			t.Errorf("cluster drain b printed %q", out)
		}
		takeover(t, a, 1)
		const ts = "1700000102.000100"
		f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> after the drain", nil))
		waitEchoes(t, f, ts, []string{"after the drain"})
		if n := b.ran(t, "after the drain"); n != 0 {
			t.Errorf("the drained host ran %d turns", n)
		}
		// b rejoins after its "upgrade".
		b.stop(t)
		conns = f.Conns()
		b.start(top)
		b.p.waitErr(t, "Joined the cluster")
		f.WaitConn(t, conns+1)
	})

	t.Run("a turn the grace cuts is not answered or settled; the standby runs it, told once", func(t *testing.T) {
		const ts = "1700000103.000100"
		f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> [[SLOW]] cut by the grace", nil))
		waitFile(t, "the owner running the turn", func() bool { return a.ran(t, "cut by the grace") == 1 })
		if err := a.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := a.p.exitCode(t); code != 0 {
			t.Fatalf("a exited %d", code)
		}
		takeover(t, b, 1)
		waitEchoes(t, f, ts, []string{"[chunk "})
		if n := b.ran(t, "cut by the grace"); n != 1 {
			t.Errorf("the standby ran the cut turn %d times, want 1", n)
		}
		if got := a.logsAbout("Handing a message to the binding's next holder"); len(got) == 0 {
			t.Error("a did not hand the cut turn over")
		}
		if got := postsIn(f, ts, "moved to host b"); len(got) != 1 {
			t.Errorf("the thread was told %d times that it moved: %q", len(got), got)
		}
		checkToldOnce(t, f, ts)
		f.Deliver(t, fakeslack.MsgEvent("C1", "1700000103.000200", "U1", "after the cut", map[string]any{"thread_ts": ts}))
		waitEchoes(t, f, ts, []string{"[chunk ", "after the cut"})
	})
}

// TestClusterRollingUpgrade: the upgrade procedure of docs/cluster.md
// with two builds of this source, the second linked to write the next
// format (format.next). One host at a time: drain, upgrade, rejoin. An old
// build that finds a host of the newer format up refuses to start, with
// the message, and takes no lease; nothing is lost or answered twice.
func TestClusterRollingUpgrade(t *testing.T) {
	t.Parallel()
	nc := clustertest.StartCluster(t, 3)
	urls := nc.URLs()
	f := fakeslack.New(t)
	f.SetSpread(36)
	oldBin := buildBinary(t)
	newBin := testbin.Build(t, "./cmd/cc-connect", "cc-connect-next", "-ldflags",
		"-X main.version=v9.9.10-test -X github.com/cc-connect/cc-connect/format.next=1")
	a := newHandoverMember(t, "a", urls, f)
	b := newHandoverMember(t, "b", urls, f)
	a.setRelease(t, true)
	b.setRelease(t, true)
	a.startBin(t, oldBin)
	a.p.waitErr(t, "Serving the binding")
	b.startBin(t, oldBin)
	f.WaitConn(t, 2)

	// One thread a step, each started by a mention: a reply in a thread
	// whose root ran on another host would meet the standby's read-back
	// of that root, another matter.
	var want []string
	say := func(text string) {
		t.Helper()
		ts := fmt.Sprintf("1700000201.%06d", 100*(len(want)+1))
		x, y := f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> "+text, nil))
		f.WaitAck(t, x)
		f.WaitAck(t, y)
		want = append(want, text)
		waitEchoes(t, f, ts, []string{text})
		checkToldOnce(t, f, ts)
	}
	say("before the upgrade")

	// a: drain, upgrade, rejoin.
	a.drain(t, oldBin)
	say("a drained")
	a.stop(t)
	conns := f.Conns()
	a.startBin(t, newBin)
	a.p.waitErr(t, "Joined the cluster")
	f.WaitConn(t, conns+1)
	say("a upgraded")

	// b: drain (its bindings go back to a, the owner), then an old build
	// is refused while a host of the newer format is up.
	b.drain(t, oldBin)
	a.p.waitErr(t, "Serving the binding")
	say("b drained")
	b.stop(t)
	b.startBin(t, oldBin)
	if code := b.p.exitCode(t); code == 0 {
		t.Fatal("the old build started beside a host of the newer format")
	}
	if !strings.Contains(b.p.stderr.String(), "in format 2, written by a newer cc-connect") ||
		!strings.Contains(b.p.stderr.String(), "upgrade this host") {
		t.Errorf("the old build's refusal does not say why: %s", b.p.stderr.String())
	}
	for _, s := range []string{"Lease acquired", "Serving the binding", "Joined the cluster"} {
		if strings.Contains(b.p.stderr.String(), s) {
			t.Errorf("the refused old build got as far as %q", s)
		}
	}
	say("old build refused")
	conns = f.Conns()
	b.startBin(t, newBin)
	b.p.waitErr(t, "Joined the cluster")
	f.WaitConn(t, conns+1)
	say("b upgraded")

	// Each message was run once, in all.
	for _, w := range want {
		if got := a.ran(t, w) + b.ran(t, w); got != 1 {
			t.Errorf("%q ran %d times", w, got)
		}
	}
}

// TestRunRefusesAJournalOfANewerFormat: a state dir whose journal a newer
// cc-connect wrote (a downgrade) stops run before it takes or writes
// anything, with the message, and the journal stays as it was.
func TestRunRefusesAJournalOfANewerFormat(t *testing.T) {
	t.Parallel()
	cfg := setup(t, "")
	inboxDir := filepath.Join(filepath.Dir(cfg), "state", "inbox")
	if err := os.MkdirAll(inboxDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(inboxDir), 0o700); err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(inboxDir, "0123.jsonl")
	body := fmt.Sprintf(`{"op":"add","entry":{"id":"m1","user_id":"U1","text":"hi","received":"2026-12-01T00:00:00Z"},"v":%d}`+"\n",
		format.Written()+1)
	if err := os.WriteFile(journal, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, "run", "--config", cfg)
	if code := p.exitCode(t); code == 0 {
		t.Fatal("run started on a journal of a newer format")
	}
	errs := p.stderr.String()
	if !strings.Contains(errs, journal+" is in format") || !strings.Contains(errs, "upgrade this host") {
		t.Errorf("the refusal does not name the journal and the way out:\n%s", errs)
	}
	if strings.Contains(errs, "cc-connect started") {
		t.Error("run got as far as starting")
	}
	if got, _ := os.ReadFile(journal); string(got) != body {
		t.Error("the journal was changed")
	}
}
