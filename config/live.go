package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// What a running turn shows and how long it may run: a binding's progress
// level ([[bindings]] progress), the stall notice and the turn time limit
// ([agent] stall_notice, max_turn_time).

// Progress levels of a binding.
const (
	// ProgressQuiet: reactions only (👀, then ✅ or ❌); the reply is
	// posted when it is done.
	ProgressQuiet = "quiet"
	// ProgressNormal: a status line while the turn runs, and the reply
	// streamed into the thread as it is written.
	ProgressNormal = "normal"
	// ProgressVerbose: as normal, with a compact log of tool calls and
	// Claude's todo list as a checklist updated in place.
	ProgressVerbose = "verbose"
)

var progressLevels = []string{ProgressQuiet, ProgressNormal, ProgressVerbose}

// What a message sent while a turn runs does ([[bindings]] follow_ups).
const (
	// FollowUpsQueue: it waits, and runs as the next turn.
	FollowUpsQueue = "queue"
	// FollowUpsSteer: it goes into the running turn, which Claude reads
	// at its next request.
	FollowUpsSteer = "steer"
)

var followUpModes = []string{FollowUpsQueue, FollowUpsSteer}

// Default values of the keys in this file.
const (
	DefaultStallNotice = 5 * time.Minute
	// DefaultLimitRetry is agent.limit_retry's default.
	DefaultLimitRetry = 5 * time.Minute
	DefaultProgress   = ProgressNormal
	DefaultFollowUps  = FollowUpsQueue
)

// ProgressOf returns b's progress level, the default when the file does
// not say.
func (b Binding) ProgressOf() string {
	if b.Progress == "" {
		return DefaultProgress
	}
	return b.Progress
}

// FollowUpsOf returns what b does with a message sent while a turn runs,
// the default when the file does not say.
func (b Binding) FollowUpsOf() string {
	if b.FollowUps == "" {
		return DefaultFollowUps
	}
	return b.FollowUps
}

// validateLive checks the keys in this file.
func validateLive(c *Config, d *decoder) (warnings []string) {
	for _, dur := range []struct {
		key string
		val Duration
	}{
		{"agent.stall_notice", c.Agent.StallNotice},
		{"agent.max_turn_time", c.Agent.MaxTurnTime},
		{"agent.limit_retry", c.Agent.LimitRetry},
	} {
		switch {
		case d.failed[dur.key]:
		case dur.key == "agent.limit_retry" && dur.val.D() < time.Second:
			d.failf(dur.key, "must be at least 1s, got %s", dur.val)
		case dur.val < 0:
			d.failf(dur.key, `must be "0s" (off) or more, got %s`, dur.val)
		case dur.val.D() > maxDuration:
			d.failf(dur.key, "%s is too long: at most %s (a year)", dur.val, Duration(maxDuration))
		}
	}
	if t := c.Agent.MaxTurnTime.D(); !d.failed["agent.max_turn_time"] && t > 0 && t < time.Minute {
		warnings = append(warnings, fmt.Sprintf("agent.max_turn_time is %s: most turns that use a tool take longer, and are interrupted", c.Agent.MaxTurnTime))
	}
	for i, b := range c.Bindings {
		key := fmt.Sprintf("bindings[%d].progress", i)
		if !d.failed[key] && b.Progress != "" && !slices.Contains(progressLevels, b.Progress) {
			d.failf(key, "%q is not one of %s", b.Progress, strings.Join(progressLevels, ", "))
		}
		key = fmt.Sprintf("bindings[%d].follow_ups", i)
		if !d.failed[key] && b.FollowUps != "" && !slices.Contains(followUpModes, b.FollowUps) {
			d.failf(key, "%q is not one of %s", b.FollowUps, strings.Join(followUpModes, ", "))
		}
	}
	return warnings
}
