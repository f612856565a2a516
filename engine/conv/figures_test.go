package conv

import (
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/ctxindicator"
)

func TestResultFigures(t *testing.T) {
	tests := []struct {
		name         string
		r            *agentproc.Result
		fallback     int64
		wantPct      int
		wantOK       bool
		wantWindow   int64
		wantReported bool
	}{
		{
			// A 1M model must not show 100% at 200k tokens.
			name: "1M model",
			r: &agentproc.Result{
				Model: "claude-opus-5-5", ContextTokens: 200_000,
				Usage:      agentproc.Usage{InputTokens: 390_000},
				ModelUsage: map[string]agentproc.ModelUsage{"claude-opus-5-5": {ContextWindow: 1_000_000}},
			},
			wantPct: 20, wantOK: true, wantWindow: 1_000_000, wantReported: true,
		},
		{
			name: "200k model",
			r: &agentproc.Result{
				Model: "claude-sonnet-4-5", ContextTokens: 150_000,
				ModelUsage: map[string]agentproc.ModelUsage{"claude-sonnet-4-5": {ContextWindow: 200_000}},
			},
			wantPct: 75, wantOK: true, wantWindow: 200_000, wantReported: true,
		},
		{
			// The figure is the last call's ContextTokens, never the turn's
			// summed usage.
			name: "tool turn uses the last call, not result.usage",
			r: &agentproc.Result{
				Model: "claude-sonnet-4-5", ContextTokens: 4_007,
				Usage:      agentproc.Usage{InputTokens: 14, CacheReadInputTokens: 5_000, CacheCreationInputTokens: 3_000},
				ModelUsage: map[string]agentproc.ModelUsage{"claude-sonnet-4-5": {ContextWindow: 200_000}},
			},
			wantPct: 2, wantOK: true, wantWindow: 200_000, wantReported: true,
		},
		{
			name:     "no modelUsage uses the configured fallback",
			r:        &agentproc.Result{ContextTokens: 150_000},
			fallback: 300_000,
			wantPct:  50, wantOK: true, wantWindow: 300_000,
		},
		{
			name:    "missing usage",
			r:       &agentproc.Result{Subtype: "error_during_execution", IsError: true},
			wantPct: 0, wantOK: false, wantWindow: ctxindicator.DefaultWindow,
		},
		{
			name:    "nil result",
			wantPct: 0, wantOK: false, wantWindow: ctxindicator.DefaultWindow,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := resultFigures(tt.r, tt.fallback)
			pct, ok := f.SDK()
			if pct != tt.wantPct || ok != tt.wantOK {
				t.Errorf("SDK() = %d, %v; want %d, %v", pct, ok, tt.wantPct, tt.wantOK)
			}
			if f.Window != tt.wantWindow || f.WindowReported != tt.wantReported {
				t.Errorf("window %d (reported %v), want %d (%v)", f.Window, f.WindowReported, tt.wantWindow, tt.wantReported)
			}
		})
	}
}
