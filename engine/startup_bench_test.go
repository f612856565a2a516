package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
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
