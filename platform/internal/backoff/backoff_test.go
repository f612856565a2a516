package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		attempt  int
		min, max time.Duration
		ceil     time.Duration // the wait lies in [ceil/2, ceil]
	}{
		{"first is min", 1, 100 * ms, time.Second, 100 * ms},
		{"zero attempt is min", 0, 100 * ms, time.Second, 100 * ms},
		{"doubles", 2, 100 * ms, time.Second, 200 * ms},
		{"doubles again", 4, 100 * ms, time.Second, 800 * ms},
		{"capped", 5, 100 * ms, time.Second, time.Second},
		{"stays capped", 1000, 100 * ms, time.Second, time.Second},
		{"min above max is capped", 1, 2 * time.Second, time.Second, time.Second},
		{"zero min", 3, 0, time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 50 { // the jitter is random: look at several draws
				if d := Delay(tt.attempt, tt.min, tt.max); d < tt.ceil/2 || d > tt.ceil {
					t.Fatalf("Delay(%d, %v, %v) = %v, want within [%v, %v]", tt.attempt, tt.min, tt.max, d, tt.ceil/2, tt.ceil)
				}
			}
		})
	}
}

func TestBackoffGrowsWithJitterAndCap(t *testing.T) {
	b := &Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for i, ceil := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		ceil *= time.Millisecond
		d := b.Next()
		if d < ceil/2 || d > ceil {
			t.Errorf("attempt %d: %v outside [%v, %v]", i, d, ceil/2, ceil)
		}
	}
	b.Reset()
	if d := b.Next(); d < 50*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("after Reset: %v outside [50ms, 100ms]", d)
	}
}

func TestSleep(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"waits out a short wait", context.Background(), time.Millisecond, nil},
		{"no wait", context.Background(), 0, nil},
		{"negative wait", context.Background(), -time.Second, nil},
		{"ended context cuts a long wait", done, time.Hour, context.Canceled},
		{"ended context with no wait", done, 0, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Sleep(tt.ctx, tt.d); !errors.Is(err, tt.want) {
				t.Errorf("Sleep = %v, want %v", err, tt.want)
			}
		})
	}
}
