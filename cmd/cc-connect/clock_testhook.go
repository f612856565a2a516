//go:build cctestclock

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/jonboulle/clockwork"
)

// testClockEnv names a file holding an RFC 3339 instant. In a binary built
// with the cctestclock tag (never a release), the schedules, webhooks and
// spending windows run on a fake clock set to that instant, moved forward
// whenever a test rewrites the file: a schedule fires when the test says
// so, without a test waiting for the wall clock.
const testClockEnv = "CC_CONNECT_TEST_CLOCK"

// runClock returns the test's clock when testClockEnv is set, else the
// real one.
func runClock(ctx context.Context, log *slog.Logger) (clockwork.Clock, error) {
	path := os.Getenv(testClockEnv)
	if path == "" {
		return clockwork.NewRealClock(), nil
	}
	at, err := readTestClock(path)
	if err != nil {
		return nil, err
	}
	clock := clockwork.NewFakeClockAt(at)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching the test clock: %w", err)
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watching the test clock: %w", err)
	}
	log.Info("Test clock set", "at", at.UTC().Format(time.RFC3339))
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.Errors:
			case ev := <-w.Events:
				if filepath.Clean(ev.Name) != filepath.Clean(path) || !ev.Has(fsnotify.Create|fsnotify.Write) {
					continue
				}
				to, err := readTestClock(path)
				if err != nil {
					continue // a partial write; the next event has it whole
				}
				if d := to.Sub(clock.Now()); d > 0 {
					clock.Advance(d)
				}
				log.Info("Test clock set", "at", clock.Now().UTC().Format(time.RFC3339))
			}
		}
	}()
	return clock, nil
}

func readTestClock(path string) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", testClockEnv, err)
	}
	at, err := time.Parse(time.RFC3339, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", testClockEnv, err)
	}
	return at, nil
}
