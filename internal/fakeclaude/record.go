package fakeclaude

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// RecordedLine is one user line the fake claude appended to the file named
// by FAKECLAUDE_RECORD: which process and session received what.
type RecordedLine struct {
	Pid       int    `json:"pid"`
	SessionID string `json:"session_id"`
	Text      string `json:"text"`
}

// ReadRecord returns the lines of a FAKECLAUDE_RECORD file in the order
// they were received; none while the file does not exist yet.
func ReadRecord(t testing.TB, path string) []RecordedLine {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []RecordedLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l RecordedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("record line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return out
}

// Texts returns the texts of lines, in order.
func Texts(lines []RecordedLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}
