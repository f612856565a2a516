package schedule

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cc-connect/cc-connect/internal/testlog"
	"github.com/cc-connect/cc-connect/trigger"
)

// fakeSubmitter is the engine's side as the scheduler sees it: idempotent
// on run ids, as the real one is through its inbox and seen ids.
type fakeSubmitter struct {
	mu      sync.Mutex // guards the fields below
	ids     map[string]bool
	working map[string]bool
	fail    error // returned by Submit while set
	calls   int

	got chan trigger.Run // every run accepted (not duplicates)
}

func newFakeSubmitter() *fakeSubmitter {
	return &fakeSubmitter{ids: map[string]bool{}, working: map[string]bool{}, got: make(chan trigger.Run, 100)}
}

func (f *fakeSubmitter) Submit(_ context.Context, r trigger.Run) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return f.fail
	}
	if f.ids[r.ID] {
		return trigger.ErrDuplicate
	}
	f.ids[r.ID] = true
	f.got <- r
	return nil
}

func (f *fakeSubmitter) Working(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.working[id]
}

func (f *fakeSubmitter) setWorking(id string, w bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.working[id] = w
}

func (f *fakeSubmitter) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

func (f *fakeSubmitter) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

var _ trigger.Submitter = (*fakeSubmitter)(nil)

// harness runs one Scheduler on a fake clock; restart stops it and starts
// a new one on the same ledger file, as a restart of cc-connect would.
type harness struct {
	t      *testing.T
	clock  *clockwork.FakeClock
	sub    *fakeSubmitter
	path   string
	logs   *testlog.Buffer
	scheds []Schedule
	serves func(platform, channel string) bool // Options.Serves
	pauses Pauses                              // Options.Pauses

	sched  *Scheduler
	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, start string, scheds ...Schedule) *harness {
	t.Helper()
	at, err := time.Parse(time.RFC3339, start)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, clock: clockwork.NewFakeClockAt(at), sub: newFakeSubmitter(),
		path: filepath.Join(privateDir(t), "schedules", "ledger.json"), logs: &testlog.Buffer{}, scheds: scheds}
	t.Cleanup(h.stop)
	return h
}

func schedule(t *testing.T, name, expr string, catchUp time.Duration, overlap Overlap) Schedule {
	t.Helper()
	c, err := ParseCron(expr, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return Schedule{Name: name, Cron: c, Platform: "slack", Channel: "C1", Prompt: "triage the open issues",
		CatchUp: catchUp, Overlap: overlap}
}

// start starts a scheduler and waits until it is idle on its timer.
func (h *harness) start() {
	h.t.Helper()
	ledger, err := OpenLedger(h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	h.sched, err = New(Options{Schedules: h.scheds, Ledger: ledger, Submitter: h.sub, Clock: h.clock,
		Logger: slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Serves: h.serves, Pauses: h.pauses})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.sched.Run(ctx) }()
	h.idle()
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
	h.cancel = nil
}

func (h *harness) restart() {
	h.t.Helper()
	h.stop()
	h.start()
}

// wantLastError checks that the one schedule lists a last error with
// want in it, and its time.
func (h *harness) wantLastError(want string) {
	h.t.Helper()
	list, err := h.sched.List(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	if len(list) != 1 || !strings.Contains(list[0].LastError, want) || list[0].LastErrorAt.IsZero() {
		h.t.Fatalf("last error %+v, want %q", list, want)
	}
}

// idle waits until the scheduler waits on its timer: the pass is done.
func (h *harness) idle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.clock.BlockUntilContext(ctx, 1); err != nil {
		h.t.Fatalf("the scheduler never waited on its timer: %v", err)
	}
}

// advance moves the clock and waits for the pass it triggers to finish.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.idle()
}

