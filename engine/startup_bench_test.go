package engine

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/google/uuid"
)

// startupSessions is how many sessions the start-up benchmark persists.
const startupSessions = 1000

// BenchmarkStartup measures start-up with startupSessions persisted
// sessions in the state dir, one of which has a real (fake claude)
// transcript to resume. Each op starts an engine on that state dir as the
// binary does (New, AddAdapter, Run), hands it a message for a persisted
// session, waits for the reply, and stops it.
//
// Metrics: ready-ms is from New to the message accepted into its session's
// FIFO with the session's stored state loaded; first-reply-ms adds the
// spawn of the resumed agent and its turn; spawns-before-msg counts agent
// processes started before that message (must be 0: sessions load lazily
// and nothing spawns until a message needs it) and spawns/op those started
// in all (must be 1).
func BenchmarkStartup(b *testing.B) {
	agent := fakeClaudeAgent(b)

	// One session with a real transcript, made the normal way.
	seed := startBenchEngine(b, agent, 4, nil, nil)
	seed.say(b, "T0000", "hello")
	seed.chat.waitReplies(b, 1, "echo: hello")
	seed.stop()
	st := conv.NewStore(seed.state)
	key := "bench/C1/T0000"
	rec, ok, err := st.Load(key, time.Now())
	if err != nil || !ok || rec.SessionID == "" {
		b.Fatalf("seed session %q: %+v, %v, %v", key, rec, ok, err)
	}
	for i := 1; i < startupSessions; i++ {
		r := rec
		r.Thread = fmt.Sprintf("T%04d", i)
		r.Key = "bench/C1/" + r.Thread
		r.SessionID = uuid.NewString()
		if err := st.Save(r); err != nil {
			b.Fatal(err)
		}
	}

	var ready, firstReply []time.Duration
	var before, spawned int64
	for b.Loop() {
		var spawns atomic.Int64
		t0 := time.Now()
		env := startBenchEngine(b, agent, 4, func(o *Options) {
			o.StateDir = seed.state
			o.Bindings[0].Workspace = seed.ws
		}, func(e *Engine) {
			e.spawn = func(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (procs.Process, error) {
				spawns.Add(1)
				return procs.Start(ctx, cfg, opts, log)
			}
		})
		before += spawns.Load()
		env.ids = 1 << 20 // message ids unlike the seed's
		env.say(b, "T0000", "again")
		ready = append(ready, time.Since(t0))
		env.chat.waitReplies(b, 1, "echo: again")
		firstReply = append(firstReply, time.Since(t0))
		env.stop()
		spawned += spawns.Load()
	}
	b.ReportMetric(msP50(ready), "ready-ms")
	b.ReportMetric(msP50(firstReply), "first-reply-ms")
	b.ReportMetric(float64(before)/float64(b.N), "spawns-before-msg")
	b.ReportMetric(float64(spawned)/float64(b.N), "spawns/op")
	if before != 0 || spawned != int64(b.N) {
		b.Errorf("%d agents spawned before the first message and %d in all over %d starts, want 0 and %d", before, spawned, b.N, b.N)
	}
}

// msP50 is the median of ds in milliseconds.
func msP50(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// BenchmarkFirstReplyAfterRestart measures what a person waits for right
// after a deploy: the first reply in a new thread of a workspace that had
// turns before the restart, with the real CLI against the fake Messages
// API. With prewarm the start starts a spare for that workspace (its
// record of recent turns), and the op waits until it is ready, as a
// message a few seconds after the deploy finds it; without, the message
// waits for claude to start. Each op is one start, one message, one stop.
//
// Metrics: first-reply-ms (median) from the message to its reply.
func BenchmarkFirstReplyAfterRestart(b *testing.B) {
	bin := testenv.ClaudeBinary(b)
	for _, prewarm := range []int{0, 1} {
		b.Run(fmt.Sprintf("prewarm=%d", prewarm), func(b *testing.B) {
			api := fakeapi.Start(b)
			home := b.TempDir()
			agent := agentproc.Config{Command: bin, CloseGrace: 10 * time.Second, Env: map[string]string{
				"HOME": home, "CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude"), "ANTHROPIC_BASE_URL": api.URL(),
				"ANTHROPIC_API_KEY": "test", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}}
			withPrewarm := func(o *Options) { o.Prewarm = prewarm }
			seed := startBenchEngine(b, agent, 4, withPrewarm, nil)
			seed.say(b, "T0", "hello")
			seed.chat.waitReplies(b, 1, "echo: hello")
			seed.stop()

			var replies []time.Duration
			n := 0
			for b.Loop() {
				env := startBenchEngine(b, agent, 4, func(o *Options) {
					withPrewarm(o)
					o.StateDir = seed.state
					o.Bindings[0].Workspace = seed.ws
				}, nil)
				if prewarm > 0 {
					waitSpares(b, env.e.spare, "the spare a restart starts", func(r, _ int) bool { return r == prewarm })
				}
				n++
				env.ids = 1<<20 + n*10 // message ids unlike the seed's and each other's
				t0 := time.Now()
				env.say(b, fmt.Sprintf("N%d", n), "again")
				env.chat.waitReplies(b, 1, "echo: again")
				replies = append(replies, time.Since(t0))
				env.stop()
			}
			b.ReportMetric(msP50(replies), "first-reply-ms")
		})
	}
}
