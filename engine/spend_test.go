package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/spend"
	"github.com/cc-connect/cc-connect/trigger"
)

func openLedger(t *testing.T, now func() time.Time) *spend.Ledger {
	t.Helper()
	l, err := spend.Open(filepath.Join(t.TempDir(), "spend.json"), time.UTC, now)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The fake agent reports a session total of $0.01 per message: a user cap
// of $0.015 lets two turns start (the second ends over it) and refuses
// the third, saying which cap and when it resets; the admin is exempt when
// configured, and runs are refused like anyone.
func TestSpendingCapRefusesTheNextTurn(t *testing.T) {
	t.Parallel()
	noon := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	ledger := openLedger(t, func() time.Time { return noon })
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.Spending, o.SpendAdminsExempt = ledger, true
		o.Bindings[0].Caps = spend.Caps{UserDaily: 0.015, Daily: 0.035}
	})
	h.say("bob", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	h.say("bob", "T1", "two")
	h.rec.waitSend(t, "echo: two")
	h.waitIdle()
	h.say("bob", "T1", "three")
	refusal := h.rec.waitSend(t, "spending cap")
	want := "You have reached your daily spending cap of $0.01 ($0.02 spent today)"
	if !strings.HasPrefix(refusal.Text, "You have reached your daily spending cap of $0.0") || !strings.Contains(refusal.Text, "2026-03-11 00:00 UTC (in 12h") {
		t.Errorf("refusal %q, want like %q, resetting at midnight", refusal.Text, want)
	}
	h.waitIdle()
	if got := h.rec.sends("echo: three"); len(got) != 0 {
		t.Errorf("the refused turn ran: %q", got)
	}
	if got := ledger.User("fake/*", "bob").Day; got < 0.0199 || got > 0.0201 {
		t.Errorf("bob spent $%.4f today, want $0.02", got)
	}
	h.say("bob", "T1", "!btw why so quiet?")
	h.rec.waitSend(t, render.SidePrefix+"You have reached your daily spending cap")
	h.waitIdle()
	// The admin is exempt from the user cap and still charged.
	h.say("alice", "T2", "admin turn")
	h.rec.waitSend(t, "echo: admin turn")
	h.waitIdle()
	if got := ledger.Binding("fake/*").Day; got < 0.0299 {
		t.Errorf("binding spent $%.4f, want the admin's turn counted", got)
	}
	h.say("bob", "T1", "!status")
	status := h.rec.waitSend(t, "Spend: ")
	if !strings.Contains(status.Text, "Spend: binding $0.03 of $0.04 today") || !strings.Contains(status.Text, "you $0.02 of $0.01 today") {
		t.Errorf("!status spend line:\n%s", status.Text)
	}
	// Over the binding's own cap now ($0.04 with one more turn): a run is
	// refused for good, and says so in the channel.
	h.say("alice", "T2", "admin again")
	h.rec.waitSend(t, "echo: admin again")
	h.waitIdle()
	// A side question's fork is charged from its parent's total: one
	// message more than the parent, $0.01.
	before := ledger.User("fake/*", "alice").Day
	h.say("alice", "T2", "!btw what now?")
	h.rec.waitSend(t, render.SidePrefix+"echo: what now?")
	h.waitIdle()
	if got := ledger.User("fake/*", "alice").Day - before; got < 0.0099 || got > 0.0101 {
		t.Errorf("the fork was charged $%.4f, want $0.01", got)
	}
	err := h.submit(testRun("schedule:nightly@y", "costly"))
	if !errors.Is(err, trigger.ErrRefused) {
		t.Fatalf("run over the binding cap: %v, want ErrRefused", err)
	}
	h.rec.waitSend(t, "This binding has reached its daily spending cap")
}

