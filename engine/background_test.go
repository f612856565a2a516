package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
)

// TestRealBackgroundTaskReachesThread: with the fake claude, a background
// task that ends after its turn's reply brings the turn the CLI runs by
// itself into the same thread as a reply of its own; !status lists the task
// while it runs; the idle reaper leaves the process alone until the task
// ended, then reaps it.
func TestRealBackgroundTaskReachesThread(t *testing.T) {
	const idle = 20 * time.Millisecond
	h, _ := newRealHarness(t, nil, func(o *Options) { o.IdleTimeout = idle })
	gate := filepath.Join(t.TempDir(), "gate")
	h.say("alice", "T1", "[[BG:"+gate+"]]")
	h.rec.waitSend(t, "tool said: Command running in background")
	h.say("alice", "T1", "!status")
	if got := h.rec.waitSend(t, "Background tasks running"); !strings.Contains(got.Text, "Run in the background") {
		t.Errorf("!status = %q, want the running task", got.Text)
	}
	// Ten idle timeouts: the reaper would have ended an idle process by
	// now; one with a background task running it must leave alone.
	time.Sleep(10 * idle)
	if n := len(h.logs.Records("Reaping idle agent process")); n != 0 {
		t.Fatalf("reaped %d times while a background task ran", n)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := h.rec.waitSend(t, "background task: ")
	if got.To.Thread != "T1" || !strings.Contains(got.Text, "⚙️ Background command") {
		t.Errorf("own turn's reply %+v, want it in T1 with the task's summary", got)
	}
	h.logs.WaitRecords(t, waitLimit, "Reaping idle agent process", 1)
	if n := len(h.rec.sends("background task: ")); n != 1 {
		t.Errorf("%d own-turn replies, want 1", n)
	}
	// The next message is answered on its own, not with the own turn's
	// result.
	h.say("alice", "T1", "after")
	h.rec.waitSend(t, "echo: after")
}

// TestRealCLIBackgroundTaskReachesThread is the same with the real CLI
// against the fake Messages API: Bash with run_in_background ends after
// the turn's reply, and the CLI's own answer to its notification reaches
// the thread as a reply of its own, once.
func TestRealCLIBackgroundTaskReachesThread(t *testing.T) {
	h, api := newRealCLIHarness(t, func(o *Options) {
		// As root the CLI allows bypassPermissions only in a sandbox.
		o.Agent.Env["IS_SANDBOX"] = "1"
		o.Agent.PermissionMode = "bypassPermissions"
	})
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	h.say("alice", "T1", "[[BG:while [ ! -f "+gate+" ]; do sleep 0.05; done; echo bgdone]]")
	h.rec.waitSend(t, "tool said: Command running in background")
	h.say("alice", "T1", "!status")
	h.rec.waitSend(t, "Background tasks running: Run in the background")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := h.rec.waitSend(t, "background task: ")
	if got.To.Thread != "T1" || !strings.Contains(got.Text, `⚙️ Background command "Run in the background" completed (exit code 0)`) {
		t.Errorf("own turn's reply %+v, want it in T1 headed by the task's summary", got)
	}
	h.say("alice", "T1", "after")
	h.rec.waitSend(t, "echo: after")
	if n := len(h.rec.sends("background task: ")); n != 1 {
		t.Errorf("%d own-turn replies, want 1", n)
	}
	reqs := api.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.Prompt, "after") {
		t.Errorf("the last request's prompt %q, want the next message", last.Prompt)
	}
}

