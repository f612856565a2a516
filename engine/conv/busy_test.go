package conv

import (
	"context"
	"testing"
)

func TestBusyCount(t *testing.T) {
	b := newBusyCount()
	if err := b.wait(context.Background()); err != nil {
		t.Fatalf("wait on a zero count: %v", err)
	}
	b.add(2)
	done := make(chan error, 1)
	go func() { done <- b.wait(context.Background()) }()
	b.add(-1)
	select {
	case err := <-done:
		t.Fatalf("wait returned (%v) with one item still counted", err)
	default:
	}
	b.add(-1)
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}

	// A decrement that overtakes its increment heals once the increment
	// lands, rather than clamping and sticking at one.
	b.add(-1)
	b.add(1)
	if n := b.count(); n != 0 {
		t.Fatalf("count %d after -1 then +1, want 0", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.add(1)
	cancel()
	if err := b.wait(ctx); err != context.Canceled {
		t.Fatalf("wait with a cancelled ctx = %v, want context.Canceled", err)
	}
}
