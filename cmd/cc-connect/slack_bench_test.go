package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// BenchmarkSlackThreads is the scenario users feel in Slack, where every
// new thread is a new conversation: the real claude CLI against the fake
// Messages API (which answers at once), cc-connect's Slack adapter against
// the fake Slack (Socket Mode in, Web API out), `cc-connect run`'s code in
// this process. Each op is one round per side: a new thread, then
// threadTurns turns in it, each sent when the previous reply was posted.
// The sides are two cc-connect runs that differ only in agent.prewarm (0
// and 1), run one after the other within the op, in an order that
// alternates from op to op, so that they share the machine's load.
//
// Metrics (medians, ms): first-ms (the new thread's first message to its
// reply, per round), later-ms (every later turn), ack-ms (an event
// written to the socket to its ack, every message), each for prewarm=0
// and prewarm=1; first-gain-x (first-ms of prewarm=0 over prewarm=1);
// spare-hits (the share of prewarm=1's first turns that ran on a spare).
// Before the timed rounds each side runs one untimed turn in a thread of
// its own, as a daemon that has served its workspace before would have: it
// warms the CLI's own caches for both, and leaves prewarm=1 its first
// spare.
//
// Every thread keeps its process (idle_timeout is 30 minutes), so the
// workspace cap is raised to 8 on both sides: under the default 4 the
// sixth thread finds the workspace full, where spares give way and none
// is started, and the figure would measure reaping instead (spare-hits
// shows it; docs/performance-history.md gives that run too).
//
// send= is when each later message of a thread is sent: at-reply, the
// moment its previous reply is posted (the previous turn's wrap-up, its
// fsyncs and its reactions, then run while the message is accepted), or
// at-done, once the previous turn's check mark is on its message, as a
// person who reads the reply first sends it.
//
// cli= is the agent: real, the scenario above; fake, the fake CLI
// (internal/fakeclaude), which answers at once and writes little. The
// real CLI's own writes at the end of its turn land on the disk just as a
// message sent at-reply is fsynced, and that fsync pays for them; the
// fake's figures are cc-connect's share of the ack without them.
func BenchmarkSlackThreads(b *testing.B) {
	for _, cli := range []string{"real", "fake"} {
		for _, pace := range []struct {
			name   string
			atDone bool
		}{{"send=at-reply", false}, {"send=at-done", true}} {
			b.Run("cli="+cli+"/"+pace.name, func(b *testing.B) {
				claude := ""
				if cli == "real" {
					claude = testenv.ClaudeBinary(b)
				} else {
					claude = fakeclaude.Build(b)
				}
				benchSlackThreads(b, claude, pace.atDone)
			})
		}
	}
}

func benchSlackThreads(b *testing.B, claude string, atDone bool) {
	api := fakeapi.Start(b)
	dir := b.TempDir()
	cold := startSlackRun(b, claude, api.URL(), filepath.Join(dir, "prewarm0"), 0)
	warm := startSlackRun(b, claude, api.URL(), filepath.Join(dir, "prewarm1"), 1)
	cold.atDone, warm.atDone = atDone, atDone
	cold.thread(b, "warm-up", 1)
	warm.thread(b, "warm-up", 1)

	var coldFirst, warmFirst, coldLater, warmLater, coldAck, warmAck []time.Duration
	i := 0
	for b.Loop() {
		i++
		run := func(r *slackRun, first, later, ack *[]time.Duration) {
			t := r.thread(b, fmt.Sprintf("round %d", i), threadTurns)
			*first = append(*first, t.replies[0])
			*later = append(*later, t.replies[1:]...)
			*ack = append(*ack, t.acks...)
		}
		if i%2 == 1 {
			run(cold, &coldFirst, &coldLater, &coldAck)
			run(warm, &warmFirst, &warmLater, &warmAck)
		} else {
			run(warm, &warmFirst, &warmLater, &warmAck)
			run(cold, &coldFirst, &coldLater, &coldAck)
		}
	}
	b.ReportMetric(p50ms(coldFirst), "prewarm0-first-ms")
	b.ReportMetric(p50ms(warmFirst), "prewarm1-first-ms")
	b.ReportMetric(p50ms(coldLater), "prewarm0-later-ms")
	b.ReportMetric(p50ms(warmLater), "prewarm1-later-ms")
	b.ReportMetric(p50ms(coldAck), "prewarm0-ack-ms")
	b.ReportMetric(p50ms(warmAck), "prewarm1-ack-ms")
	if w := p50ms(warmFirst); w > 0 {
		b.ReportMetric(p50ms(coldFirst)/w, "first-gain-x")
	}
	// The untimed warm-up thread's first turn had no spare yet.
	hits := warm.log.countOf("Taking a spare agent process")
	if i > 0 {
		b.ReportMetric(float64(hits)/float64(i), "spare-hits")
	}
}

