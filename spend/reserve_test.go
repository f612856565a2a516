package spend

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startAtOnce has n turns of user (each in its own conversation) reserve
// at the same moment, all before any of them ends, as n threads starting
// together do; it returns the keys of those that may start.
func startAtOnce(t *testing.T, l *Ledger, round, n int, binding string, user func(i int) string, caps Caps) []Hold {
	t.Helper()
	var (
		mu      sync.Mutex // guards started
		started []Hold
		wg      sync.WaitGroup
	)
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			h := Hold{Key: fmt.Sprintf("conv-%d-%d", round, i), Binding: binding, User: user(i)}
			<-gate
			over, err := l.Reserve(h, caps, false)
			if err != nil {
				t.Error(err)
			}
			if over == nil {
				mu.Lock()
				started = append(started, h)
				mu.Unlock()
			}
		})
	}
	close(gate)
	wg.Wait()
	return started
}

// TestConcurrentTurnsKeepTheCap: rounds of n turns that start at once,
// each ending only when all of the round have reserved, until a round
// starts none: what was spent ends at most one turn's cost over the cap,
// where checking before and charging after let every turn of the first
// round run (5 threads ran 5 times a user's daily cap). Turns cost what
// they hold here; one dearer than its reservation can add the difference
// (TestEstimateFollowsRecentTurns: the next ones hold what it cost).
func TestConcurrentTurnsKeepTheCap(t *testing.T) {
	t.Parallel()
	one := func(int) string { return "U1" }
	many := func(i int) string { return fmt.Sprintf("U%d", i) }
	for _, tc := range []struct {
		name      string
		caps      Caps
		user      func(int) string
		reserve   float64
		cost      float64 // what each turn costs
		firstRuns int     // turns the first round starts
	}{
		{"user cap, turns as dear as the reserve", Caps{UserDaily: 1}, one, 0.3, 0.3, 3},
		{"user cap smaller than one turn", Caps{UserDaily: 0.5}, one, 0.3, 0.6, 1},
		{"binding cap, a user each", Caps{Daily: 2}, many, 0.5, 0.5, 4},
		{"monthly user cap", Caps{UserMonthly: 1.5}, one, 0.5, 0.5, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
			l := open(t, filepath.Join(privateDir(t), "spend.json"), time.UTC, c)
			l.SetReserve(tc.reserve)
			const n = 16
			limit := max(tc.caps.Daily, tc.caps.UserDaily, tc.caps.UserMonthly)
			var ran int
			for round := 0; ; round++ {
				started := startAtOnce(t, l, round, n, "slack/C1", tc.user, tc.caps)
				if round == 0 && len(started) != tc.firstRuns {
					t.Errorf("the first round started %d turns, want %d", len(started), tc.firstRuns)
				}
				if len(started) == 0 {
					break
				}
				if round > 20 {
					t.Fatal("turns still start after 20 rounds")
				}
				for _, h := range started {
					if _, err := l.Settle(h.Key, Turn{Binding: h.Binding, User: h.User, SessionID: h.Key, TotalUSD: tc.cost}); err != nil {
						t.Fatal(err)
					}
					ran++
				}
			}
			spent := l.Binding("slack/C1")
			total := spent.Day
			if tc.caps.UserDaily > 0 || tc.caps.UserMonthly > 0 {
				total = l.User("slack/C1", "U1").Month
			}
			if total > limit+tc.cost+1e-9 {
				t.Errorf("%d turns ran, spending $%.2f: over the cap of $%.2f by more than one turn ($%.2f)", ran, total, limit, tc.cost)
			}
			if total < limit-1e-9 {
				t.Errorf("%d turns ran, spending $%.2f: turns were refused under the cap of $%.2f", ran, total, limit)
			}
			if b, u := l.Held("slack/C1", "U1"); b != 0 || u != 0 {
				t.Errorf("settled turns still hold $%.2f / $%.2f", b, u)
			}
		})
	}
}

