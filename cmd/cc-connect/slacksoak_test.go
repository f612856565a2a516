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
// too, by pairs (slackSoakOrder): a pair whose earlier message was
// journaled (acked) while the later one had not started (no 👀 yet) was
// pending with it, and must be answered in order; a pair whose earlier
// message reached cc-connect only after the later one started (its
// delivery met a kill, and its retry came after) cannot be, and is only
// counted.
//
// Half the iterations run on a binding with follow_ups = "steer", where
// every message runs a command that takes 0.4 s: a reply pushed while a
// turn runs goes into that turn and is answered by its reply (the fake
// names it there), which must hold across the kills as well, whether a
// kill falls before the CLI took it in, after, or before cc-connect read
// that it did (docs/performance.md has the counts).
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
	t.Logf("%d iterations, %d messages (%d answered in a turn they were steered into), %d SIGKILLs (%d after a push, %d in a turn, "+
		"%d after a reply, %d idle): %d lost, %d doubled, "+
		"%d threads out of order (%d pairs both pending, %d pairs whose earlier came after the later started)",
		n, st.messages, st.steered, st.kills[0]+st.kills[1]+st.kills[2]+st.kills[3], st.kills[0], st.kills[1], st.kills[2], st.kills[3],
		st.lost, st.doubled, st.reordered, st.pendingPairs, st.latePairs)
	if st.lost+st.doubled > 0 {
		t.Errorf("%d lost, %d doubled", st.lost, st.doubled)
	}
	if st.pendingPairs > 0 && os.Getenv("CC_SOAK_ORDER_LOG_ONLY") == "" {
		t.Errorf("%d pairs of messages that were both pending answered out of order", st.pendingPairs)
	}
}

// slackSoakStats add up what the iterations saw.
type slackSoakStats struct {
	mu                       sync.Mutex
	messages                 int
	steered                  int    // messages answered in the turn they were steered into
	kills                    [4]int // by kind: after a push, in a turn, after a reply, idle
	lost, doubled, reordered int
	// Out-of-order pairs (slackSoakOrder): both pending, or the earlier
	// one late.
	pendingPairs, latePairs int
}

// soakMsg is one message of a burst.
type soakMsg struct {
	text, ts, thread string // thread: the root's ts (a root's own)
	root             bool
	// own is what the reply of its own turn holds: the fake's echo of
	// it, or the result of the command it runs.
	own string
}

// soakMsgOf is the message id (its text's start) of a burst: tool, on a
// binding that steers, runs a command that takes a while; drip streams
// the reply (0.8 s in 8 text deltas: past the engine's hold, then
// finished by an edit, so that kills land inside a streamed reply too).
func soakMsgOf(id string, tool, drip bool) soakMsg {
	switch {
	case tool:
		return soakMsg{text: id + " [[TOOL:sleep 0.4 #" + id + "]]", own: "(fake) ran: sleep 0.4 #" + id + "\n"}
	case drip:
		return soakMsg{text: id + " [[DRIP:8]]", own: "echo: " + id + " [[DRIP:8]]"}
	}
	return soakMsg{text: id, own: "echo: " + id}
}

// steeredMark is what the reply of a turn that m was steered into holds
// of it (the fake names each message folded into its turn).
func (m soakMsg) steeredMark() string { return "(also read while working: " + m.text + ")" }