// threadTurns is the number of turns per thread in BenchmarkSlackThreads.
const threadTurns = 20

// slackRun is `cc-connect run` in this process with one Slack platform
// served by its own fake Slack.
type slackRun struct {
	slack   *fakeslack.Server
	log     *lineWatch
	threads int
	atDone  bool // send a thread's next message once the turn before it ended

	mu    sync.Mutex
	acked map[string]time.Time // envelope id -> when its ack arrived
}

func startSlackRun(b *testing.B, claude, apiURL, dir string, prewarm int) *slackRun {
	tb := testing.TB(b)
	tb.Helper()
	home := filepath.Join(dir, "home")
	// The bot token's lease lives under TMPDIR: each run gets its own, so
	// that the two runs (and other tests on the host with the fake's
	// token) do not meet. The run takes it before it connects, and
	// WaitConn below waits for that.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		tb.Fatal(err)
	}
	b.Setenv("TMPDIR", tmp)
	f := fakeslack.New(tb)
	path := writeConfig(tb, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "info"
[agent]
command = %q
prewarm = %d
max_processes_per_workspace = 8
self_report = false
[agent.env]
HOME = %q
CLAUDE_CONFIG_DIR = %q
ANTHROPIC_BASE_URL = %q
ANTHROPIC_API_KEY = "sk-cc-connect-bench"
DISABLE_TELEMETRY = "1"
DISABLE_AUTOUPDATER = "1"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"

[[platforms]]
name = "chat"
type = "slack"
bot_token = %q
app_token = %q
api_url = %q

[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["U1"]
require_mention = false
sender_header = false
`, claude, prewarm, home, filepath.Join(home, ".claude"), apiURL, fakeslack.BotToken, fakeslack.AppToken, f.APIURL()))
	r := &slackRun{slack: f, log: newLineWatch(), acked: map[string]time.Time{}}
	f.OnAck(func(id string) {
		at := time.Now()
		r.mu.Lock()
		r.acked[id] = at
		r.mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runCommand(ctx, path, stdio{In: strings.NewReader(""), Out: io.Discard, Err: r.log}, runFlags{})
	}()
	tb.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				tb.Errorf("cc-connect run exited %d; log:\n%s", code, r.log.String())
			}
		case <-time.After(2 * time.Minute):
			tb.Errorf("cc-connect run did not stop; log:\n%s", r.log.String())
		}
	})
	f.WaitConn(tb, 1)
	return r
}

// threadTimes are one thread's figures: each turn's reply time, each
// message's ack time.
type threadTimes struct {
	replies, acks []time.Duration
}

// thread starts a new thread with a message in channel C1 and answers each
// reply with the next message, n in all.
func (r *slackRun) thread(tb testing.TB, name string, n int) threadTimes {
	tb.Helper()
	r.threads++
	// A message's ts is a second after the one before it: the fake
	// stamps the bot's posts (the reply, a "Queued" notice) a microsecond
	// after the newest message, as Slack stamps them after it, and a
	// message must not take a ts a post already has.
	tsOf := func(k int) string { return fmt.Sprintf("%d.000100", 1800000000+r.threads*1000+k) }
	root := tsOf(0)
	var out threadTimes
	for k := range n {
		text := fmt.Sprintf("%s turn %d.", name, k+1)
		ts, extra := root, map[string]any(nil)
		if k > 0 {
			ts = tsOf(k)
			extra = map[string]any{"thread_ts": root}
		}
		t0 := time.Now()
		env := r.slack.Deliver(tb, fakeslack.MsgEvent("C1", ts, "U1", text, extra))
		r.slack.WaitPost(tb, "the reply to "+text, func(m fakeslack.Message) bool {
			return m.ThreadTS == root && strings.Contains(m.Text, "echo: "+text)
		})
		out.replies = append(out.replies, time.Since(t0))
		r.slack.WaitAck(tb, env)
		r.mu.Lock()
		out.acks = append(out.acks, r.acked[env].Sub(t0))
		r.mu.Unlock()
		if r.atDone {
			r.slack.Wait(tb, "the check mark on "+text, func() bool {
				for _, c := range r.slack.Succeeded("reactions.add") {
					if c.Form["timestamp"] == ts && c.Form["name"] == "white_check_mark" {
						return true
					}
				}
				return false
			})
		}
	}
	return out
}

// countOf is how many writes contain sub.
func (w *lineWatch) countOf(sub string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := 0
	for _, wr := range w.writes {
		c += strings.Count(wr.text, sub)
	}
	return c
}