// expectRun takes the next submitted run and checks its id.
func (h *harness) expectRun(id string) trigger.Run {
	h.t.Helper()
	select {
	case r := <-h.sub.got:
		if r.ID != id {
			h.t.Fatalf("submitted %s, want %s", r.ID, id)
		}
		return r
	case <-time.After(10 * time.Second):
		h.t.Fatalf("no run submitted, want %s", id)
	}
	return trigger.Run{}
}

// expectNoRun checks that nothing was submitted (call after idle: the
// pass that could have submitted is over).
func (h *harness) expectNoRun() {
	h.t.Helper()
	select {
	case r := <-h.sub.got:
		h.t.Fatalf("unexpected run %s", r.ID)
	default:
	}
}

func TestRunFiresAtItsInstant(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T01:58:00Z", schedule(t, "nightly", "0 2 * * *", time.Hour, OverlapSkip))
	h.start()
	h.advance(time.Minute)
	h.expectNoRun()
	h.advance(time.Minute)
	r := h.expectRun("schedule:nightly@2025-06-01T02:00Z")
	want := trigger.Run{ID: "schedule:nightly@2025-06-01T02:00Z", Kind: trigger.KindSchedule, Name: "nightly",
		Platform: "slack", Channel: "C1", Conversation: "schedule:nightly@2025-06-01T02:00Z",
		Header: "Scheduled: nightly", Prompt: "triage the open issues", UserID: "schedule:nightly",
		UserName: "schedule nightly"}
	if !r.At.Equal(time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("At = %s", r.At)
	}
	r.At = time.Time{}
	if r != want {
		t.Errorf("run:\n got %+v\nwant %+v", r, want)
	}
	h.advance(24 * time.Hour)
	h.expectRun("schedule:nightly@2025-06-02T02:00Z")
}

func TestContinueModeSharesOneConversation(t *testing.T) {
	t.Parallel()
	sc := schedule(t, "standup", "0 9 * * *", time.Hour, OverlapSkip)
	sc.Continue = true
	h := newHarness(t, "2025-06-01T08:59:00Z", sc)
	h.start()
	h.advance(time.Minute)
	a := h.expectRun("schedule:standup@2025-06-01T09:00Z")
	h.advance(24 * time.Hour)
	b := h.expectRun("schedule:standup@2025-06-02T09:00Z")
	if a.Conversation != "schedule:standup" || b.Conversation != a.Conversation {
		t.Errorf("conversations %q and %q, want both schedule:standup", a.Conversation, b.Conversation)
	}
}

func TestRestartNeitherSkipsNorRepeats(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T01:59:00Z", schedule(t, "nightly", "0 2 * * *", time.Hour, OverlapSkip))
	h.start()
	h.advance(time.Minute)
	h.expectRun("schedule:nightly@2025-06-01T02:00Z")
	h.advance(10 * time.Minute)
	h.restart() // within catch_up of the run just made: it must not come again
	h.expectNoRun()
	if n := h.sub.callCount(); n != 1 {
		t.Errorf("Submit called %d times, want 1", n)
	}
	h.advance(24 * time.Hour)
	h.expectRun("schedule:nightly@2025-06-02T02:00Z")
}

// TestCrashBetweenJournalAndLedger: the engine journaled the run but the
// ledger write never happened (a crash in between). The next start submits
// the same id again, the engine says duplicate, and the run is settled
// without running twice.
func TestCrashBetweenJournalAndLedger(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T01:59:00Z", schedule(t, "nightly", "0 2 * * *", time.Hour, OverlapSkip))
	h.start()
	before, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	h.advance(time.Minute)
	h.expectRun("schedule:nightly@2025-06-01T02:00Z")
	h.stop()
	if err := os.WriteFile(h.path, before, 0o600); err != nil { // the ledger as the crash left it
		t.Fatal(err)
	}
	h.clock.Advance(5 * time.Minute)
	h.start()
	h.expectNoRun()
	if n := h.sub.callCount(); n != 2 {
		t.Errorf("Submit called %d times, want 2 (the run, then its duplicate)", n)
	}
	h.logs.WaitRecord(t, 10*time.Second, "Scheduled run submitted", "run_id", "schedule:nightly@2025-06-01T02:00Z")
	h.restart()
	if n := h.sub.callCount(); n != 2 {
		t.Errorf("after a second restart Submit was called %d times, want 2: the duplicate was not settled", n)
	}
}

func TestCatchUpAtStartUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		down    time.Duration // from 01:59 (the last start) until the next start
		catchUp time.Duration
		want    string // run id expected at start-up, "" for none
	}{
		{name: "missed run younger than catch_up runs once", down: 31 * time.Minute, catchUp: time.Hour, want: "schedule:nightly@2025-06-01T02:00Z"},
		{name: "missed run older than catch_up is skipped", down: 3 * time.Hour, catchUp: time.Hour},
		{name: "zero catch_up skips after the first minute", down: 5 * time.Minute, catchUp: 0},
		{name: "zero catch_up still runs within the first minute", down: time.Minute + 30*time.Second, catchUp: 0, want: "schedule:nightly@2025-06-01T02:00Z"},
		{name: "several missed runs collapse into the latest", down: 72*time.Hour + 30*time.Minute, catchUp: time.Hour, want: "schedule:nightly@2025-06-04T02:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "2025-06-01T01:59:00Z", schedule(t, "nightly", "0 2 * * *", tt.catchUp, OverlapSkip))
			h.start()
			h.stop()
			h.clock.Advance(tt.down)
			h.start()
			if tt.want == "" {
				h.expectNoRun()
				h.logs.WaitRecords(t, 10*time.Second, "Scheduled run skipped: missed by more than catch_up", 1)
				h.idle()
				h.wantLastError("more than catch_up")
			} else {
				h.expectRun(tt.want)
			}
			h.restart()
			h.expectNoRun() // settled either way: never again
		})
	}
}

func TestCollapseWhileDownHourly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T00:30:00Z", schedule(t, "hourly", "0 * * * *", 2*time.Hour, OverlapSkip))
	h.start()
	h.stop()
	h.clock.Advance(5*time.Hour + 10*time.Minute) // 01:00 … 05:00 missed
	h.start()
	h.expectRun("schedule:hourly@2025-06-01T05:00Z")
	h.expectNoRun()
	recs := h.logs.WaitRecords(t, 10*time.Second, "Scheduled runs collapse into the latest one", 1)
	if recs[0]["first_missed"] != "2025-06-01T01:00:00Z" {
		t.Errorf("first_missed = %v", recs[0]["first_missed"])
	}
}

func TestOverlapSkip(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T00:59:00Z", schedule(t, "hourly", "0 * * * *", time.Hour, OverlapSkip))
	h.start()
	h.advance(time.Minute)
	first := h.expectRun("schedule:hourly@2025-06-01T01:00Z")
	h.sub.setWorking(first.ID, true)
	h.advance(time.Hour)
	h.expectNoRun()
	h.logs.WaitRecord(t, 10*time.Second, "Scheduled run skipped: the previous run still works", "previous_run", first.ID)
	h.idle()
	h.wantLastError("skipped the run of 2025-06-01T02:00:00Z: the previous run " + first.ID + " still worked")
	h.sub.setWorking(first.ID, false)
	h.sched.Wake()
	h.idle()
	h.expectNoRun() // the skipped run stays skipped
	h.advance(time.Hour)
	h.expectRun("schedule:hourly@2025-06-01T03:00Z")
}

