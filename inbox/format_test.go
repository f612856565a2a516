package inbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/format"
)

// Every record carries the format it was written in; a journal of an
// older format (none) is read, one holding a newer record is refused
// whole, by Open and by CheckFormats, with a message that names the file
// and the way out, and the file is left as it is.
func TestJournalFormatVersions(t *testing.T) {
	dir := privateDir(t)
	in := openT(t, filepath.Join(dir, "now.jsonl"), Limits{})
	if err := in.Append(Entry{ID: "m1", Text: "hello", UserID: "U1"}); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "now.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `,"v":` + string(rune('0'+format.Written())) + "}"; !strings.Contains(string(data), want) {
		t.Fatalf("a record does not carry its format (%s): %s", want, data)
	}
	newer := `{"op":"add","entry":{"id":"m2","user_id":"U1","text":"from the future","received":"2026-11-30T12:00:00Z"},"v":` +
		string(rune('0'+format.Written()+1)) + "}\n"
	for _, tc := range []struct {
		name, body string
		refused    bool
	}{
		{"landed, unversioned", mustRead(t, filepath.Join("testdata", "journal-landed.jsonl")), false},
		{"this build's", string(data), false},
		{"a newer build's", string(data) + newer, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := privateDir(t)
			p := filepath.Join(d, "j.jsonl")
			if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			cerr := CheckFormats(d)
			in, oerr := Open(p, Limits{}, nil)
			if oerr == nil {
				in.Close()
			}
			for _, err := range []error{cerr, oerr} {
				if got := errors.Is(err, format.ErrNewer); got != tc.refused {
					t.Fatalf("refused = %v (%v), want %v", got, err, tc.refused)
				}
				if tc.refused && !strings.Contains(err.Error(), p) {
					t.Errorf("the refusal does not name the journal: %v", err)
				}
			}
			if after, _ := os.ReadFile(p); string(after) != tc.body {
				t.Errorf("the journal was changed")
			}
		})
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
