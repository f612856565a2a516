package fakekit

import (
	"net/http/httptest"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms ...int) []time.Time {
	out := make([]time.Time, len(ms))
	for i, m := range ms {
		out[i] = t0.Add(time.Duration(m) * time.Millisecond)
	}
	return out
}

// TestWindowRolls: a call is refused while N others fall within the last D,
// however they bunched, and fits again the moment the oldest of them leaves
// the window.
func TestWindowRolls(t *testing.T) {
	type call struct {
		ms   int           // when, after t0
		wait time.Duration // 0: taken
	}
	tests := []struct {
		name  string
		n     int
		d     time.Duration
		calls []call
	}{
		{"a burst up to N goes through", 3, time.Second, []call{{0, 0}, {1, 0}, {2, 0}, {3, 997 * time.Millisecond}}},
		{"the window rolls, not resets", 2, time.Second, []call{
			{0, 0}, {600, 0}, {999, time.Millisecond}, {1000, 0}, // the call at 0 left: one fits
			{1100, 500 * time.Millisecond}, // 600 and 1000 are in [100, 1100]
			{1600, 0},
		}},
		{"a refused call does not count", 1, time.Second, []call{{0, 0}, {500, 500 * time.Millisecond}, {1000, 0}}},
		{"one per gap (Telegram's pace)", 1, 3 * time.Second, []call{{0, 0}, {2999, time.Millisecond}, {3000, 0}, {3001, 2999 * time.Millisecond}}},
		{"Slack's tier: 50 a minute", 50, time.Minute, func() []call {
			var cs []call
			for i := range 50 {
				cs = append(cs, call{i * 100, 0})
			}
			return append(cs, call{59_999, 1 * time.Millisecond}, call{60_000, 0}, call{60_050, 50 * time.Millisecond})
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &Window{N: tt.n, D: tt.d}
			for _, c := range tt.calls {
				now := at(c.ms)[0]
				wait, ok := w.Take(now)
				if wait != c.wait || ok != (c.wait == 0) {
					t.Errorf("Take at %dms = %s, %v; want %s", c.ms, wait, ok, c.wait)
				}
			}
		})
	}
}

// TestWindowCountsWhatItIsTold: Wait alone counts nothing; Add counts a
// call the fake let through some other way.
func TestWindowCountsWhatItIsTold(t *testing.T) {
	w := &Window{N: 1, D: time.Second}
	for range 3 {
		if wait := w.Wait(t0); wait != 0 {
			t.Fatalf("Wait on an empty window = %s", wait)
		}
	}
	w.Add(t0)
	if wait := w.Wait(t0.Add(400 * time.Millisecond)); wait != 600*time.Millisecond {
		t.Errorf("Wait after Add = %s", wait)
	}
}

func TestBucket(t *testing.T) {
	tests := []struct {
		name        string
		rate, burst float64
		calls       []int           // ms after t0
		waits       []time.Duration // 0: taken
	}{
		{"the burst at once, then refused", 1, 2, []int{0, 0, 0}, []time.Duration{0, 0, time.Second}},
		{"refills at the rate", 2, 1, []int{0, 250, 500, 1000}, []time.Duration{0, 250 * time.Millisecond, 0, 0}},
		{"never more than the burst", 10, 2, []int{0, 5000, 5000, 5000}, []time.Duration{0, 0, 0, 100 * time.Millisecond}},
		{"a burst below one is one", 1, 0, []int{0, 0}, []time.Duration{0, time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBucket(tt.rate, tt.burst, t0)
			for i, ms := range tt.calls {
				wait, ok := b.Take(at(ms)[0])
				if d := wait - tt.waits[i]; d < -time.Microsecond || d > time.Microsecond || ok != (tt.waits[i] == 0) {
					t.Errorf("call %d at %dms: %s, %v; want %s", i, ms, wait, ok, tt.waits[i])
				}
			}
		})
	}
}

func TestMostWithin(t *testing.T) {
	tests := []struct {
		at   []time.Time
		d    time.Duration
		want int
	}{
		{nil, time.Second, 0},
		{at(0, 500, 999), time.Second, 3},
		{at(0, 500, 1000), time.Second, 2}, // a window is [t, t+d)
		{at(0, 900, 1100, 1200, 2500), time.Second, 3},
	}
	for _, tt := range tests {
		if got := MostWithin(tt.at, tt.d); got != tt.want {
			t.Errorf("MostWithin(%v, %s) = %d, want %d", tt.at, tt.d, got, tt.want)
		}
	}
}

func TestRetrySeconds(t *testing.T) {
	for _, tt := range []struct {
		wait time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {59 * time.Second, 59}} {
		if got := RetrySeconds(tt.wait); got != tt.want {
			t.Errorf("RetrySeconds(%s) = %d, want %d", tt.wait, got, tt.want)
		}
	}
}

func TestSeq(t *testing.T) {
	var s Seq
	if n := s.Next(); n != 1 {
		t.Errorf("first Next = %d", n)
	}
	s.Past(100)
	s.Past(50) // never back
	if n := s.Next(); n != 101 {
		t.Errorf("Next after Past(100) = %d", n)
	}
	if s.Last() != 101 {
		t.Errorf("Last = %d", s.Last())
	}
}

func TestAnswerWrite(t *testing.T) {
	tests := []struct {
		name       string
		a          Answer
		status     int
		typ, retry string
	}{
		{"a JSON body", Answer{Status: 400, Body: `{"ok":false}`}, 400, "application/json", ""},
		{"status 0 is 200", Answer{Body: `{}`}, 200, "application/json", ""},
		{"no body, no type", Answer{Status: 204}, 204, "", ""},
		{"headers kept, a type given wins", Answer{Status: 429, Body: `{}`, Header: map[string]string{"Retry-After": "3", "Content-Type": "application/json; charset=utf-8"}},
			429, "application/json; charset=utf-8", "3"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		tt.a.Write(rec)
		if rec.Code != tt.status || rec.Header().Get("Content-Type") != tt.typ || rec.Header().Get("Retry-After") != tt.retry || rec.Body.String() != tt.a.Body {
			t.Errorf("%s: %d %v %q", tt.name, rec.Code, rec.Header(), rec.Body)
		}
	}
}
