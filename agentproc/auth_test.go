package agentproc

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The results the real CLI sends without credentials (captured from
// 2.1.332) are recognised; a successful one and other failures are not.
func TestAuthFailed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		capture string
		want    bool
	}{
		{"not_logged_in", true},
		{"invalid_api_key", true},
		{"todowrite", false},
		{"ask_interrupt", false},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "captures", tt.capture, "stdout.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var dec decoder
		var results []*Result
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			for _, ev := range dec.decodeLine(sc.Bytes()).events {
				if r, ok := ev.(*Result); ok {
					results = append(results, r)
				}
			}
		}
		if len(results) == 0 {
			t.Fatalf("%s: no result", tt.capture)
		}
		for _, r := range results {
			if got := r.AuthFailed(); got != tt.want {
				t.Errorf("%s: AuthFailed() = %v for %q, want %v", tt.capture, got, r.Text, tt.want)
			}
		}
	}
	if IsAuthFailure("Prompt is too long") || !IsAuthFailure("  Not logged in · Please run /login\n") {
		t.Error("IsAuthFailure misreads a line")
	}
}