func TestOverlapWait(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T00:59:00Z", schedule(t, "hourly", "0 * * * *", time.Hour, OverlapWait))
	h.start()
	h.advance(time.Minute)
	first := h.expectRun("schedule:hourly@2025-06-01T01:00Z")
	h.sub.setWorking(first.ID, true)
	h.advance(time.Hour) // 02:00 waits
	h.expectNoRun()
	h.logs.WaitRecord(t, 10*time.Second, "Scheduled run waits for the previous run", "scheduled_at", "2025-06-01T02:00:00Z")
	if st := h.list()[0]; !st.Pending.Equal(time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("List shows pending %s", st.Pending)
	}
	// Polled while it waits, and still waiting at 03:00: the two collapse.
	for range 4 {
		h.advance(busyPoll)
		h.expectNoRun()
	}
	h.advance(time.Hour - 4*busyPoll)
	h.expectNoRun()
	h.sub.setWorking(first.ID, false)
	h.sched.Wake() // the engine says the run ended
	h.expectRun("schedule:hourly@2025-06-01T03:00Z")
	h.idle()
	h.expectNoRun()
}

// TestOverlapWaitSurvivesRestart: a waiting run stays waiting across a
// restart within catch_up, and then runs once.
func TestOverlapWaitSurvivesRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T00:59:00Z", schedule(t, "hourly", "0 * * * *", time.Hour, OverlapWait))
	h.start()
	h.advance(time.Minute)
	first := h.expectRun("schedule:hourly@2025-06-01T01:00Z")
	h.sub.setWorking(first.ID, true)
	h.advance(time.Hour)
	h.expectNoRun()
	h.stop()
	h.clock.Advance(10 * time.Minute)
	h.start()
	h.expectNoRun() // the previous run is still working after the restart
	h.sub.setWorking(first.ID, false)
	h.advance(busyPoll)
	h.expectRun("schedule:hourly@2025-06-01T02:00Z")
}

func TestPauseAndResumePersist(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T01:59:00Z", schedule(t, "nightly", "0 2 * * *", 48*time.Hour, OverlapSkip))
	h.start()
	if was, err := h.sched.Pause(t.Context(), "nightly", "U_ADMIN"); err != nil || !was {
		t.Fatalf("Pause = %t, %v", was, err)
	}
	h.logs.WaitRecords(t, 10*time.Second, "Schedule paused", 1)
	if was, err := h.sched.Pause(t.Context(), "nightly", "U_ADMIN"); err != nil || was {
		t.Errorf("second Pause = %t, %v; want false, nil", was, err)
	}
	h.clock.Advance(time.Minute) // 02:00 passes while paused
	h.stop()
	h.clock.Advance(24 * time.Hour) // and the next one while down
	h.start0()
	st := h.list()[0]
	if !st.Paused || st.PausedBy != "U_ADMIN" {
		t.Fatalf("after a restart: %+v, want paused by U_ADMIN", st)
	}
	if was, err := h.sched.Resume(t.Context(), "nightly", "U_ADMIN"); err != nil || !was {
		t.Fatalf("Resume = %t, %v", was, err)
	}
	h.idle()
	h.expectNoRun() // what passed while paused is not caught up, even within catch_up
	h.advance(24 * time.Hour)
	h.expectRun("schedule:nightly@2025-06-03T02:00Z")
	if _, err := h.sched.Pause(t.Context(), "nope", "U_ADMIN"); !errors.Is(err, ErrUnknownSchedule) {
		t.Errorf("Pause of an unknown schedule: %v", err)
	}
}

// start0 starts a scheduler that has nothing to time (everything paused):
// it waits for the start-up pass through the log instead of the timer.
func (h *harness) start0() {
	h.t.Helper()
	ledger, err := OpenLedger(h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	h.sched, err = New(Options{Schedules: h.scheds, Ledger: ledger, Submitter: h.sub, Clock: h.clock,
		Logger: slog.New(slog.NewJSONHandler(h.logs, nil))})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.sched.Run(ctx) }()
}

func TestSubmitFailureIsRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T01:59:00Z", schedule(t, "nightly", "0 2 * * *", time.Hour, OverlapSkip))
	h.start()
	h.sub.setFail(errors.New("journal: no space left on device"))
	h.advance(time.Minute)
	h.expectNoRun()
	h.logs.WaitRecords(t, 10*time.Second, "Submitting a scheduled run failed; retrying", 1)
	h.idle()
	h.wantLastError("could not be submitted (retrying in 30s): journal: no space left on device")
	h.advance(retryMin) // fails again; the backoff doubles
	h.logs.WaitRecords(t, 10*time.Second, "Submitting a scheduled run failed; retrying", 2)
	h.sub.setFail(nil)
	h.advance(retryMin)
	h.expectNoRun() // 60s of backoff now, 30s passed
	h.advance(retryMin)
	h.expectRun("schedule:nightly@2025-06-01T02:00Z")
}

func TestRefusedRunIsSkipped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T01:59:00Z", schedule(t, "nightly", "0 2 * * *", time.Hour, OverlapSkip))
	h.start()
	h.sub.setFail(errors.Join(trigger.ErrRefused, errors.New("no binding routes slack/C1")))
	h.advance(time.Minute)
	h.logs.WaitRecords(t, 10*time.Second, "Scheduled run refused by the engine; skipped", 1)
	h.idle()
	h.wantLastError("the run of 2025-06-01T02:00:00Z was refused: ")
	h.wantLastError("no binding routes slack/C1")
	h.sub.setFail(nil)
	h.advance(time.Hour)
	h.expectNoRun()
	h.advance(23 * time.Hour)
	h.expectRun("schedule:nightly@2025-06-02T02:00Z")
}

func TestChangedCronStartsAfresh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T01:59:00Z", schedule(t, "nightly", "0 2 * * *", 12*time.Hour, OverlapSkip))
	h.start()
	h.advance(time.Minute)
	h.expectRun("schedule:nightly@2025-06-01T02:00Z")
	h.stop()
	h.clock.Advance(8 * time.Hour) // 10:00: an edit to 09:00 is no missed 09:00 run
	h.scheds = []Schedule{schedule(t, "nightly", "0 9 * * *", 12*time.Hour, OverlapSkip)}
	h.start()
	h.expectNoRun()
	h.logs.WaitRecords(t, 10*time.Second, "Schedule changed; runs are counted from now", 1)
	h.advance(23 * time.Hour)
	h.expectRun("schedule:nightly@2025-06-02T09:00Z")
}

