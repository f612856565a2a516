package spend

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a driven clock for the ledger.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func open(t *testing.T, path string, loc *time.Location, c *clock) *Ledger {
	t.Helper()
	l, err := Open(path, loc, c.now)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func record(t *testing.T, l *Ledger, tr Turn, wantCost float64) {
	t.Helper()
	cost, err := l.Record(tr)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(cost-wantCost) > 1e-9 {
		t.Errorf("Record(%+v) cost %v, want %v", tr, cost, wantCost)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPerTurnCostFromCumulativeTotals(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	l := open(t, filepath.Join(privateDir(t), "spend.json"), time.UTC, c)
	b := "slack/C1"
	record(t, l, Turn{Binding: b, User: "U1", SessionID: "s1", TotalUSD: 0.008128}, 0.008128)
	record(t, l, Turn{Binding: b, User: "U1", SessionID: "s1", TotalUSD: 0.016276}, 0.008148)
	record(t, l, Turn{Binding: b, User: "U2", SessionID: "s1", TotalUSD: 0.024424}, 0.008148) // another user, same thread
	// A side question forks s1: its total starts from s1's.
	record(t, l, Turn{Binding: b, User: "U2", SessionID: "fork", ForkedFrom: "s1", TotalUSD: 0.03}, 0.005576)
	// A fresh session (after a fallback) starts from zero.
	record(t, l, Turn{Binding: b, User: "U1", SessionID: "s2", TotalUSD: 0.5}, 0.5)
	// A total that went down: the CLI lost its cost state.
	record(t, l, Turn{Binding: b, User: "U1", SessionID: "s2", TotalUSD: 0.1}, 0.1)
	if got := l.Binding(b); !near(got.Day, 0.024424+0.005576+0.6) || !near(got.Month, got.Day) {
		t.Errorf("binding spent %+v", got)
	}
	if got := l.User(b, "U2"); !near(got.Day, 0.008148+0.005576) {
		t.Errorf("U2 spent %+v", got)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := l.Record(Turn{Binding: b, User: "U1", SessionID: "s3", TotalUSD: bad}); !errors.Is(err, ErrBadCost) {
			t.Errorf("Record(%v) = %v, want ErrBadCost", bad, err)
		}
	}
}

func TestWindowsAcrossMidnightAndMonthEnd(t *testing.T) {
	t.Parallel()
	paris := zone(t, "Europe/Paris")
	c := &clock{t: time.Date(2025, 1, 31, 23, 50, 0, 0, paris)}
	path := filepath.Join(privateDir(t), "spend.json")
	l := open(t, path, paris, c)
	b := "slack/C1"
	record(t, l, Turn{Binding: b, User: "U1", SessionID: "s1", TotalUSD: 1}, 1)
	got := l.Binding(b)
	if !near(got.Day, 1) || !near(got.Month, 1) {
		t.Fatalf("before midnight: %+v", got)
	}
	if want := time.Date(2025, 2, 1, 0, 0, 0, 0, paris); !got.DayResets.Equal(want) || !got.MonthResets.Equal(want) {
		t.Errorf("resets %s / %s, want %s", got.DayResets, got.MonthResets, want)
	}
	// 23:00 UTC is midnight in Paris: a new day and a new month there.
	c.set(time.Date(2025, 1, 31, 23, 0, 0, 0, time.UTC))
	if got := l.Binding(b); got.Day != 0 || got.Month != 0 {
		t.Errorf("after midnight in Paris: %+v, want nothing spent", got)
	}
	record(t, l, Turn{Binding: b, User: "U1", SessionID: "s1", TotalUSD: 1.25}, 0.25)
	c.set(time.Date(2025, 2, 2, 9, 0, 0, 0, paris)) // next day, same month
	got = l.Binding(b)
	if got.Day != 0 || !near(got.Month, 0.25) {
		t.Errorf("next day: %+v, want day 0, month 0.25", got)
	}
	if want := time.Date(2025, 3, 1, 0, 0, 0, 0, paris); !got.MonthResets.Equal(want) {
		t.Errorf("month resets %s, want %s", got.MonthResets, want)
	}
	// A restart keeps the totals.
	l2 := open(t, path, paris, c)
	if got2 := l2.Binding(b); !reflect.DeepEqual(got2, got) {
		t.Errorf("after reopening: %+v, want %+v", got2, got)
	}
	record(t, l2, Turn{Binding: b, User: "U1", SessionID: "s1", TotalUSD: 1.5}, 0.25) // s1's total was kept too
}

func TestCapReachedMidDay(t *testing.T) {
	t.Parallel()
	ny := zone(t, "America/New_York")
	c := &clock{t: time.Date(2025, 6, 10, 13, 0, 0, 0, ny)}
	l := open(t, filepath.Join(privateDir(t), "spend.json"), ny, c)
	b := "slack/C1"
	caps := Caps{Daily: 2, Monthly: 10, UserDaily: 1, UserMonthly: 3}
	if o := l.Check(b, "U1", caps); o != nil {
		t.Fatalf("nothing spent, yet %v", o)
	}
	record(t, l, Turn{Binding: b, User: "U1", SessionID: "a", TotalUSD: 0.6}, 0.6)
	if o := l.Check(b, "U1", caps); o != nil {
		t.Fatalf("under the caps, yet %v", o)
	}
	record(t, l, Turn{Binding: b, User: "U1", SessionID: "a", TotalUSD: 1.1}, 0.5) // the turn ends over the cap
	o := l.Check(b, "U1", caps)
	want := &OverCap{User: "U1", Period: "daily", Limit: 1, Spent: 1.1, Resets: time.Date(2025, 6, 11, 0, 0, 0, 0, ny)}
	if o == nil || o.User != want.User || o.Period != want.Period || o.Limit != want.Limit || !near(o.Spent, want.Spent) || !o.Resets.Equal(want.Resets) {
		t.Fatalf("Check = %+v, want %+v", o, want)
	}
	text := o.Text(c.now())
	wantText := "You have reached your daily spending cap of $1.00 ($1.10 spent today), so this message was not sent to Claude. " +
		"The cap resets at 2025-06-11 00:00 EDT (in 11h 0m)."
	if text != wantText {
		t.Errorf("Text:\n%s\nwant\n%s", text, wantText)
	}
	if o := l.Check(b, "U2", caps); o != nil {
		t.Errorf("another user is refused: %v", o)
	}
	record(t, l, Turn{Binding: b, User: "U2", SessionID: "b", TotalUSD: 0.95}, 0.95)
	o = l.Check(b, "U2", caps)
	if o == nil || o.User != "" || o.Period != "daily" || !strings.HasPrefix(o.Text(c.now()), "This binding has reached its daily spending cap of $2.00 ($2.05 spent today)") {
		t.Fatalf("binding cap: %+v", o)
	}
	// The next day the daily caps lift; the monthly ones keep counting.
	c.set(time.Date(2025, 6, 11, 0, 0, 1, 0, ny))
	if o := l.Check(b, "U1", caps); o != nil {
		t.Errorf("a new day, yet %v", o)
	}
	record(t, l, Turn{Binding: b, User: "U1", SessionID: "a", TotalUSD: 3.1}, 2)
	o = l.Check(b, "U1", Caps{UserMonthly: 3})
	if o == nil || o.Period != "monthly" || !near(o.Spent, 3.1) || !o.Resets.Equal(time.Date(2025, 7, 1, 0, 0, 0, 0, ny)) {
		t.Errorf("monthly cap: %+v", o)
	}
	if !strings.Contains(o.Text(c.now()), "($3.10 spent this month)") || !strings.Contains(o.Text(c.now()), "(in 20 days)") {
		t.Errorf("monthly text: %s", o.Text(c.now()))
	}
	if l.Check(b, "U1", Caps{}) != nil {
		t.Error("no caps, yet refused")
	}
}

func TestLedgerStaysSmall(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(privateDir(t), "spend.json")
	l := open(t, path, time.UTC, c)
	for i := range 50 {
		record(t, l, Turn{Binding: "slack/C1", User: "U" + string(rune('a'+i%26)), SessionID: "old" + string(rune('a'+i%26)), TotalUSD: float64(i + 1)}, costOf(i))
	}
	c.set(time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)) // months later
	record(t, l, Turn{Binding: "slack/C2", User: "U1", SessionID: "new", TotalUSD: 0.1}, 0.1)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if strings.Contains(s, "slack/C1") || strings.Contains(s, `"olda"`) {
		t.Errorf("old months and sessions were kept:\n%s", s)
	}
	figs := l.Figures()
	want := []Figure{{Binding: "slack/C2", Day: 0.1, Month: 0.1}, {Binding: "slack/C2", User: "U1", Day: 0.1, Month: 0.1}}
	if !reflect.DeepEqual(figs, want) {
		t.Errorf("Figures = %+v, want %+v", figs, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// costOf is the cost of the i-th turn of TestLedgerStaysSmall: sessions
// repeat every 26 turns, so later turns are charged the difference.
func costOf(i int) float64 {
	if i < 26 {
		return float64(i + 1)
	}
	return 26
}

func TestWriteFailureKeepsCounting(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	l := open(t, filepath.Join(dir, "blocked", "spend.json"), time.UTC, c)
	if err := os.WriteFile(filepath.Join(dir, "blocked"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(Turn{Binding: "b", User: "u", SessionID: "s", TotalUSD: 5}); err == nil {
		t.Fatal("Record wrote through a file")
	}
	if o := l.Check("b", "u", Caps{Daily: 5}); o == nil {
		t.Error("a failed write lifted the cap")
	}
}

func TestCorruptLedgerIsKept(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"not json", `{"version":2}`, `{"version":1,"bindings":{"b":null}}`, `{"version":1,"bindings":{"b":{"users":{"u":null}}}}`} {
		p := filepath.Join(privateDir(t), "spend.json")
		if err := os.WriteFile(p, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(p, time.UTC, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Open(%q) = %v, want ErrCorrupt", bad, err)
		}
		if got, _ := os.ReadFile(p); string(got) != bad {
			t.Errorf("the corrupt file was changed")
		}
	}
}

func TestStatusLine(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	l := open(t, filepath.Join(privateDir(t), "spend.json"), time.UTC, c)
	record(t, l, Turn{Binding: "b", User: "u", SessionID: "s", TotalUSD: 1.234}, 1.234)
	got := l.StatusLine("b", "u", Caps{Daily: 5, UserMonthly: 20})
	want := "Spend: binding $1.23 of $5.00 today, $1.23 this month; you $1.23 today, $1.23 of $20.00 this month"
	if got != want {
		t.Errorf("StatusLine = %q, want %q", got, want)
	}
}

// TestChargeThenFlush: a charge counts for the caps at once and reaches
// the file only with Flush; a Flush with nothing new writes nothing, and
// one after a failed write writes what the failure kept.
func TestChargeThenFlush(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	path := filepath.Join(dir, "spend.json")
	c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	l := open(t, path, time.UTC, c)
	cost, err := l.Charge(Turn{Binding: "b", User: "u", SessionID: "s", TotalUSD: 2})
	if err != nil || !near(cost, 2) {
		t.Fatalf("Charge = %v, %v; want 2, nil", cost, err)
	}
	if o := l.Check("b", "u", Caps{Daily: 2}); o == nil {
		t.Error("a charge not flushed yet does not count for the cap")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Charge wrote the ledger (stat: %v)", err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if o := open(t, path, time.UTC, c).Check("b", "u", Caps{Daily: 2}); o == nil || !near(o.Spent, 2) {
		t.Fatalf("the flushed ledger, reopened: %+v, want $2 spent", o)
	}
	// Nothing new: the file is left alone.
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(path); !after.ModTime().Equal(before.ModTime()) {
		t.Error("a Flush with nothing new rewrote the ledger")
	}

	// A charge whose write failed is written by the next Flush that can.
	blocked := filepath.Join(dir, "blocked")
	lb := open(t, filepath.Join(blocked, "spend.json"), time.UTC, c)
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.Record(Turn{Binding: "b", User: "u", SessionID: "s", TotalUSD: 3}); err == nil {
		t.Fatal("Record wrote through a file")
	}
	if err := os.Remove(blocked); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(blocked, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := lb.Flush(); err != nil {
		t.Fatalf("Flush after the disk came back: %v", err)
	}
	if o := open(t, filepath.Join(blocked, "spend.json"), time.UTC, c).Check("b", "u", Caps{Daily: 3}); o == nil || !near(o.Spent, 3) {
		t.Fatalf("the charge of the failed write, reopened: %+v, want $3 spent", o)
	}
}

// TestSpendByDay: the spend of each of the last KeepDays days is kept per
// binding and person, across a month's end and a restart, and a day older
// than that is dropped.
func TestSpendByDay(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2025, 1, 30, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(privateDir(t), "spend.json")
	l := open(t, path, time.UTC, c)
	record(t, l, Turn{Binding: "slack/C1", User: "U1", SessionID: "s1", TotalUSD: 1}, 1)
	c.set(time.Date(2025, 2, 1, 9, 0, 0, 0, time.UTC)) // a new month
	record(t, l, Turn{Binding: "slack/C1", User: "U2", SessionID: "s2", TotalUSD: 0.5}, 0.5)
	record(t, l, Turn{Binding: "slack/C1", User: "U1", SessionID: "s1", TotalUSD: 1.25}, 0.25)
	want := []DayFigure{
		{Day: "2025-02-01", Binding: "slack/C1", USD: 0.75},
		{Day: "2025-02-01", Binding: "slack/C1", User: "U1", USD: 0.25},
		{Day: "2025-02-01", Binding: "slack/C1", User: "U2", USD: 0.5},
		{Day: "2025-01-30", Binding: "slack/C1", USD: 1},
		{Day: "2025-01-30", Binding: "slack/C1", User: "U1", USD: 1},
	}
	if got := open(t, path, time.UTC, c).Days(); !reflect.DeepEqual(got, want) {
		t.Errorf("Days after a restart = %+v, want %+v", got, want)
	}
	// January 30th is the 31st day back on March 1st, gone on March 2nd.
	c.set(time.Date(2025, 3, 1, 23, 0, 0, 0, time.UTC))
	if got := l.Days(); len(got) != 5 {
		t.Errorf("on the 31st day: %+v, want all five", got)
	}
	c.set(time.Date(2025, 3, 2, 0, 30, 0, 0, time.UTC))
	if got := l.Days(); !reflect.DeepEqual(got, want[:3]) {
		t.Errorf("on the 32nd day: %+v, want %+v", got, want[:3])
	}
	record(t, l, Turn{Binding: "slack/C2", User: "U1", SessionID: "s3", TotalUSD: 0.1}, 0.1)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "2025-01-30") || !strings.Contains(string(data), "2025-02-01") {
		t.Errorf("the file keeps days it should not, or drops one it should keep:\n%s", data)
	}
}

// TestSpendByDayFromAnOlderLedger: a ledger written before days were kept
// counts today's spend in today's day at the next charge.
func TestSpendByDayFromAnOlderLedger(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(privateDir(t), "spend.json")
	old := `{"version": 1, "bindings": {"slack/C1": {"day": "2025-06-01", "day_micro_usd": 2000000, "month": "2025-06", "month_micro_usd": 2000000,
		"users": {"U1": {"day": "2025-06-01", "day_micro_usd": 2000000, "month": "2025-06", "month_micro_usd": 2000000}}}}, "sessions": {}}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	l := open(t, path, time.UTC, c)
	record(t, l, Turn{Binding: "slack/C1", User: "U1", SessionID: "s1", TotalUSD: 0.5}, 0.5)
	want := []DayFigure{{Day: "2025-06-01", Binding: "slack/C1", USD: 2.5}, {Day: "2025-06-01", Binding: "slack/C1", User: "U1", USD: 2.5}}
	if got := l.Days(); !reflect.DeepEqual(got, want) {
		t.Errorf("Days = %+v, want %+v", got, want)
	}
}
