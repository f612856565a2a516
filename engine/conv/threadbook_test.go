package conv

import (
	"path/filepath"
	"testing"
	"time"
)

// TestRunThreadKeptWhileUsed: a continuing schedule's thread is forgotten
// 90 days after its last run (docs/unattended.md), not after it started:
// a thread used every month is kept, and one left unused for 90 days
// starts a new one, even when no other thread was recorded meanwhile.
func TestRunThreadKeptWhileUsed(t *testing.T) {
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	book := &threadBook{path: filepath.Join(t.TempDir(), "runs", "threads.json"), now: func() time.Time { return now }}
	if err := book.put("slack", "C1", "nightly", "T1"); err != nil {
		t.Fatal(err)
	}
	// A run every 30 days for 150 days: the thread stays.
	for day := 30; day <= 150; day += 30 {
		now = now.Add(30 * 24 * time.Hour)
		th, ok := book.get("slack", "C1", "nightly")
		if !ok || th != "T1" {
			t.Fatalf("day %d, a month after the last run: thread %q, %v; want T1", day, th, ok)
		}
		if err := book.used("slack", "C1", "nightly"); err != nil {
			t.Fatal(err)
		}
	}
	// The record is on disk: a new engine's book reads the same.
	now = now.Add(89 * 24 * time.Hour)
	again := &threadBook{path: book.path, now: func() time.Time { return now }}
	if th, ok := again.get("slack", "C1", "nightly"); !ok || th != "T1" {
		t.Errorf("89 days after the last run, read back: thread %q, %v; want T1", th, ok)
	}
	now = now.Add(2 * 24 * time.Hour)
	if th, ok := again.get("slack", "C1", "nightly"); ok {
		t.Errorf("91 days after the last run: thread %q still used; want a new one", th)
	}
}