// TestReservationsSurviveARestart: a turn cut by a crash keeps its
// reservation in the file, so that turns started after the restart still
// count it; the turn that runs again takes it over (held once, not twice),
// and one whose turn never runs again stops counting after the grace.
func TestReservationsSurviveARestart(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	path := filepath.Join(dir, "spend.json")
	c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	caps := Caps{UserDaily: 1}
	l := open(t, path, time.UTC, c)
	l.SetReserve(0.6)
	if over, err := l.Reserve(Hold{Key: "T1", Binding: "b", User: "u"}, caps, false); over != nil || err != nil {
		t.Fatalf("the first turn: %v, %v", over, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the reservation was not written: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}

	// The crash: l is dropped without a settle.
	l2 := open(t, path, time.UTC, c)
	l2.SetReserve(0.6)
	if _, u := l2.Held("b", "u"); !near(u, 0.6) {
		t.Fatalf("after the restart the user holds $%.2f, want $0.60", u)
	}
	over, err := l2.Reserve(Hold{Key: "T2", Binding: "b", User: "u"}, caps, false)
	if err != nil || over == nil || !near(over.Held, 0.6) || over.Spent != 0 {
		t.Fatalf("another thread after the restart: %+v, %v; want refused for the $0.60 held", over, err)
	}
	want := "This message would take you over your daily spending cap of $1.00: $0.00 spent today and $0.60 held by turns still running, " +
		"and a turn is reckoned at $0.60. It was not sent to Claude: send it again once those turns end (the cap resets at 2025-06-02 00:00 UTC, in 12h 0m)."
	if got := over.Text(c.now()); got != want {
		t.Errorf("Text:\n%s\nwant\n%s", got, want)
	}
	// The cut turn runs again (a restart does not refuse it) and takes
	// its reservation over.
	if over, err := l2.Reserve(Hold{Key: "T1", Binding: "b", User: "u"}, caps, true); over != nil || err != nil {
		t.Fatalf("the resumed turn: %v, %v", over, err)
	}
	if _, u := l2.Held("b", "u"); !near(u, 0.6) {
		t.Errorf("the resumed turn holds $%.2f with its first run's, want $0.60 once", u)
	}
	if _, err := l2.Settle("T1", Turn{Binding: "b", User: "u", SessionID: "s1", TotalUSD: 0.4}); err != nil {
		t.Fatal(err)
	}
	if err := l2.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, u := open(t, path, time.UTC, c).Held("b", "u"); u != 0 {
		t.Errorf("a settled reservation is still in the file: $%.2f", u)
	}

	// A reservation whose turn never comes back counts for the grace only.
	if over, _ := l2.Reserve(Hold{Key: "T3", Binding: "b", User: "u"}, caps, false); over != nil {
		t.Fatalf("T3: %v", over)
	}
	l3 := open(t, path, time.UTC, c)
	if _, u := l3.Held("b", "u"); !near(u, 0.6) {
		t.Fatalf("T3's reservation after the restart: $%.2f", u)
	}
	c.set(c.now().Add(orphanGrace - time.Second))
	if _, u := l3.Held("b", "u"); !near(u, 0.6) {
		t.Errorf("T3's reservation was dropped before the grace ended")
	}
	c.set(c.now().Add(time.Second))
	if _, u := l3.Held("b", "u"); u != 0 {
		t.Errorf("T3's reservation still counts after the grace: $%.2f", u)
	}
	if over, _ := l3.Reserve(Hold{Key: "T4", Binding: "b", User: "u"}, caps, false); over != nil {
		t.Errorf("a turn after the grace: %v", over)
	}
}

// TestEstimateFollowsRecentTurns: a turn holds the larger of the reserve
// and the dearest of the binding's last 20 turns.
func TestEstimateFollowsRecentTurns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(privateDir(t), "spend.json")
	c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	l := open(t, path, time.UTC, c)
	if got := l.Estimate("b"); !near(got, DefaultReserve) {
		t.Errorf("no turns yet: %v, want the default reserve", got)
	}
	l.SetReserve(0.2)
	settle := func(session string, total float64) {
		t.Helper()
		if _, err := l.Settle("k", Turn{Binding: "b", User: "u", SessionID: session, TotalUSD: total}); err != nil {
			t.Fatal(err)
		}
	}
	settle("s1", 0.1)
	if got := l.Estimate("b"); !near(got, 0.2) {
		t.Errorf("after a $0.10 turn: %v, want the reserve $0.20", got)
	}
	settle("s2", 2.5) // a dear turn
	settle("s1", 0.2) // s1's second turn: $0.10
	if got := l.Estimate("b"); !near(got, 2.5) {
		t.Errorf("after a $2.50 turn: %v", got)
	}
	// Two turns of a fallback settle as one.
	if _, err := l.Settle("k", Turn{Binding: "b", User: "u", SessionID: "s3", TotalUSD: 1.5},
		Turn{Binding: "b", User: "u", SessionID: "s4", TotalUSD: 1.5}); err != nil {
		t.Fatal(err)
	}
	if got := l.Estimate("b"); !near(got, 3) {
		t.Errorf("after a $3 turn in two results: %v", got)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	reopened := open(t, path, time.UTC, c)
	reopened.SetReserve(0.2)
	if got := reopened.Estimate("b"); !near(got, 3) {
		t.Errorf("after a restart: %v, want the recent turns kept", got)
	}
	for i := range recentTurns {
		settle(fmt.Sprintf("cheap%d", i), 0.05)
	}
	if got := l.Estimate("b"); !near(got, 0.2) {
		t.Errorf("after %d cheap turns: %v, want the reserve again", recentTurns, got)
	}
	if got := l.Estimate("other"); !near(got, 0.2) {
		t.Errorf("another binding: %v", got)
	}
}

// TestReserveRules: exempt turns hold but are never refused; without caps
// nothing is held; a refused turn holds nothing; Release frees a hold.
func TestReserveRules(t *testing.T) {
	t.Parallel()
	path := filepath.Join(privateDir(t), "spend.json")
	c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	l := open(t, path, time.UTC, c)
	l.SetReserve(1)
	caps := Caps{Daily: 1.5}
	if over, _ := l.Reserve(Hold{Key: "a", Binding: "b", User: "u"}, caps, false); over != nil {
		t.Fatal(over)
	}
	over, _ := l.Reserve(Hold{Key: "x", Binding: "b", User: "v"}, caps, false)
	if over == nil || over.User != "" || !strings.HasPrefix(over.Text(c.now()), "This message would take this binding over its daily spending cap of $1.50") {
		t.Fatalf("a second turn: %+v", over)
	}
	if b, _ := l.Held("b", "v"); !near(b, 1) {
		t.Errorf("the refused turn holds something: the binding holds $%.2f", b)
	}
	if over, _ := l.Reserve(Hold{Key: "admin", Binding: "b", User: "root"}, caps, true); over != nil {
		t.Errorf("an exempt turn was refused: %v", over)
	}
	if b, _ := l.Held("b", ""); !near(b, 2) {
		t.Errorf("the exempt turn holds nothing: the binding holds $%.2f", b)
	}
	if over, _ := l.Reserve(Hold{Key: "free", Binding: "nocap", User: "u"}, Caps{}, false); over != nil {
		t.Errorf("no caps, yet refused: %v", over)
	}
	if b, _ := l.Held("nocap", "u"); b != 0 {
		t.Errorf("a binding without caps holds $%.2f", b)
	}
	for _, k := range []string{"a", "admin"} {
		if err := l.Release(k); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := open(t, path, time.UTC, c).Held("b", ""); b != 0 {
		t.Errorf("released holds are still in the file: $%.2f", b)
	}
	// Check, which a run's submission asks, counts what was spent only.
	if _, err := l.Reserve(Hold{Key: "a", Binding: "b", User: "u"}, caps, false); err != nil {
		t.Fatal(err)
	}
	if o := l.Check("b", "v", caps); o != nil {
		t.Errorf("Check refuses for what running turns hold: %v", o)
	}
}
