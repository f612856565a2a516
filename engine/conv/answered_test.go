package conv

import (
	"context"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/platform"
)

type noAnswers struct{}

func (noAnswers) Answered(context.Context, binding.Key, string) (string, error) { return "", nil }
func (noAnswers) Answer(context.Context, binding.Key, platform.Target, string) error {
	return nil
}

// TestForgottenRoots: a thread's root read back is taken as answered when
// it is older than the cluster's record of answered messages keeps one:
// whether a host answered it cannot be told any more. A host alone, a
// record kept for ever, and a root of unknown time are judged by the
// record alone.
func TestForgottenRoots(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	const keep = 30 * 24 * time.Hour
	for _, tc := range []struct {
		name string
		c    Cluster
		at   time.Time
		want bool
	}{
		{"younger than the record", Cluster{Answers: noAnswers{}, AnsweredFor: keep}, now.Add(-keep + time.Minute), false},
		{"as old as the record", Cluster{Answers: noAnswers{}, AnsweredFor: keep}, now.Add(-keep), true},
		{"older", Cluster{Answers: noAnswers{}, AnsweredFor: keep}, now.Add(-90 * 24 * time.Hour), true},
		{"time unknown", Cluster{Answers: noAnswers{}, AnsweredFor: keep}, time.Time{}, false},
		{"a record kept for ever", Cluster{Answers: noAnswers{}}, now.Add(-90 * 24 * time.Hour), false},
		{"a host alone", Cluster{AnsweredFor: keep}, now.Add(-90 * 24 * time.Hour), false},
	} {
		if got := tc.c.forgotten(tc.at, now); got != tc.want {
			t.Errorf("%s: forgotten = %v, want %v", tc.name, got, tc.want)
		}
	}
}
