package ingress

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
)

// The extra hop a cluster adds to every inbound message, on one embedded
// server (fsync per write) on this machine: a publish until the stream
// acknowledges it (what an adapter waits for before acking the platform),
// and a publish until the owner's consumer hands it to the engine.

func BenchmarkPublishAck(b *testing.B) {
	url := setup(b)
	p := NewPublisher(jsFor(b, natstest.Connect(b, url)), testNames, "h1")
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		ev := message(b, fmt.Sprintf("c%d", i%8), fmt.Sprintf("id-%d", i), "a message of ordinary length for a chat")
		start := time.Now()
		if _, err := p.Publish(ctx, ev); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

func BenchmarkPublishToDelivery(b *testing.B) {
	url := setup(b)
	js := jsFor(b, natstest.Connect(b, url))
	p := NewPublisher(js, testNames, "h1")
	delivered := make(chan struct{}, 1)
	r := newRecorder()
	r.answer = func(accepted) (Result, error) {
		delivered <- struct{}{}
		return Settled, nil
	}
	serve(b, jsFor(b, natstest.Connect(b, url)), newFence(1), r, 15*time.Second)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		ev := message(b, fmt.Sprintf("c%d", i%8), fmt.Sprintf("id-%d", i), "a message of ordinary length for a chat")
		start := time.Now()
		if _, err := p.Publish(ctx, ev); err != nil {
			b.Fatal(err)
		}
		select {
		case <-delivered:
		case <-time.After(waitTimeout):
			b.Fatal("not delivered")
		}
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}
