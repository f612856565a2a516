package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
// restart on the same state) while a stream of mentions reaches them, each
// in a thread of its own: every mention must be answered exactly once. It
// reports how many were lost (no reply) and doubled (more than one). Each
// kill of the binding's holder costs a failover (about twice lease_ttl),
// so it runs only when CC_CLUSTER_SOAK_KILLS names how many kills to make
// (make soak sets it).
func TestClusterSoakKills(t *testing.T) {
	kills := 0
	if v := os.Getenv("CC_CLUSTER_SOAK_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CC_CLUSTER_SOAK_KILLS=%q: want a positive number", v)
		}
		kills = n
	}
	if kills == 0 {
		t.Skip("set CC_CLUSTER_SOAK_KILLS (make soak does) to kill cluster hosts at random")
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CC_SOAK_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (set CC_SOAK_SEED to replay), %d kills", seed, kills)
	rng := rand.New(rand.NewPCG(seed, 1))

	nc := clustertest.StartCluster(t, 3)
	f := fakeslack.New(t)
	f.SetSpread(seed)
	f.SetRedeliverAfter(3 * time.Second)
	f.SetRetries(1000) // Slack gives up after a few: the soak counts cc-connect's losses, not Slack's
	binding := strings.Replace(clusterBindingTOML, `standby = ["b"]`, `standby = ["b", "c"]`, 1)
	var hosts []*clusterMember
	for _, name := range []string{"a", "b", "c"} {
		dir := t.TempDir()
		agent := fmt.Sprintf(`[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q }
shutdown_grace = "5s"
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"))
		m := newClusterMemberWith(t, dir, name, nc.URLs(), f, agent, 3, binding)
		m.start(t)
		if name == "a" {
			m.p.waitErr(t, "Serving the binding")
		}
		hosts = append(hosts, m)
	}
	f.WaitConn(t, 3)

	// The feeder: one mention after another, each once the one before
	// was acked by some host (Slack redelivers what nobody acks).
	var mu sync.Mutex
	var threads []string
	stop := make(chan struct{})
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// A second to each mention: the bot's posts (the fake stamps each
			// one after the newest message) fit in between.
			ts := fmt.Sprintf("%d.000100", 1700100000+i)
			// [[SLOW:N]] turns last N×10 ms: kills land mid-turn.
			x, y := f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", fmt.Sprintf("<@UBOT> [[SLOW:%d]] soak %d", 5+i%30, i), nil))
			mu.Lock()
			threads = append(threads, ts)
			mu.Unlock()
			events := eventsOf(f, x, y)
			f.Wait(t, "the mention's ack", func() bool { return eventAcked(f, events) })
			time.Sleep(150 * time.Millisecond) // the pace of a busy channel, not a wait for an event
		}
	}()

	for k := range kills {
		time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond) // a random moment, not a wait for an event
		h := hosts[rng.IntN(len(hosts))]
		if err := h.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-h.p.exited
		t.Logf("kill %d: host %s", k+1, h.name)
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
		h.start(t)
	}
	close(stop)
	<-fed

	mu.Lock()
	all := append([]string(nil), threads...)
	mu.Unlock()
	// Drain: every thread answered, then a last mention answered after
	// all of them (what was redelivered has run by then).
	answered := func() int {
		n := 0
		for _, ts := range all {
			if len(echoes(f, ts)) > 0 {
				n++
			}
		}
		return n
	}
	f.WaitWithin(t, 3*time.Minute, "every thread answered", func() bool { return answered() == len(all) })
	const last = "1700199999.000100"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", last, "U1", "<@UBOT> the last one", nil))
	f.Wait(t, "the last reply", func() bool { return len(echoes(f, last)) > 0 })
	lost, doubled := 0, 0
	for _, ts := range all {
		switch n := len(echoes(f, ts)); {
		case n == 0:
			lost++
			t.Errorf("thread %s: no reply", ts)
		case n > 1:
			doubled++
			t.Errorf("thread %s: %d replies: %q", ts, n, echoes(f, ts))
			for _, p := range f.Posts() {
				if p.ThreadTS == ts && p.BotID != "" {
					t.Logf("  posted in %s: ts %s metadata %+v %q", ts, p.TS, p.Metadata, p.Text)
				}
			}
			for _, h := range hosts {
				for _, ln := range h.logsAbout(ts) {
					t.Logf("  %s", ln)
				}
			}
		}
	}
	t.Logf("cluster soak: %d kills, %d messages: %d lost, %d doubled", kills, len(all), lost, doubled)
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
