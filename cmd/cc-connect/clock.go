//go:build !cctestclock

package main

import (
	"context"
	"log/slog"

	"github.com/jonboulle/clockwork"
)

// runClock is the clock of schedules, webhooks and spending windows: the
// real one. A build with the cctestclock tag (the scenario tests' binary,
// clock_testhook.go) lets a test set it instead.
func runClock(context.Context, *slog.Logger) (clockwork.Clock, error) {
	return clockwork.NewRealClock(), nil
}
