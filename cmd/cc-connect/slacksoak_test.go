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

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestSlackSoakKillRestart is the random-kill soak through Slack: the
// built binary against the fake Slack (Socket Mode, events sent again
// when their ack is late, a mention's app_mention twin, thread replies
// that do not mention the bot) and the fake claude, the replies streamed
// (progress normal; half of them slow enough to show as they are
// written, then finished by an edit). Each iteration posts a
// burst of 2 to 6 messages over 2 or 3 threads, SIGKILLs cc-connect (and
// so its claude children) at a random moment — 0 to 20 ms after a push,
// while a turn runs, or just after a reply was posted — one to three
// times, pushing the rest of the burst after each restart, then lets a
// last instance finish. Every message must get exactly one reply: the
// counts of lost and doubled replies are logged and must be zero. Replies
// that came in another order than their thread's messages are counted
// too, and only logged: a message whose delivery met a kill comes again
// as Slack's retry, and a message posted after it may reach the restarted
// instance first; Slack itself promises no order then.
func TestSlackSoakKillRestart(t *testing.T) {
	n := soakIterations(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CC_SOAK_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (set CC_SOAK_SEED to replay), %d iterations", seed, n)
	var st slackSoakStats
	t.Run("kills", func(t *testing.T) {
		for i := range n {
			t.Run(fmt.Sprintf("kill%d", i), func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(seed, uint64(i)))
				slackKillRestartOnce(t, rng, i, &st)
			})
		}
	})
	st.mu.Lock()
	defer st.mu.Unlock()
	t.Logf("%d iterations, %d messages, %d SIGKILLs (%d after a push, %d in a turn, %d after a reply, %d idle): %d lost, %d doubled, %d out of order",
		n, st.messages, st.kills[0]+st.kills[1]+st.kills[2]+st.kills[3], st.kills[0], st.kills[1], st.kills[2], st.kills[3],
		st.lost, st.doubled, st.reordered)
	if st.lost+st.doubled > 0 {
		t.Errorf("%d lost, %d doubled", st.lost, st.doubled)
	}
}

// slackSoakStats add up what the iterations saw.
type slackSoakStats struct {
	mu                       sync.Mutex
	messages                 int
	kills                    [4]int // by kind: after a push, in a turn, after a reply, idle
	lost, doubled, reordered int
}

// soakMsg is one message of a burst.
type soakMsg struct {
	text, ts, thread string // thread: the root's ts (a root's own)
	root             bool
}

// slackSoakConfig writes the config one iteration's instances share.
func slackSoakConfig(t *testing.T, f *fakeslack.Server) (path, state string) {
	dir := t.TempDir()
	path = writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q }
shutdown_grace = "5s"
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["U1"]
sender_header = false
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"), f.APIURL()))
	return path, filepath.Join(dir, "state")
}

func slackKillRestartOnce(t *testing.T, rng *rand.Rand, iter int, st *slackSoakStats) {
	f := fakeslack.New(t)
	// Slack sends an unacked event again after 3 s, three times; sooner
	// here, and more often, so that a message whose deliveries all met a
	// kill is not lost by the fake's own limit.
	f.SetRedeliverAfter(300 * time.Millisecond)
	f.SetRetries(6)
	path, _ := slackSoakConfig(t, f)
	// The token's lock goes to a TMPDIR of the iteration's own: the
	// iterations share the fake's token.
	tmp := filepath.Join(filepath.Dir(path), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken, "TMPDIR=" + tmp}

	// The burst: 2 or 3 threads, each a mention and 0 to 2 replies without
	// one, 2 to 6 messages, the threads interleaved at random: a reply is
	// pushed after its root's push (not its ack), in its thread's order.
	nThreads := 2 + rng.IntN(2)
	threads := make([][]soakMsg, nThreads)
	total := nThreads
	// Half the messages get a reply that takes 0.8 s in 8 text deltas: it
	// is streamed into the thread (past the engine's hold) and finished by
	// an edit, so that kills land inside a streamed reply too.
	streamed := func(text string) string {
		if rng.IntN(2) == 0 {
			return text + " [[DRIP:8]]"
		}
		return text
	}
	for j := range threads {
		ts := fmt.Sprintf("17%05d%03d.%06d", iter, j, 100)
		threads[j] = []soakMsg{{text: streamed(fmt.Sprintf("it%d-t%d-m0", iter, j)), ts: ts, thread: ts, root: true}}
	}
	for k := 0; total < 6 && rng.IntN(3) != 0; k++ {
		j := rng.IntN(nThreads)
		root := threads[j][0].ts
		threads[j] = append(threads[j], soakMsg{text: streamed(fmt.Sprintf("it%d-t%d-r%d", iter, j, k)),
			ts: fmt.Sprintf("17%05d%03d.%06d", iter, j, 200+k), thread: root})
		total++
	}
	var msgs []soakMsg
	for len(msgs) < total {
		j := rng.IntN(nThreads)
		if len(threads[j]) > 0 {
			msgs = append(msgs, threads[j][0])
			threads[j] = threads[j][1:]
		}
	}
	push := func(m soakMsg) {
		if m.root {
			f.DeliverMention(t, fakeslack.MsgEvent("C1", m.ts, "U1", "<@UBOT> "+m.text, nil))
			return
		}
		f.Deliver(t, fakeslack.MsgEvent("C1", m.ts, "U1", m.text, map[string]any{"thread_ts": m.thread}))
	}

	kills := 1 + rng.IntN(3)
	next := 0 // the next message to push
	conns := 0
	for range kills {
		p := startBinaryEnv(t, env, "run", "--config", path)
		conns++
		f.WaitConn(t, conns)
		kind := rng.IntN(3)
		switch kind {
		case 0: // 0-20 ms after a push, in the accept path or just past it
			stop := next + rng.IntN(len(msgs)-next+1)
			for ; next < stop; next++ {
				push(msgs[next])
			}
			if next < len(msgs) {
				push(msgs[next])
				next++
			}
			kill(t, p, time.Duration(rng.IntN(21))*time.Millisecond)
		case 1, 2: // while a turn runs, or just after a reply was posted
			for ; next < len(msgs); next++ {
				push(msgs[next])
			}
			posts, reactions := len(f.Posts()), len(f.Succeeded("reactions.add"))
			deadline := time.Now().Add(10 * time.Second)
			for !slackSoakMoment(f, kind, posts, reactions) {
				if time.Now().After(deadline) {
					kind = 3 // all answered before: a kill of an idle instance
					break
				}
				select {
				case <-p.exited:
					t.Fatalf("cc-connect exited by itself:\n%s", p.stderr.String())
				case <-time.After(time.Millisecond):
				}
			}
			kill(t, p, time.Duration(rng.IntN(5))*time.Millisecond)
		}
		st.mu.Lock()
		st.kills[kind]++
		st.mu.Unlock()
	}

	last := startBinaryEnv(t, env, "run", "--config", path)
	conns++
	f.WaitConn(t, conns)
	for ; next < len(msgs); next++ {
		push(msgs[next])
	}
	// Done when every message has its reply and Slack waits for no ack;
	// a message never answered shows as lost when the time is up.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && !(slackSoakAnswered(f, msgs) && f.Unacked() == 0) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := last.exitCode(t); code != 0 {
		t.Errorf("the last instance exited %d", code)
	}

	lost, doubled, reordered := slackSoakCount(t, f, msgs)
	st.mu.Lock()
	st.messages += len(msgs)
	st.lost += lost
	st.doubled += doubled
	st.reordered += reordered
	st.mu.Unlock()
	if lost+doubled > 0 {
		t.Errorf("%d lost, %d doubled; pushed %+v", lost, doubled, msgs)
	}
}

