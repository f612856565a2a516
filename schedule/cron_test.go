package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// runs lists the first n instants of c after from, as RFC 3339 in c's zone.
func runs(c *Cron, from time.Time, n int) []string {
	var out []string
	at := from
	for range n {
		at = c.Next(at)
		if at.IsZero() {
			break
		}
		out = append(out, at.Format(time.RFC3339))
	}
	return out
}

func TestCronDaylightSaving(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, expr, zone, from string
		want                   []string
	}{
		{
			// 02:30 does not exist on 9 March 2025 in New York: the run
			// comes at the end of the gap, once, and the next day is
			// 02:30 again.
			name: "daily 02:30 across spring-forward", expr: "30 2 * * *", zone: "America/New_York",
			from: "2025-03-07T12:00:00-05:00",
			want: []string{"2025-03-08T02:30:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-10T02:30:00-04:00"},
		},
		{
			// 02:30 exists once on 2 November 2025 (clocks go back at
			// 02:00 EDT to 01:00 EST): one run a day.
			name: "daily 02:30 across fall-back", expr: "30 2 * * *", zone: "America/New_York",
			from: "2025-10-31T12:00:00-04:00",
			want: []string{"2025-11-01T02:30:00-04:00", "2025-11-02T02:30:00-05:00", "2025-11-03T02:30:00-05:00"},
		},
		{
			// 01:30 happens twice that night: it runs at the first.
			name: "daily 01:30 repeated by fall-back runs once", expr: "30 1 * * *", zone: "America/New_York",
			from: "2025-11-01T12:00:00-04:00",
			want: []string{"2025-11-02T01:30:00-04:00", "2025-11-03T01:30:00-05:00"},
		},
		{
			name: "daily 02:30 via CRON_TZ across spring-forward in Paris", expr: "CRON_TZ=Europe/Paris 30 2 * * *",
			from: "2025-03-29T12:00:00+01:00",
			want: []string{"2025-03-30T03:00:00+02:00", "2025-03-31T02:30:00+02:00"},
		},
		{
			// Lord Howe moves by 30 minutes: 02:00 → 02:30 on 5 Oct 2025.
			name: "half-hour shift", expr: "15 2 * * *", zone: "Australia/Lord_Howe",
			from: "2025-10-04T12:00:00+10:30",
			want: []string{"2025-10-05T02:30:00+11:00", "2025-10-06T02:15:00+11:00"},
		},
		{
			// Every hour follows elapsed time: both 01:00s run, and the
			// skipped 02:00 does not.
			name: "hourly across fall-back", expr: "0 * * * *", zone: "America/New_York",
			from: "2025-11-02T00:30:00-04:00",
			want: []string{"2025-11-02T01:00:00-04:00", "2025-11-02T01:00:00-05:00", "2025-11-02T02:00:00-05:00"},
		},
		{
			name: "hourly across spring-forward", expr: "0 * * * *", zone: "America/New_York",
			from: "2025-03-09T00:30:00-05:00",
			want: []string{"2025-03-09T01:00:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-09T04:00:00-04:00"},
		},
		{
			// Several times inside the gap collapse onto its end.
			name: "quarter hours inside the gap", expr: "*/20 1-3 9 3 *", zone: "America/New_York",
			from: "2025-03-09T01:30:00-05:00",
			want: []string{"2025-03-09T01:40:00-05:00", "2025-03-09T03:00:00-04:00", "2025-03-09T03:20:00-04:00", "2025-03-09T03:40:00-04:00", "2026-03-09T01:00:00-04:00"},
		},
		{
			name: "utc weekdays", expr: "0 9 * * 1-5", zone: "UTC",
			from: "2025-01-03T09:00:00Z", // a Friday
			want: []string{"2025-01-06T09:00:00Z", "2025-01-07T09:00:00Z"},
		},
		{
			name: "descriptor", expr: "@monthly", zone: "UTC",
			from: "2025-01-31T23:59:00Z",
			want: []string{"2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseCron(tt.expr, tt.zone)
			if err != nil {
				t.Fatal(err)
			}
			from, err := time.Parse(time.RFC3339, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			got := runs(c, from, len(tt.want))
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("runs after %s:\n got %q\nwant %q", tt.from, got, tt.want)
			}
		})
	}
}

// TestCronNextIsStrictlyAfter walks a DST year minute by minute from
// instants in and around the changes: Next never returns t or earlier and
// never goes back.
func TestCronNextIsStrictlyAfter(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"30 2 * * *", "30 1 * * *", "*/20 1-3 * * *", "0 * * * *"} {
		c, err := ParseCron(expr, "America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		for _, start := range []string{"2025-03-09T05:00:00Z", "2025-11-02T04:00:00Z"} {
			at, _ := time.Parse(time.RFC3339, start)
			end := at.Add(6 * time.Hour)
			for t0 := at; t0.Before(end); t0 = t0.Add(7 * time.Minute) {
				n := c.Next(t0)
				if !n.After(t0) {
					t.Fatalf("%s: Next(%s) = %s, not after", expr, t0, n)
				}
				if n2 := c.Next(n); !n2.After(n) {
					t.Fatalf("%s: Next(%s) = %s, not after", expr, n, n2)
				}
			}
		}
	}
}

func TestParseCron(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr, zone string
		want       string // String(), or the error's fragment
		err        bool
	}{
		{expr: "30 2 * * *", zone: "Europe/Paris", want: "30 2 * * * (Europe/Paris)"},
		{expr: "CRON_TZ=Asia/Tokyo 0 9 * * *", want: "0 9 * * * (Asia/Tokyo)"},
		{expr: "TZ=UTC @daily", want: "@daily (UTC)"},
		{expr: "  0 0 * * *  ", zone: "UTC", want: "0 0 * * * (UTC)"},
		{expr: "0 0 * * *", want: "0 0 * * * (Local)"},
		{expr: "CRON_TZ=Asia/Tokyo 0 9 * * *", zone: "UTC", err: true, want: "keep one"},
		{expr: "CRON_TZ=Asia/Tokyo", err: true, want: "no schedule"},
		{expr: "@every 1h", zone: "UTC", err: true, want: "@every is not supported"},
		{expr: "0 0 30 2 *", zone: "UTC", err: true, want: "never runs"},
		{expr: "0 0 * *", zone: "UTC", err: true, want: "expected exactly 5 fields"},
		{expr: "0 0 0 * * *", zone: "UTC", err: true, want: "expected exactly 5 fields"},
		{expr: "61 * * * *", zone: "UTC", err: true, want: "above maximum"},
		{expr: "0 0 * * *", zone: "Mars/Olympus", err: true, want: "unknown time zone"},
		{expr: "", zone: "UTC", err: true, want: "empty"},
	}
	for _, tt := range tests {
		c, err := ParseCron(tt.expr, tt.zone)
		if tt.err {
			if err == nil || !errors.Is(err, ErrCron) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseCron(%q, %q) = %v, want an ErrCron saying %q", tt.expr, tt.zone, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCron(%q, %q): %v", tt.expr, tt.zone, err)
			continue
		}
		if c.String() != tt.want {
			t.Errorf("ParseCron(%q, %q).String() = %q, want %q", tt.expr, tt.zone, c.String(), tt.want)
		}
	}
}