// A run journaled before a restart and submitted again is a duplicate,
// even over a cap: it is not refused, and nothing is posted about it.
func TestResubmittedRunIsNotRefusedOverACap(t *testing.T) {
	t.Parallel()
	ledger := openLedger(t, time.Now)
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.Spending = ledger
		o.Bindings[0].Caps = spend.Caps{Daily: 0.005}
	})
	r := testRun("schedule:nightly@z", "under the cap")
	if err := h.submit(r); err != nil {
		t.Fatal(err)
	}
	h.rec.waitSend(t, "echo: under the cap")
	h.waitIdle()
	if err := h.submit(r); !errors.Is(err, trigger.ErrDuplicate) {
		t.Errorf("resubmitted over the cap: %v, want ErrDuplicate", err)
	}
	if got := h.rec.sends("spending cap"); len(got) != 0 {
		t.Errorf("a refusal was posted for a duplicate: %q", got)
	}
}

// Five threads of one user start turns at once against a daily cap that
// two turns fill: each turn reserves its estimate before it starts, so two
// run and three are refused, saying that running turns hold the rest, and
// what was spent stays under the cap (checked before and charged after,
// all five ran). Once they end, one more turn may start under the cap and
// end over it by one turn; the next is refused.
func TestConcurrentThreadsKeepTheUserCap(t *testing.T) {
	t.Parallel()
	ledger := openLedger(t, time.Now)
	ledger.SetReserve(0.01) // what a turn of the fake costs
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.Spending = ledger
		o.Bindings[0].Caps = spend.Caps{UserDaily: 0.025}
	})
	const threads = 5
	for i := range threads {
		h.say("bob", fmt.Sprintf("T%d", i), fmt.Sprintf("[[WAIT]] thread %d", i))
	}
	h.rec.waitSends(t, "This message would take you over your daily spending cap of $0.03", threads-2)
	h.fa.waitFor(t, "two turns running", func(fa *fakeAgents) bool { return fa.waiting == 2 })
	if b, u := ledger.Held("fake/*", "bob"); b < 0.0199 || b > 0.0201 || u != b {
		t.Errorf("the running turns hold $%.4f (bob $%.4f), want $0.02", b, u)
	}
	h.fa.release(t)
	h.fa.release(t)
	h.waitIdle()
	if got := h.rec.sends("echo: [[WAIT]] thread"); len(got) != 2 {
		t.Errorf("%d turns ran, want 2: %q", len(got), got)
	}
	if got := ledger.User("fake/*", "bob").Day; got < 0.0199 || got > 0.0201 {
		t.Errorf("bob spent $%.4f, want $0.02 under the $0.025 cap", got)
	}
	if b, _ := ledger.Held("fake/*", "bob"); b != 0 {
		t.Errorf("ended turns still hold $%.4f", b)
	}
	h.say("bob", "T9", "one more")
	h.rec.waitSend(t, "echo: one more")
	h.waitIdle()
	h.say("bob", "T9", "and another")
	h.rec.waitSend(t, "You have reached your daily spending cap of $0.03 ($0.03 spent today)")
	if got := ledger.User("fake/*", "bob").Day; got > 0.025+0.01+1e-9 {
		t.Errorf("bob spent $%.4f: over the cap by more than one turn", got)
	}
}

// A turn admitted under the caps that then does not run (its worktree
// cannot be made), and a side question whose fork fails, free what they
// reserved: the caps are not held by work that never ran.
func TestReservationsFreedWhenNothingRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		worktree bool
		text     string
		notice   string
	}{
		{"a worktree that cannot be made", true, "hello", "git worktree could not be made"},
		{"a side question that fails", false, "!btw [[CRASH]] why?", render.SidePrefix + "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ledger := openLedger(t, time.Now)
			h := newHarness(t, func(o *Options, _ *harnessConfig) {
				o.Spending = ledger
				o.Bindings[0].Caps = spend.Caps{UserDaily: 5}
				o.Bindings[0].Worktree = tc.worktree // the workspace is no git repository
			})
			if !tc.worktree {
				h.say("bob", "T1", "first")
				h.rec.waitSend(t, "echo: first")
				h.waitIdle()
			}
			h.say("bob", "T1", tc.text)
			h.rec.waitSend(t, tc.notice)
			h.waitIdle()
			if b, u := ledger.Held("fake/*", "bob"); b != 0 || u != 0 {
				t.Errorf("$%.2f still held (bob $%.2f) after %s", b, u, tc.name)
			}
		})
	}
}
