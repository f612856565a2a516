package ctxindicator

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// callUsage is the usage block of an assistant event or a result.
type callUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

func (u callUsage) context() int64 {
	return u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

// turnFromCapture reads a one-turn stream-json capture of the real CLI and
// returns the last assistant event's context tokens, the number of
// assistant events, and the result's summed usage. Capture lines were cut
// at 700 characters, so the result line is not whole JSON: its usage object
// (which comes before the cut) is decoded on its own.
func turnFromCapture(t *testing.T, name string) (lastCall int64, events int, resultSum int64) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sawResult := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, `{"type":"assistant"`):
			var ev struct {
				Message struct {
					Usage callUsage `json:"usage"`
				} `json:"message"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: assistant line: %v", name, err)
			}
			lastCall = ev.Message.Usage.context()
			events++
		case strings.Contains(line, `"total_cost_usd"`):
			i := strings.Index(line, `"usage":`)
			if i < 0 {
				t.Fatalf("%s: result line without usage", name)
			}
			var u callUsage
			if err := json.NewDecoder(strings.NewReader(line[i+len(`"usage":`):])).Decode(&u); err != nil {
				t.Fatalf("%s: result usage: %v", name, err)
			}
			resultSum = u.context()
			sawResult = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !sawResult || events == 0 {
		t.Fatalf("%s: %d assistant events, result seen %v", name, events, sawResult)
	}
	return lastCall, events, resultSum
}

func TestFiguresFromCapturedStreams(t *testing.T) {
	tests := []struct {
		name          string
		capture       string
		window        int64 // what modelUsage would report; 0 = missing
		wantEvents    int
		wantTokens    int64
		wantResultSum int64
		wantPct       int
		wantSummedPct int // what the buggy result.usage figure would show
	}{
		{
			name: "one-call turn, 1M model", capture: "sample_hi.jsonl", window: 1_000_000,
			wantEvents: 1, wantTokens: 4207, wantResultSum: 4207, wantPct: 0, wantSummedPct: 0,
		},
		{
			name: "one-call turn, window missing falls back to 200k", capture: "sample_hi.jsonl",
			wantEvents: 1, wantTokens: 4207, wantResultSum: 4207, wantPct: 2, wantSummedPct: 2,
		},
		{
			// Two API calls (tool_use, then the answer): result.usage sums
			// both and doubles the context; the last call is the truth.
			name: "tool turn, 200k model", capture: "p0.stdout.jsonl", window: 200_000,
			wantEvents: 3, wantTokens: 4007, wantResultSum: 8014, wantPct: 2, wantSummedPct: 4,
		},
		{
			name: "tool turn, 1M model", capture: "p0.stdout.jsonl", window: 1_000_000,
			wantEvents: 3, wantTokens: 4007, wantResultSum: 8014, wantPct: 0, wantSummedPct: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last, events, sum := turnFromCapture(t, tt.capture)
			if events != tt.wantEvents || last != tt.wantTokens || sum != tt.wantResultSum {
				t.Fatalf("capture: %d events, last call %d, result.usage %d; want %d, %d, %d",
					events, last, sum, tt.wantEvents, tt.wantTokens, tt.wantResultSum)
			}
			f := NewFigures(last, tt.window, 0)
			pct, ok := f.SDK()
			if !ok || pct != tt.wantPct {
				t.Errorf("SDK() = %d, %v; want %d, true", pct, ok, tt.wantPct)
			}
			if got, _ := Percent(sum, f.Window); got != tt.wantSummedPct {
				t.Errorf("summed figure %d%%, want %d%%", got, tt.wantSummedPct)
			}
		})
	}
}