// answerAt is where text first answers m (as answeredBy), -1 nowhere: in
// the reply of a turn that messages were steered into, its own message
// comes first, then the others in the order they were taken in.
func (m soakMsg) answerAt(text string) int {
	at := -1
	for _, mark := range []string{m.own, m.steeredMark()} {
		if i := strings.Index(text+"\n", mark); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	return at
}

// answeredBy reports whether a reply's text answers m: its own turn's
// reply, or that of the turn it was steered into.
func (m soakMsg) answeredBy(text string) bool {
	return strings.Contains(text+"\n", m.own) || strings.Contains(text, m.steeredMark()) || answersWithContext(text, m.text)
}

// slackSoakConfig writes the config one iteration's instances share.
func slackSoakConfig(t *testing.T, f *fakeslack.Server) (path, state string) {
	return slackSoakConfigWith(t, f, "")
}

// slackSoakConfigWith is slackSoakConfig with more keys for the binding
// (lines of key = value).
func slackSoakConfigWith(t *testing.T, f *fakeslack.Server, bindingTOML string) (path, state string) {
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
%s
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"), f.APIURL(), bindingTOML))
	return path, filepath.Join(dir, "state")
}

func slackKillRestartOnce(t *testing.T, rng *rand.Rand, iter int, st *slackSoakStats) {
	f := fakeslack.New(t)
	// Slack sends an unacked event again after 3 s, three times; sooner
	// here, and more often, so that a message whose deliveries all met a
	// kill is not lost by the fake's own limit.
	f.SetRedeliverAfter(300 * time.Millisecond)
	f.SetRetries(6)
	steer := rng.IntN(2) == 0
	follow := ""
	if steer {
		follow = `follow_ups = "steer"`
	}
	path, _ := slackSoakConfigWith(t, f, follow)
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
	// Half the messages get a streamed reply; on a binding that steers,
	// every message runs a command that takes a while (soakMsgOf), so
	// that a reply pushed while a turn runs is taken into it. (One
	// written after the turn's last tool, left out of it and answered by
	// the CLI's next turn, is the engine's TestSteeredMessageLeftOut*.)
	msgOf := func(id string) soakMsg {
		half := rng.IntN(2) == 0
		return soakMsgOf(id, steer, !steer && half)
	}
	// A message's ts leaves a millisecond of room after it: the fake
	// stamps the bot's posts (replies, "Queued" notices, streamed parts)
	// a microsecond after the newest message of the channel, and refuses
	// a message whose ts a post already has.
	for j := range threads {
		ts := fmt.Sprintf("17%05d%03d.%06d", iter, j, 100)
		m := msgOf(fmt.Sprintf("it%d-t%d-m0", iter, j))
		m.ts, m.thread, m.root = ts, ts, true
		threads[j] = []soakMsg{m}
	}
	for k := 0; total < 6 && rng.IntN(3) != 0; k++ {
		j := rng.IntN(nThreads)
		root := threads[j][0].ts
		m := msgOf(fmt.Sprintf("it%d-t%d-r%d", iter, j, k))
		m.ts, m.thread = fmt.Sprintf("17%05d%03d.%06d", iter, j, 1000*(k+1)), root
		threads[j] = append(threads[j], m)
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
	acks := watchSoakAcks(f)
	push := func(m soakMsg) {
		if m.root {
			env, twin := f.DeliverMention(t, fakeslack.MsgEvent("C1", m.ts, "U1", "<@UBOT> "+m.text, nil))
			acks.pushed(m.ts, env, twin)
			return
		}
		acks.pushed(m.ts, f.Deliver(t, fakeslack.MsgEvent("C1", m.ts, "U1", m.text, map[string]any{"thread_ts": m.thread})))
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
	deadline := time.After(30 * time.Second)
drain:
	for {
		changed := f.Changed() // before the check: a change after it wakes us
		if slackSoakAnswered(f, msgs) && f.Unacked() == 0 {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			break drain
		}
	}
	select {
	case <-last.exited:
		// Nothing in the test stops it before this point: say how it
		// ended (a signal from outside shows here as "signal: killed").
		t.Fatalf("the last instance exited by itself before it was stopped: %v", last.err)
	default:
	}
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := last.exitCode(t); code != 0 {
		t.Errorf("the last instance exited %d", code)
	}

	lost, doubled, reordered := slackSoakCount(t, f, msgs)
	steered := 0
	for _, m := range msgs {
		for _, p := range f.Posts() {
			if p.ThreadTS == m.thread && strings.Contains(p.Text, m.steeredMark()) {
				steered++
				break
			}
		}
	}
	pendingPairs, latePairs := slackSoakOrder(t, f, msgs, acks)
	st.mu.Lock()
	st.messages += len(msgs)
	st.steered += steered
	st.lost += lost
	st.doubled += doubled
	st.reordered += reordered
	st.pendingPairs += pendingPairs
	st.latePairs += latePairs
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
			if strings.Contains(m.Text, "echo: ") || strings.Contains(m.Text, "tool said: ") {
				return true
			}
		}
		return false
	}
	return len(f.Succeeded("reactions.add")) > reactionsBefore
}

// slackSoakReplies counts the bot's replies that answer m: its own turn's
// (m.answeredBy), that of the turn it was steered into, or, for a turn that a kill cut off and recovery resumed with
// continueText (the notice names m), the echo of that continuation that
// follows.
//
// A thread runs one turn at a time, so at most one resumption waits for
// its answer: each notice replaces the one before. A notice that no echo
// follows before the next one was itself cut off (the continuation met
// a kill too), and the next restart resumes the same message again; its
// notices are not several answers owed.
func slackSoakReplies(f *fakeslack.Server, m soakMsg) int {
	n := 0
	resuming := "" // the message whose resumed turn has not answered yet
	for _, p := range f.Posts() {
		if p.ThreadTS != m.thread {
			continue
		}
		switch {
		case m.answeredBy(p.Text):
			n++
		case strings.Contains(p.Text, "was cut off; resuming it"):
			if i := strings.Index(p.Text, "“"); i >= 0 {
				if j := strings.Index(p.Text[i:], "”"); j >= 0 {
					resuming = p.Text[i+len("“") : i+j]
				}
			}
		case strings.Contains(p.Text, "echo: "+continueText) && resuming != "":
			if resuming == m.text {
				n++
			}
			resuming = ""
		}
	}
	return n
}

// answersWithContext reports whether text is the fake's echo of a prompt
// that carried the thread's earlier messages before text (a reply that ran
// as its thread's first turn: the root it follows had not run).
func answersWithContext(reply, text string) bool {
	const ctx = "echo: [cc-connect] Earlier messages of this thread"
	return strings.HasPrefix(reply, ctx) && strings.Contains(reply, "[cc-connect] End of the earlier messages.\n\n"+text+"\n")
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
	want := map[string][]soakMsg{} // per thread, in push order
	for _, m := range msgs {
		want[m.thread] = append(want[m.thread], m)
	}
	for thread, ms := range want {
		var got, texts []string
		for _, m := range ms {
			texts = append(texts, m.text)
		}
		for _, p := range f.Posts() {
			if p.ThreadTS != thread {
				continue
			}
			for _, m := range ms {
				if m.answeredBy(p.Text) && !contains(got, m.text) {
					got = append(got, m.text)
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

// soakAcks records, at each ack of an iteration's envelopes, which
// messages had a turn started then (a 👀 asked for): what slackSoakOrder
// needs to tell a pair that was pending together from one whose earlier
// message came late. The envelope's message is looked up at the end: an
// ack may come before Deliver returns its envelope id.
type soakAcks struct {
	f  *fakeslack.Server
	mu sync.Mutex                 // guards the fields below
	at map[string]map[string]bool // envelope id -> the ts that had a 👀 when it was acked
	// events are the event ids of each pushed message's envelopes (a
	// mention's twin too): its retries carry the same.
	events map[string]string // event id -> ts
}

func watchSoakAcks(f *fakeslack.Server) *soakAcks {
	a := &soakAcks{f: f, at: map[string]map[string]bool{}, events: map[string]string{}}
	f.OnAck(func(env string) {
		started := soakStarted(f)
		a.mu.Lock()
		a.at[env] = started
		a.mu.Unlock()
	})
	return a
}

// soakStarted is the set of message ts that cc-connect reacted 👀 to (a
// turn it took), asked for or done.
func soakStarted(f *fakeslack.Server) map[string]bool {
	out := map[string]bool{}
	for _, c := range f.Calls("reactions.add") {
		if c.Form["name"] == "eyes" {
			out[c.Form["timestamp"]] = true
		}
	}
	return out
}

// pushed notes the envelopes a push of the message ts made.
func (a *soakAcks) pushed(ts string, envs ...string) {
	ids := map[string]string{}
	for _, d := range a.f.Deliveries() {
		ids[d.EnvelopeID] = d.EventID
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, env := range envs {
		if ev := ids[env]; ev != "" {
			a.events[ev] = ts
		}
	}
}

// firstAck returns, per message ts, the 👀 set at the first ack of any of
// its envelopes (nil: never acked).
func (a *soakAcks) firstAck() map[string]map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]map[string]bool{}
	for _, env := range a.f.Acks() { // in ack order
		for _, d := range a.f.Deliveries() {
			if d.EnvelopeID != env {
				continue
			}
			if ts, ok := a.events[d.EventID]; ok && out[ts] == nil {
				out[ts] = a.at[env]
			}
		}
	}
	return out
}

// slackSoakOrder counts, per thread, the pairs of messages answered in the
// other order than they were posted (the later one's first answer before
// the earlier one's), by what they were when the earlier one was first
// acknowledged, so journaled: pending, when the later one had not started
// (the fault: they must be answered in Slack's order), or late, when it
// had. A pending pair whose earlier message cc-connect said it had to run
// after the later one (its late notice) was journaled between the later
// one's start and its 👀, and counts as late: the 👀 is how the soak sees a
// start, a few milliseconds after it. (A kill after the later one's start
// mark and before that notice was posted leaves the notice to the restart,
// which tells it again: engine's TestLateNoticeLostToAKillIsToldAfterTheRestart.)
func slackSoakOrder(t *testing.T, f *fakeslack.Server, msgs []soakMsg, acks *soakAcks) (pending, late int) {
	t.Helper()
	first := acks.firstAck()
	posts := f.Posts()
	answered := map[string]int{} // ts -> index of its first answer
	told := map[string]bool{}    // ts -> cc-connect said it came late
	for _, m := range msgs {
		answered[m.ts] = -1
		for i, p := range posts {
			// Its echo, or the notice of its cut turn resumed (whose echo,
			// of the continuation, follows).
			if p.ThreadTS == m.thread && (m.answeredBy(p.Text) ||
				strings.Contains(p.Text, "was cut off; resuming it") && strings.Contains(p.Text, "“"+m.text+"”")) {
				answered[m.ts] = i
				break
			}
			if p.ThreadTS == m.thread && strings.Contains(p.Text, "“"+m.text+"” reached cc-connect after a later message") {
				told[m.ts] = true
			}
		}
	}
	for i, a := range msgs {
		for _, b := range msgs[i+1:] {
			if a.thread != b.thread {
				continue
			}
			early, later := a, b
			if soakTSBefore(b.ts, a.ts) {
				early, later = b, a
			}
			ia, ib := answered[early.ts], answered[later.ts]
			if ia < 0 || ib < 0 || ia < ib || ia == ib && early.answerAt(posts[ia].Text) < later.answerAt(posts[ia].Text) {
				continue // unanswered (counted as lost), or in order (in one reply: named in order)
			}
			started := first[early.ts]
			switch {
			case started != nil && !started[later.ts] && !told[early.ts]:
				pending++
				t.Logf("out of order, both pending: %s answered before %s", later.text, early.text)
				for _, p := range posts {
					if p.ThreadTS == early.thread {
						t.Logf("  the thread has %q", p.Text)
					}
				}
			default:
				late++
				t.Logf("out of order, %s came after %s had started (acked: %v, the later's 👀 by then: %v, told: %v)",
					early.text, later.text, started != nil, started[later.ts], told[early.ts])
			}
		}
	}
	return pending, late
}

// soakTSBefore orders two ts of the soak's (same width, so as strings).
func soakTSBefore(a, b string) bool { return len(a) < len(b) || len(a) == len(b) && a < b }