// slackSoakMoment reports whether the kill of kind (1: in a turn, 2: after
// a reply) is due: a turn running shows as a new 👀 on a message, a reply
// as a post beyond those before.
func slackSoakMoment(f *fakeslack.Server, kind, postsBefore, reactionsBefore int) bool {
	if kind == 2 {
		for _, m := range f.Posts()[postsBefore:] {
			if strings.Contains(m.Text, "echo: ") {
				return true
			}
		}
		return false
	}
	return len(f.Succeeded("reactions.add")) > reactionsBefore
}

// slackSoakReplies counts the bot's replies that answer m: an echo of it,
// or, for a turn that a kill cut off and recovery resumed with
// continueText (the notice names m), the echo of that continuation that
// follows.
func slackSoakReplies(f *fakeslack.Server, m soakMsg) int {
	n := 0
	var resuming []string // messages whose resumed turn has not answered yet
	for _, p := range f.Posts() {
		if p.ThreadTS != m.thread {
			continue
		}
		switch {
		case strings.Contains(p.Text, "echo: "+m.text):
			n++
		case strings.Contains(p.Text, "was cut off; resuming it"):
			if i := strings.Index(p.Text, "“"); i >= 0 {
				if j := strings.Index(p.Text[i:], "”"); j >= 0 {
					resuming = append(resuming, p.Text[i+len("“"):i+j])
				}
			}
		case strings.Contains(p.Text, "echo: "+continueText) && len(resuming) > 0:
			if resuming[0] == m.text {
				n++
			}
			resuming = resuming[1:]
		}
	}
	return n
}

func slackSoakAnswered(f *fakeslack.Server, msgs []soakMsg) bool {
	for _, m := range msgs {
		if slackSoakReplies(f, m) == 0 {
			return false
		}
	}
	return true
}

// slackSoakCount counts the messages never answered, those answered more
// than once, and the threads whose replies came in another order than
// their messages were pushed.
func slackSoakCount(t *testing.T, f *fakeslack.Server, msgs []soakMsg) (lost, doubled, reordered int) {
	t.Helper()
	for _, m := range msgs {
		switch n := slackSoakReplies(f, m); {
		case n == 0:
			lost++
			t.Logf("lost: %s", m.text)
			for _, p := range f.Posts() {
				if p.ThreadTS == m.thread {
					t.Logf("  the thread has %q (metadata %+v)", p.Text, p.Metadata)
				}
			}
		case n > 1:
			doubled++
			t.Logf("answered %d times: %s", n, m.text)
		}
	}
	want := map[string][]string{} // per thread, in push order
	for _, m := range msgs {
		want[m.thread] = append(want[m.thread], "echo: "+m.text)
	}
	for thread, texts := range want {
		var got []string
		for _, p := range f.Posts() {
			if p.ThreadTS != thread {
				continue
			}
			for _, w := range texts {
				if strings.Contains(p.Text, w) && !contains(got, w) {
					got = append(got, w)
				}
			}
		}
		if strings.Join(got, "|") != strings.Join(texts, "|") && len(got) == len(texts) {
			reordered++
			t.Logf("thread %s answered in the order %q, pushed %q", thread, got, texts)
		}
	}
	return lost, doubled, reordered
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
