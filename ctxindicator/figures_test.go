package ctxindicator

import (
	"log/slog"
	"testing"
)

func attrMap(attrs []slog.Attr) map[string]any {
	m := make(map[string]any, len(attrs))
	for _, a := range attrs {
		m[a.Key] = a.Value.Any()
	}
	return m
}

func TestFiguresComparison(t *testing.T) {
	tests := []struct {
		name       string
		f          Figures
		wantDrift  int
		wantDOK    bool
		wantAttrs  map[string]any
		wantStatus string
		wantOver   bool
	}{
		{
			name:      "both tracks",
			f:         NewFigures(124_000, 200_000, 0).WithSelfReport(70),
			wantDrift: 8, wantDOK: true,
			wantAttrs: map[string]any{
				"session_key": "k", "sdk_pct": int64(62), "input_tokens": int64(124_000),
				"context_window": int64(200_000), "self_reported_pct": int64(70), "drift": int64(8),
			},
			wantStatus: "Context: 62% (124,000 of 200,000 tokens); Claude's estimate: 70% (drift +8 points)",
		},
		{
			name:      "Claude underestimates on a 1M model",
			f:         NewFigures(450_000, 1_000_000, 0).WithSelfReport(30),
			wantDrift: -15, wantDOK: true,
			wantAttrs: map[string]any{
				"session_key": "k", "sdk_pct": int64(45), "input_tokens": int64(450_000),
				"context_window": int64(1_000_000), "self_reported_pct": int64(30), "drift": int64(-15),
			},
			wantStatus: "Context: 45% (450,000 of 1,000,000 tokens); Claude's estimate: 30% (drift -15 points)",
		},
		{
			name: "track A alone, assumed window",
			f:    NewFigures(4_207, 0, 0),
			wantAttrs: map[string]any{
				"session_key": "k", "sdk_pct": int64(2), "input_tokens": int64(4_207), "context_window": int64(200_000),
			},
			wantStatus: "Context: 2% (4,207 of 200,000 tokens, window assumed); Claude's estimate: none",
		},
		{
			name:       "track B alone",
			f:          NewFigures(0, 0, 0).WithSelfReport(12),
			wantAttrs:  map[string]any{"session_key": "k", "self_reported_pct": int64(12)},
			wantStatus: "Context: no token data yet; Claude's estimate: 12%",
		},
		{
			name:       "nothing yet",
			f:          NewFigures(0, 0, 0),
			wantAttrs:  map[string]any{"session_key": "k"},
			wantStatus: "Context: no token data yet; Claude's estimate: none",
		},
		{
			name:      "past the window",
			f:         NewFigures(212_000, 200_000, 0).WithSelfReport(95),
			wantDrift: -5, wantDOK: true, wantOver: true,
			wantAttrs: map[string]any{
				"session_key": "k", "sdk_pct": int64(100), "input_tokens": int64(212_000),
				"context_window": int64(200_000), "self_reported_pct": int64(95), "drift": int64(-5),
			},
			wantStatus: "Context: 100% (212,000 tokens, past the 200,000 window); Claude's estimate: 95% (drift -5 points)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := tt.f.Drift()
			if d != tt.wantDrift || ok != tt.wantDOK {
				t.Errorf("Drift() = %d, %v; want %d, %v", d, ok, tt.wantDrift, tt.wantDOK)
			}
			if got := tt.f.Overflow(); got != tt.wantOver {
				t.Errorf("Overflow() = %v, want %v", got, tt.wantOver)
			}
			got := attrMap(tt.f.LogAttrs("k"))
			if len(got) != len(tt.wantAttrs) {
				t.Errorf("LogAttrs = %v, want %v", got, tt.wantAttrs)
			}
			for k, v := range tt.wantAttrs {
				if got[k] != v {
					t.Errorf("LogAttrs[%s] = %v (%T), want %v", k, got[k], got[k], v)
				}
			}
			if args := tt.f.LogArgs("k"); len(args) != len(tt.wantAttrs) {
				t.Errorf("LogArgs has %d items, want %d", len(args), len(tt.wantAttrs))
			}
			if s := tt.f.StatusLine(); s != tt.wantStatus {
				t.Errorf("StatusLine() =\n %q\nwant\n %q", s, tt.wantStatus)
			}
		})
	}
}

func TestWithSelfReportClamps(t *testing.T) {
	if f := NewFigures(1, 0, 0).WithSelfReport(130); f.SelfPct != 100 || !f.HasSelf {
		t.Errorf("WithSelfReport(130) = %+v", f)
	}
	if f := NewFigures(1, 0, 0).WithSelfReport(-2); f.SelfPct != 0 {
		t.Errorf("WithSelfReport(-2) = %+v", f)
	}
}
