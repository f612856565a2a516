package engine

import (
	"context"

	"github.com/cc-connect/cc-connect/trigger"
)

// SetSchedules gives the engine the scheduler behind !schedules, and the
// one to wake when a run ends; call it before Run.
func (e *Engine) SetSchedules(s Schedules) { e.sched.Store(&s) }

// Working reports whether the run journaled under id is still queued or
// running (trigger.Submitter).
func (e *Engine) Working(id string) bool { return e.convs.Working(id) }

var _ trigger.Submitter = (*Engine)(nil)

// Submit journals a run (trigger.Submitter): nil once it is on disk,
// trigger.ErrDuplicate when it was before, an error wrapping
// trigger.ErrRefused when it can never be taken; any other error means
// it was not journaled.
func (e *Engine) Submit(ctx context.Context, r trigger.Run) error { return e.convs.Submit(ctx, r) }
