package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// limitClock stands for the reset of a usage window: the conversations'
// waits for it end when the test calls reset (conv.TestHooks.LimitAfter).
type limitClock struct{ fire chan time.Time }

func newLimitClock(h *harness) *limitClock {
	c := &limitClock{fire: make(chan time.Time)}
	h.e.convs.SetTestHooks(conv.TestHooks{LimitAfter: func(time.Duration) <-chan time.Time { return c.fire }})
	return c
}

func (c *limitClock) reset() { close(c.fire) }

// limitFile makes [[LIMIT:path]] refuse turns until it is removed; a
// non-zero reset is the window's reset the fake claude reports.
func limitFile(t *testing.T, reset time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "limited")
	content := ""
	if !reset.IsZero() {
		content = fmt.Sprint(reset.Unix())
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLimitParksAndRunsAtReset: a turn refused for a usage limit is not
// posted as an error; the thread is told once when it runs (the reset the
// CLI reported), the message stays pending, another conversation on the
// same login waits too (told as well), !status shows the window, and both
// run by themselves at the reset, each once.
func TestLimitParksAndRunsAtReset(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	clock := newLimitClock(h)
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	file := limitFile(t, reset)
	prompt := "[[LIMIT:" + file + "]] hello"
	h.say("alice", "T1", prompt)
	notice := render.LimitParked(reset, true)
	h.rec.waitSend(t, notice)
	if !strings.Contains(notice, reset.UTC().Format("15:04")+" UTC") {
		t.Fatalf("notice %q does not say when", notice)
	}
	h.say("bob", "T2", "other")
	h.rec.waitSends(t, notice, 2)
	h.say("alice", "T2", "!status")
	h.rec.waitSend(t, "Usage limit reached: messages wait until "+reset.UTC().Format("15:04"))
	if got := h.rec.sends("API Error"); len(got) != 0 {
		t.Errorf("the refusal was posted raw: %q", got)
	}
	if n := h.pending("fake/C1/T1"); n != 1 {
		t.Errorf("T1 holds %d pending messages, want the parked one", n)
	}
	if got := readRecord(t, re.record); len(linesWith(got, "other")) != 0 {
		t.Errorf("the other conversation's message reached claude inside the window")
	}
	fi, err := os.Stat(filepath.Join(h.opts.StateDir, "limits", "windows.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the window's file: %v %v, want 0600\n%s", fi, err, h.logs.String())
	}

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	clock.reset()
	h.rec.waitSend(t, "echo: "+prompt)
	h.rec.waitSend(t, "echo: other")
	h.waitIdle()
	if got := h.rec.sends(notice); len(got) != 2 {
		t.Errorf("the notice was posted %d times, want once per thread", len(got))
	}
	rec := readRecord(t, re.record)
	if n, m := len(linesWith(rec, prompt)), len(linesWith(rec, "other")); n != 2 || m != 1 {
		t.Errorf("claude got the parked message %d times (want the refusal and the run) and the other %d (want 1)", n, m)
	}
	if n := h.pending("fake/C1/T1"); n != 0 {
		t.Errorf("T1 still holds %d pending messages", n)
	}
}

// TestLimitBackoffWhenResetUnknown: without a reset from the CLI (an API
// key's 429) the message waits for a bounded back-off, told as such.
func TestLimitBackoffWhenResetUnknown(t *testing.T) {
	h, _ := newRealHarness(t, nil, nil)
	clock := newLimitClock(h)
	file := limitFile(t, time.Time{})
	before := time.Now()
	h.say("alice", "T1", "[[LIMIT:"+file+"]] hi")
	got := h.rec.waitSend(t, "did not say when the limit resets")
	after := time.Now()
	ok := false
	for d := before; !d.After(after.Add(time.Minute)); d = d.Add(time.Minute) {
		if got.Text == render.LimitParked(d.Add(5*time.Minute), false) {
			ok = true
		}
	}
	if !ok {
		t.Errorf("notice %q, want the first back-off of 5 minutes", got.Text)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	clock.reset()
	h.rec.waitSend(t, "echo: [[LIMIT:"+file+"]] hi")
}

// TestLimitSurvivesRestart: a parked message and its window survive a
// restart: the new process waits for the same reset (and says so), then
// runs it once.
func TestLimitSurvivesRestart(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	newLimitClock(h)
	reset := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	file := limitFile(t, reset)
	prompt := "[[LIMIT:" + file + "]] survive"
	h.say("alice", "T1", prompt)
	notice := render.LimitParked(reset, true)
	h.rec.waitSend(t, notice)
	h.stop()
	// The window holds after the restart, even once Claude would accept.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	h = h.restart()
	clock := newLimitClock(h)
	h.rec.waitSend(t, notice)
	if n := len(linesWith(readRecord(t, re.record), prompt)); n != 1 {
		t.Fatalf("claude got the parked message %d times before the reset, want only the refusal", n)
	}
	clock.reset()
	h.rec.waitSend(t, "echo: ")
	h.waitIdle()
	if n := len(linesWith(readRecord(t, re.record), prompt)); n > 2 {
		t.Errorf("claude got the parked message %d times, want it run once after the refusal", n)
	}
	if n := h.pending(t1Key); n != 0 {
		t.Errorf("T1 still holds %d pending messages", n)
	}
}

// TestLimitWarningToldOnce: a rate_limit_event warning is told once per
// window in the thread.
func TestLimitWarningToldOnce(t *testing.T) {
	h, _ := newRealHarness(t, nil, nil)
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	marker := fmt.Sprintf("[[LIMITWARN:%d]]", reset.Unix())
	h.say("alice", "T1", marker+" one")
	h.rec.waitSend(t, "echo: "+marker+" one")
	h.say("alice", "T1", marker+" two")
	h.rec.waitSend(t, "echo: "+marker+" two")
	h.waitIdle()
	if got := h.rec.sends(render.LimitWarning(reset)); len(got) != 1 {
		t.Errorf("the warning was told %d times, want once", len(got))
	}
}

// TestRealCLILimitParkedThenRuns: the real CLI against an API that answers
// 429 (the reset only in the headers): the turn is parked with a back-off
// notice and no raw error, a message in another thread waits too, and
// both run once the API accepts again and the wait ends.
func TestRealCLILimitParkedThenRuns(t *testing.T) {
	h, api := newRealCLIHarness(t, nil)
	clock := newLimitClock(h)
	api.SetMode(fakeapi.ModeRateLimited)
	h.say("alice", "T1", "parked hello")
	h.rec.waitSend(t, "did not say when the limit resets")
	h.say("bob", "T2", "waiting too")
	h.rec.waitSends(t, "did not say when the limit resets", 2)
	if got := h.rec.sends("API Error"); len(got) != 0 {
		t.Errorf("the refusal was posted raw: %q", got)
	}
	if n := len(api.Requests()); n != 1 {
		t.Errorf("the API got %d requests inside the window, want the refused one", n)
	}
	api.SetMode(fakeapi.ModeNormal)
	clock.reset()
	h.rec.waitSend(t, "echo: parked hello")
	h.rec.waitSend(t, "echo: waiting too")
	h.waitIdle()
	if n := h.pending("fake/C1/T1"); n != 0 {
		t.Errorf("T1 still holds %d pending messages", n)
	}
}

// TestLimitScheduledRunWaits: a scheduled run due inside the window waits
// for the reset, then runs once.
func TestLimitScheduledRunWaits(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	clock := newLimitClock(h)
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	file := limitFile(t, reset)
	h.say("alice", "T1", "[[LIMIT:"+file+"]] first")
	notice := render.LimitParked(reset, true)
	h.rec.waitSend(t, notice)
	if err := h.submit(testRun("schedule:nightly@2026-03-10T01:30Z", "triage the issues")); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	h.rec.waitSends(t, notice, 2)
	if got := readRecord(t, re.record); len(linesWith(got, "triage the issues")) != 0 {
		t.Errorf("the run reached claude inside the window")
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	clock.reset()
	h.rec.waitSend(t, "echo: triage the issues")
	h.waitIdle()
	if n := len(h.rec.sends("echo: triage the issues")); n != 1 {
		t.Errorf("the run ran %d times, want once", n)
	}
}

// TestLimitParkedRunSurvivesKill: a message parked for a usage limit
// runs once at the window's reset, neither lost nor run twice, whatever
// a kill -9 interrupts: the wait itself, the re-run before its message
// reached Claude, or the re-run once Claude answered and before the reply
// was posted (the transcript holds the refusal and the answer then: the
// journal must tell which of them is this run's).
func TestLimitParkedRunSurvivesKill(t *testing.T) {
	for _, tt := range []struct {
		name  string
		point string // "" kills while the message waits for the reset
		n     int    // the point's n-th passage
	}{
		{"while parked", "", 0},
		{"as the re-run starts", conv.PointStarted, 2},
		{"re-run answered, reply not posted", conv.PointSettling, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newRealHarness(t, nil, nil)
			h.stop()
			first := newLimitFire()
			cfg := *h.cfg
			cfg.limitAfter = first.after
			var kp *killPoint
			if tt.point != "" {
				kp = newKillPoint(tt.point, tt.n)
				cfg.stopAt = kp.hook
			}
			h = startHarness(t, h.opts, &cfg, h.logs)
			reset := time.Now().Add(time.Hour).Truncate(time.Second)
			file := limitFile(t, reset)
			prompt := "[[LIMIT:" + file + "]] parked"
			h.say("alice", "T1", prompt)
			notice := render.LimitParked(reset, true)
			h.rec.waitSend(t, notice)
			if err := os.Remove(file); err != nil { // Claude would accept it now
				t.Fatal(err)
			}
			second := newLimitFire()
			if kp == nil {
				h = h.killNow(t, second)
				h.rec.waitSend(t, notice) // the window held across the kill
				second.reset()
			} else {
				first.reset()
				kp.wait(t)
				h = h.killWith(t, kp, second)
				second.reset() // the window was reopened before the kill: nothing waits
			}
			h.rec.waitSend(t, "echo: "+prompt)
			h.waitIdle()
			if n := countOf(claudeGot(t, h), prompt); n != 2 {
				t.Errorf("claude got the parked message %d times, want twice (the refusal and one run): %q", n, claudeGot(t, h))
			}
			if n := len(h.rec.sends("echo: " + prompt)); n != 1 {
				t.Errorf("the reply was posted %d times after the kill, want once", n)
			}
			if n := h.pending(t1Key); n != 0 {
				t.Errorf("T1 still holds %d pending messages", n)
			}
		})
	}
}

// limitFire is a usage window's reset for one engine: its waits end when
// the test calls reset.
type limitFire struct{ fire chan time.Time }

func newLimitFire() *limitFire { return &limitFire{fire: make(chan time.Time)} }

func (c *limitFire) after(time.Duration) <-chan time.Time { return c.fire }
func (c *limitFire) reset()                               { close(c.fire) }

// killNow copies the state dir as it is while the engine waits (what a
// SIGKILL would leave) and starts another engine on the copy, its usage
// windows on clock c.
func (h *harness) killNow(t *testing.T, c *limitFire) *harness {
	t.Helper()
	snap := t.TempDir()
	copyTree(t, h.opts.StateDir, snap)
	h.stop()
	return h.restartOn(t, snap, c)
}

// killWith is harness.kill with the restarted engine's usage windows on
// clock c.
func (h *harness) killWith(t *testing.T, kp *killPoint, c *limitFire) *harness {
	t.Helper()
	snap := t.TempDir()
	copyTree(t, h.opts.StateDir, snap)
	kp.release <- true
	h.stop()
	return h.restartOn(t, snap, c)
}

func (h *harness) restartOn(t *testing.T, stateDir string, c *limitFire) *harness {
	t.Helper()
	opts := h.opts
	opts.StateDir = stateDir
	cfg := *h.cfg
	cfg.stopAt, cfg.limitAfter = nil, c.after
	nh := startHarness(t, opts, &cfg, h.logs)
	nh.ids.Store(h.ids.Load())
	return nh
}
