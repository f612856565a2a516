package retry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// script is a call that fails with errs in turn, then succeeds.
type script struct {
	errs  []error
	calls int
}

func (s *script) call(context.Context) error {
	s.calls++
	if s.calls <= len(s.errs) {
		return s.errs[s.calls-1]
	}
	return nil
}

var (
	limited    = &StatusError{Code: 429, RetryAfter: 7 * time.Second}
	limitedAny = &StatusError{Code: 429}
	down       = &StatusError{Code: 503}
	refused    = &StatusError{Code: 403}
)

func classify(err error) Verdict {
	var se *StatusError
	if errors.As(err, &se) {
		return HTTPVerdict(se.Code, se.RetryAfter)
	}
	return Verdict{Kind: Fail}
}

func TestDo(t *testing.T) {
	tests := []struct {
		name    string
		safe    bool
		errs    []error
		wantErr error
		calls   int
		waits   []time.Duration
	}{
		{"success at once", true, nil, nil, 1, nil},
		{"retry-after honoured", false, []error{limited, limited}, nil, 3, []time.Duration{7 * time.Second, 7 * time.Second}},
		{"rate limit without a wait names the policy's", true, []error{limitedAny}, nil, 2, []time.Duration{2 * time.Second}},
		{"rate limits are waited out however often", false, slices.Repeat([]error{limited}, 20), nil, 21, slices.Repeat([]time.Duration{7 * time.Second}, 20)},
		{"5xx retried with backoff", true, []error{down, down}, nil, 3, []time.Duration{time.Second, 2 * time.Second}},
		{"5xx retried a bounded number of times", true, []error{down, down, down, down}, down, 4, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
		{"a rate limit starts the 5xx count again", true, []error{down, down, down, limited, down}, nil, 6,
			[]time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 7 * time.Second, time.Second}},
		{"5xx not retried for an unsafe call", false, []error{down}, down, 1, nil},
		{"4xx not retried", true, []error{refused}, refused, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var waits []time.Duration
			p := Policy{
				Classify:      classify,
				RateLimitWait: 2 * time.Second,
				Transient:     3,
				Backoff:       func(n int) time.Duration { return time.Duration(n) * time.Second },
				Sleep: func(_ context.Context, d time.Duration) error {
					waits = append(waits, d)
					return nil
				},
			}
			s := &script{errs: tt.errs}
			err := p.Do(context.Background(), "chat.postMessage", tt.safe, s.call)
			if err != tt.wantErr {
				t.Errorf("Do = %v, want %v", err, tt.wantErr)
			}
			if s.calls != tt.calls {
				t.Errorf("%d calls, want %d", s.calls, tt.calls)
			}
			if !slices.Equal(waits, tt.waits) {
				t.Errorf("waits %v, want %v", waits, tt.waits)
			}
		})
	}
}

// TestDoStopsWithItsContext: a cancelled caller ends the wait at once
// (the real sleep, not a recorded one) and the call is not made again.
func TestDoStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &script{errs: []error{&StatusError{Code: 429, RetryAfter: time.Hour}}}
	p := Policy{Classify: classify}
	done := make(chan error, 1)
	go func() { done <- p.Do(ctx, "m", true, s.call) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Do = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Do still waits out an hour's rate limit after its caller stopped")
	}
	if s.calls != 1 {
		t.Errorf("%d calls", s.calls)
	}

	// A call that fails because its context ended is not classified: the
	// caller's reason is the answer.
	ctx, cancel = context.WithCancel(context.Background())
	calls := 0
	err := p.Do(ctx, "m", true, func(context.Context) error {
		calls++
		cancel()
		return down
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("Do = %v after %d calls, want context.Canceled after 1", err, calls)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"0", 0},
		{"-2", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"soon", 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.header != "" {
			h.Set("Retry-After", tt.header)
		}
		if got := RetryAfter(h, now); got != tt.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

// TestCheckStatus: a plain HTTP answer becomes a StatusError whose
// verdict follows its status and its Retry-After.
func TestCheckStatus(t *testing.T) {
	tests := []struct {
		code   int
		header string
		want   Verdict
	}{
		{429, "4", Verdict{Kind: RateLimited, After: 4 * time.Second}},
		{429, "", Verdict{Kind: RateLimited}},
		{500, "", Verdict{Kind: Transient}},
		{504, "", Verdict{Kind: Transient}},
		{404, "", Verdict{Kind: Fail}},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		if tt.header != "" {
			rec.Header().Set("Retry-After", tt.header)
		}
		rec.WriteHeader(tt.code)
		err := CheckStatus(rec.Result())
		var se *StatusError
		if !errors.As(err, &se) || se.Code != tt.code {
			t.Fatalf("CheckStatus(%d) = %v", tt.code, err)
		}
		if got := HTTPVerdict(se.Code, se.RetryAfter); got != tt.want {
			t.Errorf("%d %q: verdict %+v, want %+v", tt.code, tt.header, got, tt.want)
		}
	}
	rec := httptest.NewRecorder()
	rec.WriteHeader(204)
	if err := CheckStatus(rec.Result()); err != nil {
		t.Errorf("CheckStatus(204) = %v", err)
	}
}