// TestRealStopAllStopsBackground: with the fake claude, !stop while only a
// background task runs says it keeps running; !stop all stops it (the
// CLI's stop_task), and no answer of Claude's own follows.
func TestRealStopAllStopsBackground(t *testing.T) {
	h, _ := newRealHarness(t, nil, nil)
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	h.say("alice", "T1", "[[BG:"+gate+"]]")
	h.rec.waitSend(t, "tool said: Command running in background")
	h.say("alice", "T1", "!stop")
	h.rec.waitSend(t, "Background tasks running: Run in the background (!stop all stops them)")
	h.say("alice", "T1", "!stop all")
	h.rec.waitSend(t, "Stopped the background tasks: Run in the background.")
	h.say("alice", "T1", "!status")
	h.rec.waitSend(t, "State: idle")
	if got := h.rec.sends("State: idle"); strings.Contains(got[len(got)-1], "Background tasks running") {
		t.Errorf("!status after !stop all = %q, want no background task", got[len(got)-1])
	}
	// The gate opening now ends nothing: the task is gone.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.say("alice", "T1", "after")
	h.rec.waitSend(t, "echo: after")
	if n := len(h.rec.sends("background task: ")); n != 0 {
		t.Errorf("%d own-turn replies after !stop all, want none", n)
	}
}

// TestRealOwnReplySurvivesKill: the reply of a turn the CLI ran by itself
// (after a background task ended) is journaled before it is posted; a
// kill -9 between the CLI's output and the post, or between the post and
// the journal's ack, neither loses it nor doubles it where the platform
// finds its posts again. Where it cannot, the reply comes again once,
// headed by a line that says why.
func TestRealOwnReplySurvivesKill(t *testing.T) {
	for _, tt := range []struct {
		name     string
		point    string
		replier  bool // the platform finds its replies again (platform.Replier)
		want     int  // the reply's posts over both runs
		notice   bool // the restarted run says it posts it again
		restarts int  // posts of the restarted run
	}{
		{"journaled, not posted", conv.PointOwnKept, false, 1, false, 1},
		{"journaled, not posted, replier", conv.PointOwnKept, true, 1, false, 1},
		{"posted, not acknowledged, replier", conv.PointOwnSent, true, 1, false, 0},
		{"posted, not acknowledged, plain", conv.PointOwnSent, false, 2, true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chat := newFakeChat()
			kp := newKillPoint(tt.point, 1)
			h, _ := newRealHarness(t, nil, nil)
			h.stop()
			cfg := *h.cfg
			cfg.stopAt = kp.hook
			if tt.replier {
				cfg.chat = chat
			}
			h = startHarness(t, h.opts, &cfg, h.logs)
			gate := filepath.Join(t.TempDir(), "gate")
			t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
			h.say("alice", "T1", "[[BG:"+gate+"]]")
			h.rec.waitSend(t, "tool said: Command running in background")
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			kp.wait(t)
			before := len(h.rec.sends("background task: "))
			first := h.rec
			h = h.kill(t, kp)
			h.logs.WaitRecords(t, waitLimit, "Recovering pending messages", 1)
			if tt.restarts > 0 {
				h.rec.waitSend(t, "background task: ")
			}
			h.waitIdle()
			after := h.rec.sends("background task: ")
			if n := len(first.sends("background task: ")); n != before {
				t.Errorf("the killed run posted %d own replies after its kill, want %d", n, before)
			}
			if before+len(after) != tt.want || len(after) != tt.restarts {
				t.Errorf("own reply posted %d times before the kill and %d after, want %d in all, %d after",
					before, len(after), tt.want, tt.restarts)
			}
			for _, s := range after {
				if !strings.Contains(s, "⚙️ Background command") || strings.Contains(s, "cc-connect restarted") {
					t.Errorf("the restarted run posted %q, want the own reply as it was", s)
				}
			}
			if got := len(h.rec.sends(render.OwnReplyAgain)); got != map[bool]int{true: 1}[tt.notice] {
				t.Errorf("%d notices that the reply comes again, want %v", got, tt.notice)
			}
			if n := h.pending("fake/C1/T1"); n != 0 {
				t.Errorf("%d journal entries pending after the reply was posted, want none", n)
			}
			// The next message is answered in the same thread, once.
			h.say("alice", "T1", "after")
			h.rec.waitSend(t, "echo: after")
			if n := len(h.rec.sends("background task: ")); n != len(after) {
				t.Errorf("own reply posted again with the next message (%d)", n)
			}
		})
	}
}

