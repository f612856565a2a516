package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestClusterSoakKills kills cluster hosts at random (kill -9, then a
// restart on the same state) while people write as teams do: mentions
// that start threads, replies in them without a mention, replies with one
// (each mention reaches Slack's app twice: a message and an app_mention),
// and Slack's redeliveries of what was acked already. Host a owns the
// binding, b stands by, c only receives; each kill hits any of them. Every
// message must be answered once, in its thread's order. It reports how many
// were lost (no reply), doubled (more than one) and out of order. Each kill
// of the binding's holder that lasts costs a failover (about twice
// lease_ttl): a short run (3 kills, two failovers) is part of the suite;
// CC_CLUSTER_SOAK_KILLS names more, at random (make soak sets it).
func TestClusterSoakKills(t *testing.T) {
	kills := 3
	if v := os.Getenv("CC_CLUSTER_SOAK_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CC_CLUSTER_SOAK_KILLS=%q: want a positive number", v)
		}
		kills = n
	} else if testing.Short() {
		t.Skip("the cluster soak kills hosts; -short skips it")
	}
	long := kills > 3
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CC_SOAK_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (set CC_SOAK_SEED to replay), %d kills", seed, kills)
	rng := rand.New(rand.NewPCG(seed, 1))
	started := time.Now()

	nc := clustertest.StartCluster(t, 3)
	f := fakeslack.New(t)
	f.SetSpread(seed)
	f.SetRedeliverAfter(3 * time.Second)
	f.SetRetries(1000) // Slack gives up after a few: the soak counts cc-connect's losses, not Slack's
	var hosts []*clusterMember
	for _, name := range []string{"a", "b", "c"} {
		dir := t.TempDir()
		agent := fmt.Sprintf(`[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q }
shutdown_grace = "5s"
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"))
		m := newClusterMemberWith(t, dir, name, nc.URLs(), f, agent, 3, clusterBindingTOML)
		m.start(t)
		if name == "a" {
			m.p.waitErr(t, "Serving the binding")
		}
		hosts = append(hosts, m)
	}
	f.WaitConn(t, 3)

	fd := &soakFeed{t: t, f: f, rng: rand.New(rand.NewPCG(seed, 2)), sent: map[string][]string{}}
	stop := make(chan struct{})
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			fd.next()
			time.Sleep(100 * time.Millisecond) // the pace of a busy channel, not a wait for an event
		}
	}()

	// A host down longer than lease_ttl and a fifth (3.6 s) loses the
	// binding to the other (a restarted owner takes its lease back at
	// once): a conversation then moves, and its new host reads threads back.
	role := map[string]string{"a": "owner", "b": "standby", "c": "receiver"}
	// The short run: the owner down long enough to move everything to the
	// standby, the receiver, then the standby that holds it by then.
	short := []struct {
		host int
		down time.Duration
	}{{0, 5 * time.Second}, {2, time.Second}, {1, 5 * time.Second}}
	killed := map[string]int{}
	for k := range kills {
		pause := time.Duration(500+rng.IntN(2500)) * time.Millisecond
		h, down := hosts[rng.IntN(len(hosts))], time.Duration(rng.IntN(6000))*time.Millisecond
		if !long {
			pause, h, down = time.Second, hosts[short[k].host], short[k].down
		}
		time.Sleep(pause) // a random moment, not a wait for an event
		if err := h.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-h.p.exited
		killed[role[h.name]]++
		t.Logf("kill %d: host %s (%s), down %s", k+1, h.name, role[h.name], down)
		time.Sleep(down) // the time a host stays down, not a wait for an event
		h.start(t)
	}
	close(stop)
	<-fed

	sent := fd.all()
	total := 0
	for _, ids := range sent {
		total += len(ids)
	}
	// Drain: every message answered (or the limit passes), then a last
	// mention answered after all of them (what was redelivered has run by
	// then).
	limit := time.After(3 * time.Minute)
drain:
	for {
		changed := f.Changed() // before the check: a post after it wakes us
		if fd.answered(sent) >= total {
			break
		}
		select {
		case <-changed:
		case <-limit:
			break drain // what is still unanswered is counted lost below
		}
	}
	const last = "1700099999.000100"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", last, "U1", "<@UBOT> the last one", nil))
	f.Wait(t, "the last reply", func() bool { return len(echoes(f, last)) > 0 })

	// A host killed after it settled a message's event and before it
	// posted the reply stored the reply in the cluster first: the
	// binding's next holder posts it before the thread's next answer, and
	// the host, back, posts it only if nobody did and it holds the binding
	// (docs/cluster.md). A reply such a host recovered and posted after
	// the answer to a later message of its thread is "late": counted, and
	// out of order like any other.
	recovered := map[string]bool{}
	for _, h := range hosts {
		for _, ln := range h.logsAbout("recovering it here") {
			if m := soakRecovered.FindStringSubmatch(ln); m != nil {
				recovered[fd.idOf(m[1])] = true
			}
		}
	}
	lost, doubled, disordered, late := 0, 0, 0, 0
	for thread, ids := range sent {
		got := soakAnswers(f, thread)
		count := map[string]int{}
		var order []string
		for _, id := range got {
			if count[id]++; count[id] == 1 {
				order = append(order, id)
			}
		}
		bad := false
		for _, id := range ids {
			switch n := count[id]; {
			case n == 0:
				lost++
				bad = true
				t.Errorf("thread %s: %s has no reply", thread, id)
			case n > 1:
				doubled++
				bad = true
				t.Errorf("thread %s: %s answered %d times", thread, id, n)
			}
		}
		late += soakLate(ids, order, recovered)
		if !slices.Equal(order, soakAnsweredOf(ids, count)) {
			disordered++
			bad = true
			t.Errorf("thread %s: answered in the order %q, sent %q", thread, order, ids)
		}
		if bad {
			for _, h := range hosts {
				for _, ln := range h.logsAbout(thread) {
					t.Logf("  %s", ln)
				}
			}
		}
	}
	readBack := func(what string) int {
		n := 0
		for _, h := range hosts {
			n += len(h.logsAbout(what))
		}
		return n
	}
	t.Logf("cluster soak: %d kills (owner %d, standby %d, receiver %d), %d messages in %d threads "+
		"(%d replies without a mention, %d mentions, %d redeliveries): %d lost, %d doubled, %d threads out of order "+
		"(%d replies posted late by their restarted host; %d recovered by it in order; %d settled replies posted by the next holder), in %s; "+
		"read back from Slack: %d roots run, %d roots answered already and not run, %d messages run",
		kills, killed["owner"], killed["standby"], killed["receiver"], total, len(sent), fd.replies, fd.mentions, fd.redelivered,
		lost, doubled, disordered, late, len(recovered)-late, readBack("Posted a reply another host settled"), time.Since(started).Round(time.Second),
		readBack("Accepting a thread's root read back"), readBack("A thread's root read back was taken already"),
		readBack("Accepting a message read back"))
}

// soakFeed writes what people write, one message at a time, each once
// the one before was acked by some host (Slack redelivers what nobody
// acks, and a person types one message after another).
type soakFeed struct {
	t   *testing.T
	f   *fakeslack.Server
	rng *rand.Rand // the feeder's alone

	mu   sync.Mutex          // guards sent
	sent map[string][]string // thread ts → its messages' ids, in the order sent
	n    int
	// done are the events acked so far, to deliver again.
	done                           []soakEvent
	replies, mentions, redelivered int
}

// next sends one message: a mention that starts a thread, a reply in an
// open thread (with a mention, now and then), or a redelivery of an event
// acked before.
func (fd *soakFeed) next() {
	t, f := fd.t, fd.f
	fd.mu.Lock()
	var open []string
	for th := range fd.sent {
		open = append(open, th)
	}
	fd.mu.Unlock()
	slices.Sort(open)
	if len(fd.done) > 0 && fd.rng.IntN(8) == 0 {
		d := fd.done[fd.rng.IntN(len(fd.done))]
		fd.redelivered++
		env := fmt.Sprintf("env-soak-again-%d", fd.redelivered)
		f.DeliverEnvelope(t, fakeslack.EventEnvelope(env, d.id, 1, d.event))
		return
	}
	// A second to each message: the bot's posts (the fake stamps each
	// one after the newest message) fit in between.
	ts := fmt.Sprintf("%d.000100", 1700100000+fd.n)
	id := fmt.Sprintf("msg-%d", fd.n)
	fd.n++
	var envs []string
	var ev map[string]any
	thread := ts
	switch {
	case len(open) == 0 || fd.rng.IntN(4) == 0:
		fd.mentions++
		ev = fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> soak "+id, nil)
		x, y := f.DeliverMention(t, ev)
		envs = []string{x, y}
	case fd.rng.IntN(5) == 0:
		fd.mentions++
		thread = open[fd.rng.IntN(len(open))]
		ev = fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> soak "+id, map[string]any{"thread_ts": thread})
		x, y := f.DeliverMention(t, ev)
		envs = []string{x, y}
	default:
		fd.replies++
		thread = open[fd.rng.IntN(len(open))]
		ev = fakeslack.MsgEvent("C1", ts, "U1", "soak "+id, map[string]any{"thread_ts": thread})
		envs = []string{f.Deliver(t, ev)}
	}
	fd.mu.Lock()
	fd.sent[thread] = append(fd.sent[thread], id)
	fd.mu.Unlock()
	events := eventsOf(f, envs...)
	f.Wait(t, "the message's ack", func() bool { return eventAcked(f, events) })
	for _, d := range f.Deliveries() {
		if d.EnvelopeID == envs[0] {
			fd.done = append(fd.done, soakEvent{id: d.EventID, event: ev})
			break
		}
	}
}

// soakEvent is an event Slack sent, to send again.
type soakEvent struct {
	id    string
	event map[string]any
}

func (fd *soakFeed) all() map[string][]string {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	out := map[string][]string{}
	for th, ids := range fd.sent {
		out[th] = slices.Clone(ids)
	}
	return out
}

// answered counts the messages of sent with a reply.
func (fd *soakFeed) answered(sent map[string][]string) int {
	n := 0
	for thread, ids := range sent {
		got := soakAnswers(fd.f, thread)
		for _, id := range ids {
			if slices.Contains(got, id) {
				n++
			}
		}
	}
	return n
}

var soakID = regexp.MustCompile(`msg-\d+`)

// soakAnswers are the ids of the messages the bot's replies in thread
// answer, in the order posted: the fake claude echoes its prompt, whose
// last id is the message's own. A conversation that starts on a host
// mid-thread gets the thread's earlier messages before it, and a reply
// that long is split in parts: only the part holding the end of those
// earlier messages names the message answered.
func soakAnswers(f *fakeslack.Server, thread string) []string {
	const begin, end = "Earlier messages of this thread", "End of the earlier messages."
	var out []string
	for _, m := range f.Posts() {
		if m.ThreadTS != thread || m.BotID == "" {
			continue
		}
		text := m.Text
		switch {
		case strings.Contains(text, end):
			text = text[strings.LastIndex(text, end):]
		case strings.Contains(text, begin), !strings.Contains(text, "echo:"):
			continue // the first part of a long reply, or not a reply
		}
		if ids := soakID.FindAllString(text, -1); len(ids) > 0 {
			out = append(out, ids[len(ids)-1])
		}
	}
	return out
}

// soakRecovered finds the message id in a log line of a reply recovered
// by the host that settled its event.
var soakRecovered = regexp.MustCompile(`message_id=C1:(\d+\.\d+)`)

// idOf is the id of the message the feeder sent with ts.
func (fd *soakFeed) idOf(ts string) string {
	var n int
	if _, err := fmt.Sscanf(ts, "%d.000100", &n); err != nil {
		return ""
	}
	return fmt.Sprintf("msg-%d", n-1700100000)
}

// soakAnsweredOf are ids, in order, less those without a reply (counted
// as lost already).
func soakAnsweredOf(ids []string, count map[string]int) []string {
	var out []string
	for _, id := range ids {
		if count[id] > 0 {
			out = append(out, id)
		}
	}
	return out
}

// soakLate counts the replies of a thread (its messages ids, in the order
// sent; order, the order answered) that their host recovered and posted
// after the answer to a message sent after theirs.
func soakLate(ids, order []string, recovered map[string]bool) int {
	n := 0
	for i, id := range order {
		if !recovered[id] {
			continue
		}
		sent := slices.Index(ids, id)
		for _, before := range order[:i] {
			if slices.Index(ids, before) > sent {
				n++
				break
			}
		}
	}
	return n
}

// eventsOf are the event ids of the envelopes envs.
func eventsOf(f *fakeslack.Server, envs ...string) map[string]bool {
	out := map[string]bool{}
	for _, d := range f.Deliveries() {
		for _, e := range envs {
			if d.EnvelopeID == e {
				out[d.EventID] = true
			}
		}
	}
	return out
}

// eventAcked says whether some envelope of one of events was acked: a
// host took it (Slack sends an unacked one again, in a new envelope).
func eventAcked(f *fakeslack.Server, events map[string]bool) bool {
	for _, d := range f.Deliveries() {
		if events[d.EventID] && f.Acked(d.EnvelopeID) {
			return true
		}
	}
	return false
}
