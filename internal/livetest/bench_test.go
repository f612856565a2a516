package livetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// BenchmarkStreamedReply is the streaming target: the fake Messages API
// streams a 10 s answer in 20 chunks to the real CLI, and the reply goes
// through the engine and the Slack adapter (its default pacing) to a fake
// Slack holding chat.update to Tier 3's 50 a minute for the workspace.
// first-text-ms is how long after the first chunk left the API the
// thread showed text; the final text must be exactly the reply.
func BenchmarkStreamedReply(b *testing.B) {
	s := startSlack(b, options{}, nil)
	s.f.SetRateLimit("chat.update", 50, 3)
	var whole strings.Builder
	for i := 1; i <= 20; i++ {
		whole.WriteString(fakeapi.StreamChunk(i, 20))
	}
	want := strings.TrimSpace(whole.String())
	var firstTotal, worst time.Duration
	var edits int
	b.ResetTimer()
	for i := range b.N {
		ts := fmt.Sprintf("1700001%03d.000100", i)
		s.say(b, ts, "answer slowly [[STREAM:20:10s]]")
		first := s.f.WaitPost(b, "the first text", func(m fakeslack.Message) bool {
			return m.ThreadTS == ts && strings.Contains(m.Text, "chunk 1 of 20")
		})
		seen := time.Now()
		chunks := s.api.FirstChunks()
		if len(chunks) != i+1 {
			b.Fatalf("%d paced answers started, want %d", len(chunks), i+1)
		}
		lag := seen.Sub(chunks[i])
		firstTotal += lag
		worst = max(worst, lag)
		final := s.f.WaitMessage(b, "C1", first.TS, "the final text", func(m fakeslack.Message) bool {
			return ctxLine.MatchString(m.Text)
		})
		if got := ctxLine.ReplaceAllString(final.Text, ""); got != want {
			b.Fatalf("final text %q, want exactly the reply %q", got, want)
		}
		edits += len(final.Edits)
	}
	b.StopTimer()
	b.ReportMetric(float64(firstTotal.Milliseconds())/float64(b.N), "first-text-ms")
	b.ReportMetric(float64(worst.Milliseconds()), "worst-first-text-ms")
	b.ReportMetric(float64(edits)/float64(b.N), "edits/reply")
	b.ReportMetric(float64(s.f.RateLimited("chat.update")), "rate-limited-edits")
}