// TestRealLiveViewShowsBackground: the status message of a running turn
// lists the background tasks running, as !status does: those an earlier
// turn left running as the turn starts, and (verbose, where the last
// edit is flushed at the turn's end) one its own Bash call started. Once
// they ended, a turn shows none.
func TestRealLiveViewShowsBackground(t *testing.T) {
	const shown = "Background tasks running: Run in the background"
	h, _ := newRealHarness(t, nil, func(o *Options) { o.Bindings[0].Progress = binding.ProgressVerbose })
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	h.say("alice", "T1", "[[BG:"+gate+"]]")
	h.rec.waitSend(t, "tool said: Command running in background")
	h.waitIdle()
	if !showsInProgress(h.rec.snapshot(), shown) {
		t.Errorf("the first turn's status message never listed the task it started:\n%s", dump(h.rec.snapshot()))
	}
	mark := len(h.rec.snapshot())
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	if calls := h.rec.snapshot()[mark:]; !showsInProgress(calls, shown) {
		t.Errorf("a turn that started while the task ran did not list it:\n%s", dump(calls))
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.rec.waitSend(t, "background task: ")
	h.waitIdle()
	mark = len(h.rec.snapshot())
	h.say("alice", "T1", "[[TOOL:echo third]]")
	h.rec.waitSend(t, "tool said")
	h.waitIdle()
	if calls := h.rec.snapshot()[mark:]; showsInProgress(calls, "Background tasks running") {
		t.Errorf("a turn after the task ended lists background tasks:\n%s", dump(calls))
	}
}

// showsInProgress reports whether a status message (posted or edited)
// other than a reply shows text.
func showsInProgress(calls []recorded, text string) bool {
	for _, c := range calls {
		if (c.Kind == "send" || c.Kind == "edit") && strings.Contains(c.Text, text) &&
			!strings.Contains(c.Text, "echo: ") && !strings.Contains(c.Text, "tool said") {
			return true
		}
	}
	return false
}

// TestRealOwnReplyBetweenItsPartsAcrossKills: on each platform, a kill
// between the parts of Claude's own answer (a long one is split) leaves
// the thread showing it once, whole, after the restart: Slack finds the
// parts by their key, Discord by their nonce, and on Telegram the parts
// recorded as landed are skipped.
func TestRealOwnReplyBetweenItsPartsAcrossKills(t *testing.T) {
	const summary = `Background command "Run in the background" completed (exit code 0)`
	own := "⚙️ " + summary + "\n\nbackground task: " + summary
	for _, kind := range []string{"slack", "discord", "telegram"} {
		t.Run(kind, func(t *testing.T) {
			s := newStreamStore(kind)
			h, _ := newRealHarness(t, nil, nil)
			h.stop()
			cfg := *h.cfg
			cfg.adapter = s.adapter
			h = startHarness(t, h.opts, &cfg, h.logs)
			gate := filepath.Join(t.TempDir(), "gate")
			t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
			h.say("alice", "T1", "[[BG:"+gate+"]]")
			s.waitFor(t, "the turn's reply", func() bool {
				return strings.Contains(strings.Join(s.visible(), ""), "Command running in background")
			})
			h.waitIdle()
			before := len(s.visible())
			held, release := make(chan int, 1), make(chan struct{})
			s.mu.Lock()
			s.afterPart = func(part int) {
				held <- part
				<-release
			}
			s.mu.Unlock()
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			select {
			case <-held:
			case <-time.After(waitLimit):
				t.Fatal("the own answer's first part was never posted")
			}
			h = h.killStreamHere(t, s, func() { close(release) })
			h.logs.WaitRecords(t, waitLimit, "Completing Claude's own reply that was being posted at the restart", 1)
			h.waitIdle()
			if got, want := s.visible()[before:], splitStream(own); !slices.Equal(got, want) {
				t.Errorf("after the restart the thread shows %q, want the own answer once, whole: %q", got, want)
			}
			if sends := h.rec.sends("here it is again"); len(sends) != 0 {
				t.Errorf("the restart said %q, want no notice", sends)
			}
		})
	}
}