func TestLedgerFile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "2025-06-01T01:59:00Z", schedule(t, "nightly", "0 2 * * *", time.Hour, OverlapSkip),
		schedule(t, "other", "0 3 * * *", time.Hour, OverlapSkip))
	h.start()
	fi, err := os.Stat(h.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("ledger mode %v, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(filepath.Dir(h.path))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("ledger folder mode %v, want 0700", di.Mode().Perm())
	}
	// A schedule removed from the config leaves the ledger.
	h.stop()
	h.scheds = h.scheds[:1]
	h.start()
	l, err := OpenLedger(h.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.get("other"); ok {
		t.Error("the removed schedule is still in the ledger")
	}

	for _, bad := range []string{"{", `{"version":9,"schedules":{}}`, `{"version":1,"schedules":{"x":null}}`} {
		p := filepath.Join(privateDir(t), "ledger.json")
		if err := os.WriteFile(p, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenLedger(p); !errors.Is(err, ErrCorruptLedger) {
			t.Errorf("OpenLedger(%q) = %v, want ErrCorruptLedger", bad, err)
		}
		if got, _ := os.ReadFile(p); string(got) != bad {
			t.Errorf("a corrupt ledger was changed to %q", got)
		}
	}
}

func TestLedgerWriteFailureSettlesNothing(t *testing.T) {
	t.Parallel()
	// A file where the ledger's folder should be fails the write, for
	// root too (a read-only folder would not stop root).
	dir := privateDir(t)
	l, err := OpenLedger(filepath.Join(dir, "blocked", "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blocked"), []byte("a file, not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.update("n", func(e *entry) { e.Last = time.Unix(1, 0) }); err == nil {
		t.Fatal("update wrote through a file")
	}
	if _, ok := l.get("n"); ok {
		t.Error("a failed write left the entry in memory")
	}
}

func TestNewRejectsBadSchedules(t *testing.T) {
	t.Parallel()
	ledger, err := OpenLedger(filepath.Join(privateDir(t), "l.json"))
	if err != nil {
		t.Fatal(err)
	}
	ok := schedule(t, "a", "0 2 * * *", 0, OverlapSkip)
	for name, scheds := range map[string][]Schedule{
		"bad name":  {func() Schedule { s := ok; s.Name = "a b"; return s }()},
		"duplicate": {ok, ok},
		"no cron":   {func() Schedule { s := ok; s.Cron = nil; return s }()},
		"overlap":   {func() Schedule { s := ok; s.Overlap = "queue"; return s }()},
	} {
		if _, err := New(Options{Schedules: scheds, Ledger: ledger, Submitter: newFakeSubmitter()}); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestListText(t *testing.T) {
	t.Parallel()
	paris := mustZone(t, "Europe/Paris")
	now := time.Date(2025, 6, 1, 20, 0, 0, 0, time.UTC)
	text := ListText([]Status{
		{Name: "nightly", Cron: "30 2 * * * (Europe/Paris)", Platform: "slack", Channel: "C1",
			Next: time.Date(2025, 6, 2, 2, 30, 0, 0, paris), LastError: "the run of 2025-06-01T00:30:00Z was refused: over the daily cap",
			LastErrorAt: now.Add(-20 * time.Hour)},
		{Name: "weekly", Cron: "0 9 * * 1 (UTC)", Platform: "slack", Channel: "C1", Continue: true, Paused: true,
			PausedBy: "U1", PausedAt: now.Add(-time.Hour)},
	}, now)
	want := "Schedules (2):\n" +
		"• nightly: 30 2 * * * (Europe/Paris) → slack/C1, a new thread each run; next run 2025-06-02 02:30 CEST (in 4h 30m); " +
		"last error 2025-06-01 00:00 UTC: the run of 2025-06-01T00:30:00Z was refused: over the daily cap\n" +
		"• weekly: 0 9 * * 1 (UTC) → slack/C1, one conversation; paused by U1 since 2025-06-01 19:00 UTC"
	if text != want {
		t.Errorf("ListText:\n%s\nwant\n%s", text, want)
	}
	if ListText(nil, now) != "No schedules are configured here." {
		t.Error("empty list text")
	}
}

// advanceTo moves the clock to at and waits for the pass.
func (h *harness) advanceTo(at time.Time) {
	h.t.Helper()
	h.advance(at.Sub(h.clock.Now()))
}

// TestDailyRunAcrossDaylightSaving drives a 02:30 New York schedule on the
// scheduler's clock through both changes of 2025: one run every day, the
// one of the spring-forward night at 03:00.
func TestDailyRunAcrossDaylightSaving(t *testing.T) {
	t.Parallel()
	c, err := ParseCron("30 2 * * *", "America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	ny := mustZone(t, "America/New_York")
	sc := Schedule{Name: "nightly", Cron: c, Platform: "slack", Channel: "C1", Prompt: "p", CatchUp: time.Hour, Overlap: OverlapSkip}
	h := newHarness(t, "2025-03-08T00:00:00-05:00", sc)
	h.start()
	for _, tc := range []struct {
		local time.Time
		id    string
	}{
		{time.Date(2025, 3, 8, 2, 30, 0, 0, ny), "schedule:nightly@2025-03-08T07:30Z"},
		{time.Date(2025, 3, 9, 3, 0, 0, 0, ny), "schedule:nightly@2025-03-09T07:00Z"}, // 02:30 does not exist
		{time.Date(2025, 3, 10, 2, 30, 0, 0, ny), "schedule:nightly@2025-03-10T06:30Z"},
	} {
		h.advanceTo(tc.local.Add(-time.Second))
		h.expectNoRun()
		h.advanceTo(tc.local)
		h.expectRun(tc.id)
	}
	h.stop()
	h.clock.Advance(time.Date(2025, 11, 1, 12, 0, 0, 0, ny).Sub(h.clock.Now()))
	h.start()
	h.expectNoRun() // months of missed runs, all older than catch_up
	for _, tc := range []struct {
		local time.Time
		id    string
	}{
		{time.Date(2025, 11, 2, 2, 30, 0, 0, ny), "schedule:nightly@2025-11-02T07:30Z"}, // after the change, once
		{time.Date(2025, 11, 3, 2, 30, 0, 0, ny), "schedule:nightly@2025-11-03T07:30Z"},
	} {
		h.advanceTo(tc.local.Add(-time.Second))
		h.expectNoRun()
		h.advanceTo(tc.local)
		h.expectRun(tc.id)
	}
}

// TestScheduleWaitsForItsHost: in a cluster only the host that holds a
// schedule's binding fires it. While Serves says no, a due run is neither
// submitted nor written off in the ledger; once this host may (it took
// the lease, and Wake says so) it fires the latest run due, which the
// stream drops if the previous holder published it already.
func TestScheduleWaitsForItsHost(t *testing.T) {
	t.Parallel()
	here := schedule(t, "here", "0 * * * *", time.Hour, OverlapSkip)
	there := schedule(t, "there", "0 * * * *", time.Hour, OverlapSkip)
	there.Channel = "C2"
	h := newHarness(t, "2025-06-01T01:58:00Z", here, there)
	var mu sync.Mutex
	holds := map[string]bool{"C1": true}
	h.serves = func(p, ch string) bool {
		mu.Lock()
		defer mu.Unlock()
		return p == "slack" && holds[ch]
	}
	h.start()
	h.advance(2 * time.Minute)
	h.expectRun("schedule:here@2025-06-01T02:00Z")
	h.expectNoRun()
	h.advance(30 * time.Minute)
	h.expectNoRun()

	mu.Lock()
	holds["C2"] = true // this host took C2's lease
	mu.Unlock()
	h.sched.Wake()
	h.expectRun("schedule:there@2025-06-01T02:00Z")
	h.advance(30 * time.Minute)
	got := map[string]bool{}
	for range 2 {
		select {
		case r := <-h.sub.got:
			got[r.ID] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("runs at 03:00: %v, want both schedules'", got)
		}
	}
	if !got["schedule:here@2025-06-01T03:00Z"] || !got["schedule:there@2025-06-01T03:00Z"] {
		t.Errorf("runs at 03:00: %v", got)
	}

	mu.Lock()
	holds["C1"] = false // C1's lease went to another host
	mu.Unlock()
	h.sched.Wake()
	h.advance(time.Hour)
	h.expectRun("schedule:there@2025-06-01T04:00Z")
	h.expectNoRun()
}

// list is the scheduler's List, failing the test on an error.
func (h *harness) list() []Status {
	h.t.Helper()
	l, err := h.sched.List(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	return l
}

// memPauses is a Pauses store in memory, shared by the harnesses of two
// hosts as a cluster's bucket is (cluster/pauses tests the real one).
type memPauses struct {
	mu  sync.Mutex
	m   map[string]Pause
	err error // every call fails with it while set
}

func (p *memPauses) Get(_ context.Context, name string) (Pause, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[name], p.err
}

func (p *memPauses) Pause(_ context.Context, name, by string, at time.Time) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil || p.m[name].Paused {
		return false, p.err
	}
	p.m[name] = Pause{Paused: true, By: by, At: at}
	return true, nil
}

func (p *memPauses) Resume(_ context.Context, name string, at time.Time) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil || !p.m[name].Paused {
		return false, p.err
	}
	p.m[name] = Pause{Resumed: at}
	return true, nil
}

func (p *memPauses) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// TestSharedPauseHoldsOnTheNextHost: two hosts' schedulers, each with its
// own ledger and one pause store between them, as in a cluster. A pause
// made on the host that held the lease holds on the host that takes it
// (without the store, the second host's ledger knows no pause and, within
// catch_up, fires what passed); a resume there is not undone by the first
// host's older ledger when the lease comes back; a store that cannot be
// read fires nothing until it can.
func TestSharedPauseHoldsOnTheNextHost(t *testing.T) {
	t.Parallel()
	nightly := schedule(t, "nightly", "0 2 * * *", 48*time.Hour, OverlapSkip)
	// Each host always serves a schedule of its own, so that its
	// scheduler always waits on a timer that idle can see.
	local := func(name string) Schedule {
		sc := schedule(t, name, "0 0 1 1 *", time.Hour, OverlapSkip)
		sc.Channel = name
		return sc
	}
	store := &memPauses{m: map[string]Pause{}}
	var mu sync.Mutex
	holder := "a"
	host := func(name string) *harness {
		h := newHarness(t, "2025-06-01T01:59:00Z", nightly, local("own-"+name))
		h.pauses = store
		h.serves = func(_, ch string) bool {
			mu.Lock()
			defer mu.Unlock()
			return ch == "own-"+name || (ch == "C1" && holder == name)
		}
		return h
	}
	hold := func(h *harness, name string) {
		mu.Lock()
		holder = name
		mu.Unlock()
		h.sched.Wake()
	}
	a, b := host("a"), host("b")
	a.start()
	b.start()
	both := func(d time.Duration) {
		a.advance(d)
		b.advance(d)
	}

	if was, err := a.sched.Pause(t.Context(), "nightly", "U_ADMIN"); err != nil || !was {
		t.Fatalf("Pause on a = %t, %v", was, err)
	}
	if was, err := b.sched.Pause(t.Context(), "nightly", "U_OTHER"); err != nil || was {
		t.Errorf("Pause on b of a schedule paused on a = %t, %v; want false (already paused)", was, err)
	}
	both(time.Minute) // 02:00 passes on a, paused
	a.expectNoRun()

	hold(b, "b") // a's lease went to b
	b.logs.WaitRecords(t, 10*time.Second, "Not running a paused schedule", 1)
	both(time.Minute)
	b.expectNoRun()
	if st := b.list()[0]; !st.Paused || st.PausedBy != "U_ADMIN" {
		t.Errorf("b lists %+v, want paused by U_ADMIN", st)
	}

	if was, err := b.sched.Resume(t.Context(), "nightly", "U_ADMIN"); err != nil || !was {
		t.Fatalf("Resume on b = %t, %v", was, err)
	}
	b.idle()
	both(time.Minute)
	b.expectNoRun() // 02:00 passed while paused: not caught up

	hold(a, "a") // back to a, whose ledger still has 01:59 as its last
	a.logs.WaitRecords(t, 10*time.Second, "Schedule resumed on another host; what passed while it was paused is not caught up", 1)
	both(time.Minute)
	a.expectNoRun()
	if st := a.list()[0]; st.Paused || !st.Next.Equal(time.Date(2025, 6, 2, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("a lists %+v, want running, next 2025-06-02 02:00", st)
	}

	a.advanceTo(time.Date(2025, 6, 2, 1, 0, 0, 0, time.UTC))
	b.advanceTo(time.Date(2025, 6, 2, 1, 0, 0, 0, time.UTC))
	store.fail(errors.New("no responders"))
	both(time.Hour) // 02:00 due, its pause unreadable
	a.expectNoRun()
	a.logs.WaitRecords(t, 10*time.Second, "Reading the schedule's pause failed; it does not run until it is read", 1)
	store.fail(nil)
	both(pausesRetry)
	a.expectRun("schedule:nightly@2025-06-02T02:00Z")
	b.expectNoRun()
}
