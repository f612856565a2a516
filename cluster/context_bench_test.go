package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/cluster/names"
)

// benchNode starts host a of a 3-node JetStream cluster with 3 replicas,
// as a production cluster runs.
func benchNode(b *testing.B) *Node {
	b.Helper()
	nc := natstest.StartCluster(b, 3)
	s := Settings{Host: "a", Members: []string{"a", "b", "c"}, URLs: nc.URLs(), StateDir: filepath.Join(b.TempDir(), "state"),
		LeaseTTL: 2 * time.Second, Replicas: 3, Names: names.Names{Prefix: "t"},
		Bindings: []BindingSpec{{Binding: slackAll, Host: "a", Standby: []string{"b"}}}}
	s.ConfigHash = s.fingerprint()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	n, err := Start(ctx, s, Options{Log: slog.New(slog.DiscardHandler), Version: "test"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(n.Close)
	return n
}

// turnLines are a turn as Claude Code's transcript holds it: the user's
// line and the assistant's, about 6 KiB of varied text (a tool call's
// output compresses less than prose; this is prose).
func turnLines(r *rand.Rand, i int) []byte {
	words := []string{"the", "build", "fails", "because", "handler", "returns", "nil", "context", "deadline", "exceeded",
		"test", "cluster", "session", "transcript", "replica", "stream", "lease", "owner", "standby", "func", "error"}
	text := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	return fmt.Appendf(nil, `{"type":"user","uuid":"%08x-0000-4000-8000-%012x","timestamp":"2026-12-07T17:%02d:00Z","message":{"role":"user","content":%q}}
{"type":"assistant","uuid":"%08x-1111-4000-8000-%012x","timestamp":"2026-12-07T17:%02d:05Z","message":{"role":"assistant","content":[{"type":"text","text":%q}]}}
`, r.Uint32(), r.Uint64()&0xffffffffffff, i%60, text(40), r.Uint32(), r.Uint64()&0xffffffffffff, i%60, text(900))
}

// BenchmarkContextPerTurn: the bytes one turn replicates, a conversation
// of 40 turns (about 240 KiB of transcript) growing by one more turn.
func BenchmarkContextPerTurn(b *testing.B) {
	n := benchNode(b)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	var tr []byte
	for i := range 40 {
		tr = append(tr, turnLines(r, i)...)
	}
	conv := names.Conversation("C1", "bench")
	if _, err := n.PutContext(ctx, slackAll, conv, "sid", "/ws", tr, int64(len(tr)), 0); err != nil {
		b.Fatal(err)
	}
	sent, grown := 0, 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		before := len(tr)
		tr = append(tr, turnLines(r, i)...)
		grown += len(tr) - before
		s, err := n.PutContext(ctx, slackAll, conv, "sid", "/ws", tr, int64(len(tr)), int64(before))
		if err != nil {
			b.Fatal(err)
		}
		sent += s
	}
	b.ReportMetric(float64(sent)/float64(b.N), "sent-B/turn")
	b.ReportMetric(float64(grown)/float64(b.N), "grown-B/turn")
	b.ReportMetric(float64(len(tr)), "transcript-B")
}

// BenchmarkContextTakeover: what a host that takes a conversation over
// adds to its first turn: reading the replicated context back, for
// transcripts of 1 MiB and of the 16 MiB limit.
func BenchmarkContextTakeover(b *testing.B) {
	n := benchNode(b)
	ctx := context.Background()
	for _, size := range []int{1 << 20, ContextLimit} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			var tr []byte
			for i := 0; len(tr) < size; i++ {
				tr = append(tr, turnLines(r, i)...)
			}
			tr = tr[:size]
			conv := names.Conversation("C1", fmt.Sprint(size))
			start := time.Now()
			sent, err := n.PutContext(ctx, slackAll, conv, "sid", "/ws", tr, int64(len(tr)), 0)
			if err != nil {
				b.Fatal(err)
			}
			put := time.Since(start)
			b.ResetTimer()
			for b.Loop() {
				if _, got, err := n.GetContext(ctx, slackAll, conv); err != nil || len(got) != len(tr) {
					b.Fatalf("read %d bytes, %v; want %d", len(got), err, len(tr))
				}
			}
			b.ReportMetric(float64(put.Milliseconds()), "first-put-ms")
			b.ReportMetric(float64(sent), "first-put-B")
		})
	}
}
