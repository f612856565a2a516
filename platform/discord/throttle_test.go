package discord

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestEditThrottleLatestWins(t *testing.T) {
	th := newEditThrottle(300 * time.Millisecond)
	queued := make(chan string, 10)
	th.waiting = func(string) { queued <- "" }
	var mu sync.Mutex
	var sent []string
	edit := func(text string) error {
		return th.do(context.Background(), "m", func(context.Context) error {
			mu.Lock()
			sent = append(sent, text)
			mu.Unlock()
			return nil
		})
	}
	if err := edit("first"); err != nil {
		t.Fatal(err)
	}
	<-queued
	var wg sync.WaitGroup
	for _, text := range []string{"second", "third", "final"} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = edit(text) }()
		<-queued // in line before the next one starts
	}
	wg.Wait()
	if strings.Join(sent, ",") != "first,final" {
		t.Fatalf("sent %v, want first then only the final text", sent)
	}
}
