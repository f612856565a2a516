package agentproc

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// decodeFile decodes every line of a capture's stdout.
func decodeFile(t *testing.T, name string) []Event {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "captures", name, "stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var dec decoder
	var evs []Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		evs = append(evs, dec.decodeLine(sc.Bytes()).events...)
	}
	return evs
}

// TestLimitFromCapture: the real CLI's answer to a 429 (captured) is a
// turn refused for a usage limit, with no reset known.
func TestLimitFromCapture(t *testing.T) {
	var res *Result
	for _, ev := range decodeFile(t, "rate_limit") {
		if r, ok := ev.(*Result); ok {
			res = r
		}
	}
	if res == nil {
		t.Fatal("no result in the capture")
	}
	err := resultError(res)
	var le *LimitError
	if !errors.Is(err, ErrUsageLimit) || !errors.As(err, &le) || !le.ResetsAt.IsZero() || le.Text == "" {
		t.Fatalf("resultError = %v, want a LimitError without a reset", err)
	}
}

// The rate_limit_event lines below are hand-written from the CLI's
// schema (docs/claude-code.md): the fake API cannot provoke one, as the
// CLI reports them only for subscription logins.
func TestRateLimitEvent(t *testing.T) {
	reset := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	tests := []struct {
		name, line string
		want       RateLimit
	}{
		{"warning", `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1796673600,"rateLimitType":"five_hour","utilization":0.9},"uuid":"u","session_id":"s"}`,
			RateLimit{Status: "allowed_warning", ResetsAt: reset, Type: "five_hour"}},
		{"rejected", `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796673600,"rateLimitType":"seven_day"},"uuid":"u","session_id":"s"}`,
			RateLimit{Status: "rejected", ResetsAt: reset, Type: "seven_day"}},
		{"milliseconds", `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1796673600000}}`,
			RateLimit{Status: "allowed", ResetsAt: reset}},
		{"no info", `{"type":"rate_limit_event"}`, RateLimit{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dec decoder
			evs := dec.decodeLine([]byte(tt.line)).events
			if len(evs) != 1 || evs[0] != tt.want {
				t.Fatalf("decoded %#v, want %#v", evs, tt.want)
			}
		})
	}
}

// TestLimitResetFromEvent: a rejected window reported during the turn
// gives the refused turn its reset; the next turn starts without one.
func TestLimitResetFromEvent(t *testing.T) {
	var dec decoder
	dec.decodeLine([]byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796673600}}`))
	fail := []byte(`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Request rejected (429) · x"}`)
	r := dec.decodeLine(fail).events[0].(*Result)
	var le *LimitError
	if err := resultError(r); !errors.As(err, &le) || !le.ResetsAt.Equal(time.Unix(1796673600, 0)) {
		t.Fatalf("resultError = %v, want the reported reset", err)
	}
	r = dec.decodeLine(fail).events[0].(*Result)
	if err := resultError(r); !errors.As(err, &le) || !le.ResetsAt.IsZero() {
		t.Fatalf("the next turn's error %v, want no reset", err)
	}
	ok := dec.decodeLine([]byte(`{"type":"result","subtype":"success","is_error":false,"result":"hi"}`)).events[0].(*Result)
	if err := resultError(ok); err != nil {
		t.Fatalf("a successful turn: %v", err)
	}
}
