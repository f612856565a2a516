package backoff

import (
	"context"
	"errors"
	"fmt"
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

func TestRetry(t *testing.T) {
	errNet := errors.New("network down")
	errRefused := errors.New("token refused")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name         string
		ctx          context.Context
		results      []error // what try returns on each call; errRefused is final
		want         error
		wantRetrying []int // the attempts reported to retrying
	}{
		{"success at once", context.Background(), []error{nil}, nil, nil},
		{"success after trouble", context.Background(), []error{errNet, errNet, nil}, nil, []int{1, 2}},
		{"final error ends it", context.Background(), []error{errNet, errRefused}, errRefused, []int{1}},
		{"final error wins over a cancelled ctx", cancelled, []error{errRefused}, errRefused, nil},
		{"cancelled ctx ends a retry", cancelled, []error{errNet}, context.Canceled, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			var reported []int
			err := Retry(tt.ctx, 0, 0, func() (bool, error) {
				if calls >= len(tt.results) {
					t.Fatalf("try called %d times, more than the %d planned", calls+1, len(tt.results))
				}
				err := tt.results[calls]
				calls++
				return errors.Is(err, errRefused), err
			}, func(err error, attempt int) {
				if !errors.Is(err, errNet) {
					t.Errorf("retrying got %v, want the retryable error", err)
				}
				reported = append(reported, attempt)
			})
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("Retry = %v, want %v", err, tt.want)
			}
			if calls != len(tt.results) {
				t.Errorf("try called %d times, want %d", calls, len(tt.results))
			}
			if fmt.Sprint(reported) != fmt.Sprint(tt.wantRetrying) {
				t.Errorf("retrying saw attempts %v, want %v", reported, tt.wantRetrying)
			}
		})
	}
}
