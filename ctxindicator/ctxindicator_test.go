package ctxindicator

import "testing"

func TestPercent(t *testing.T) {
	tests := []struct {
		name           string
		tokens, window int64
		want           int
		wantOver       bool
	}{
		{"empty", 0, 200_000, 0, false},
		{"negative tokens", -5, 200_000, 0, false},
		{"no window", 1000, 0, 0, false},
		{"rounds down below half", 4_999, 1_000_000, 0, false},
		{"rounds half up", 5_000, 1_000_000, 1, false},
		{"62 percent of 200k", 124_000, 200_000, 62, false},
		{"62.5 rounds to 63", 125_000, 200_000, 63, false},
		{"full", 200_000, 200_000, 100, false},
		{"99.6 rounds to 100 without overflow", 199_200, 200_000, 100, false},
		{"past the window clamps and reports", 212_000, 200_000, 100, true},
		{"200k of a 1M model is 20, not 100", 200_000, 1_000_000, 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, over := Percent(tt.tokens, tt.window)
			if got != tt.want || over != tt.wantOver {
				t.Errorf("Percent(%d, %d) = %d, %v; want %d, %v", tt.tokens, tt.window, got, over, tt.want, tt.wantOver)
			}
		})
	}
}

func TestNewFiguresPicksWindow(t *testing.T) {
	tests := []struct {
		name                     string
		tokens, reported, fallbk int64
		wantWindow               int64
		wantReported             bool
		wantPct                  int
		wantOK                   bool
	}{
		{"reported 1M window wins over fallback", 500_000, 1_000_000, 200_000, 1_000_000, true, 50, true},
		{"reported 200k window", 150_000, 200_000, 0, 200_000, true, 75, true},
		{"configured fallback", 150_000, 0, 300_000, 300_000, false, 50, true},
		{"default fallback", 150_000, 0, 0, DefaultWindow, false, 75, true},
		{"missing usage", 0, 1_000_000, 0, 1_000_000, true, 0, false},
		{"negative tokens are missing", -1, 0, 0, DefaultWindow, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFigures(tt.tokens, tt.reported, tt.fallbk)
			if f.Window != tt.wantWindow || f.WindowReported != tt.wantReported {
				t.Errorf("window %d (reported %v), want %d (%v)", f.Window, f.WindowReported, tt.wantWindow, tt.wantReported)
			}
			pct, ok := f.SDK()
			if pct != tt.wantPct || ok != tt.wantOK {
				t.Errorf("SDK() = %d, %v; want %d, %v", pct, ok, tt.wantPct, tt.wantOK)
			}
		})
	}
}
