package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// BenchmarkAccept measures the accept path: HandleMessage from the call to
// its return, which is when an adapter acknowledges the platform's event
// (Slack's envelope, say). The engine runs as in production (real
// agentproc, the fake claude, the bench chat adapter); each op sends one
// message and only the HandleMessage call is timed. The turn it starts is
// waited for outside the timing.
//
// Sub-benchmarks: idle (the session's process is live and idle, so the
// message runs at once), queued (a turn is running, so the message waits
// behind it) and queued-slow-chat (the same with every chat post taking
// 5 ms, as a platform's Web API does: a post on the accept path shows
// here). ack-p50-us and ack-p99-us are the median and 99th
// percentile of the call's duration.
func BenchmarkAccept(b *testing.B) {
	b.Run("idle", func(b *testing.B) {
		env := startBenchEngine(b, fakeClaudeAgent(b), 16, nil, nil)
		env.say(b, "T1", "start")
		env.chat.waitReplies(b, 1, "echo: start")
		env.waitIdle(b)
		var ds []time.Duration
		for b.Loop() {
			ds = append(ds, env.timedSay(b, "T1", "go on"))
			b.StopTimer()
			env.chat.waitReplies(b, 1, "echo: go on")
			env.waitIdle(b)
			b.StartTimer()
		}
		reportAck(b, ds)
	})
	for _, delay := range []time.Duration{0, 5 * time.Millisecond} {
		name := "queued"
		if delay > 0 {
			name = "queued-slow-chat"
		}
		b.Run(name, func(b *testing.B) { benchAcceptQueued(b, delay) })
	}
}

// benchAcceptQueued times messages that wait behind a running turn; every
// chat post takes delay.
func benchAcceptQueued(b *testing.B, delay time.Duration) {
	env := startBenchEngine(b, fakeClaudeAgent(b), 64, func(o *Options) { o.QueueLimit = 1 << 16 }, nil)
	env.chat.sendDelay = delay
	env.say(b, "T1", "start")
	env.chat.waitReplies(b, 1, "echo: start")
	env.waitIdle(b)
	var ds []time.Duration
	const batch = 16
	for b.Loop() {
		if len(ds)%batch == 0 {
			b.StopTimer()
			env.waitIdle(b)
			env.chat.drain()
			env.say(b, "T1", "hold [[SLOW:5]]")
			b.StartTimer()
		}
		ds = append(ds, env.timedSay(b, "T1", "queued"))
	}
	reportAck(b, ds)
}

// timedSay is say, timed.
func (env *benchEnv) timedSay(tb testing.TB, thread, text string) time.Duration {
	tb.Helper()
	env.ids++
	m := platform.Message{
		ID:       fmt.Sprintf("bench-%d", env.ids),
		Target:   platform.Target{Platform: "bench", Channel: "C1", Thread: thread},
		UserID:   "u1",
		UserName: "u1",
		Text:     text,
		Received: time.Now(),
	}
	t0 := time.Now()
	_, err := env.e.HandleMessage(context.Background(), m)
	d := time.Since(t0)
	if err != nil {
		tb.Fatalf("HandleMessage: %v", err)
	}
	return d
}

// drain drops the messages posted so far (queue notices, replies).
func (c *benchChat) drain() {
	for {
		select {
		case <-c.replies:
		default:
			return
		}
	}
}

func reportAck(b *testing.B, ds []time.Duration) {
	b.ReportMetric(usPct(ds, 50), "ack-p50-us")
	b.ReportMetric(usPct(ds, 99), "ack-p99-us")
}

// usPct is the p-th percentile of ds in microseconds.
func usPct(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	return float64(s[(len(s)-1)*p/100]) / float64(time.Microsecond)
}
