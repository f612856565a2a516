package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
)

// BenchmarkBackgroundToThread measures how long a background task's end
// takes to reach the thread: from the moment the task ends (its gate file
// written) to the reply of the turn the CLI then runs by itself posted to
// the chat adapter. The agent is the fake claude, which notices the gate
// within 10 ms and writes the task's end, its own turn and its result at
// once; the rest is agentproc handing the own turn over and the
// conversation relaying it. max-ms is the slowest op.
func BenchmarkBackgroundToThread(b *testing.B) {
	bin := fakeclaude.Build(b)
	home := b.TempDir()
	agent := agentproc.Config{Command: bin, CloseGrace: 2 * time.Second,
		Env: map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude")}}
	env := startBenchEngine(b, agent, 16, nil, nil)
	gates := b.TempDir()
	var slowest time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		gate := filepath.Join(gates, fmt.Sprint(i))
		env.say(b, "T1", "[[BG:"+gate+"]]")
		env.chat.waitReplies(b, 1, "tool said: ")
		b.StartTimer()
		start := time.Now()
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		env.chat.waitReplies(b, 1, "⚙️ Background command")
		slowest = max(slowest, time.Since(start))
	}
	b.ReportMetric(float64(slowest.Microseconds())/1000, "max-ms")
}
