package engine

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/google/uuid"
)

// BenchmarkConsoleConversations is the engine's part of the console's
// conversations page with 1,000 persisted conversations over 10 bindings:
// reading their records from the state dir and each one's rights in the
// bindings in force (console's BenchmarkConversationsPage measures the
// rendering). Reports ms/list.
func BenchmarkConsoleConversations(b *testing.B) {
	const n, bindings = 1000, 10
	env := startBenchEngine(b, fakeClaudeAgent(b), 4, nil, nil)
	defer env.stop()
	st := conv.NewStore(env.state)
	for i := range n {
		ch, thread := fmt.Sprintf("C%02d", i%bindings), fmt.Sprintf("T%04d", i)
		if err := st.Save(conv.Record{Key: "bench/" + ch + "/" + thread, Platform: "bench", Channel: ch, Thread: thread,
			Workspace: env.ws, SessionID: uuid.NewString(), Model: "claude-opus-4-5", LastActivity: time.Now().Add(-time.Duration(i) * time.Minute),
			ContextPct: i % 100, TotalCostUSD: float64(i) / 100}); err != nil {
			b.Fatal(err)
		}
	}
	v := env.e.Console()
	cpu0 := cpuTime(b)
	for b.Loop() {
		list, err := v.Conversations("bench", "U1")
		if err != nil {
			b.Fatal(err)
		}
		if len(list) != n {
			b.Fatalf("%d conversations listed, want %d", len(list), n)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/list")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/list")
}

// cpuTime is the process's CPU time (user and system) so far: on a shared
// machine it moves less with the load than the wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
