package platformtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

func TestHandlerRecordsInOrder(t *testing.T) {
	h := NewHandler()
	ctx := context.Background()
	for i := range 3 {
		if _, err := h.HandleMessage(ctx, platform.Message{ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.HandleAction(ctx, platform.Action{RequestID: "r1", Choice: platform.ChoiceDeny}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if m := h.Message(t); m.ID != fmt.Sprint(i) {
			t.Errorf("message %d has id %q", i, m.ID)
		}
	}
	if a := h.Action(t); a.RequestID != "r1" || a.Choice != platform.ChoiceDeny {
		t.Errorf("action = %+v", a)
	}
}

// fakeT records failures instead of failing the test, so Run's checks can
// be tested.
type fakeT struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	cleanups []func()
}

func (f *fakeT) Helper()           {}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}
func (f *fakeT) Error(args ...any) { f.Errorf("%s", fmt.Sprint(args...)) }

func TestRun(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	tests := []struct {
		name   string
		run    func(context.Context) error
		errors int
	}{
		{"returns nil on cancel", func(ctx context.Context) error { <-ctx.Done(); return nil }, 0},
		{"returns an error on cancel", func(ctx context.Context) error { <-ctx.Done(); return errors.New("boom") }, 1},
		{"does not return", func(context.Context) error { <-never; return nil }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeT{TB: t}
			started := make(chan struct{})
			Run(ft, 50*time.Millisecond, func(ctx context.Context) error { close(started); return tt.run(ctx) })
			<-started
			for _, fn := range ft.cleanups {
				fn()
			}
			if len(ft.errors) != tt.errors {
				t.Errorf("errors %q, want %d", ft.errors, tt.errors)
			}
		})
	}
}
