package agentproc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// jsonStringPrefix must agree with encoding/json on whole strings, and on a
// string cut anywhere give a prefix of the decoded text.
func FuzzJSONStringPrefix(f *testing.F) {
	for _, s := range []string{"", "hi", "a\"b\\c\n", "ünï 😀", "<tag>&", "\x00\x1f", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, err := json.Marshal(s)
		if err != nil {
			t.Skip()
		}
		var want string
		if err := json.Unmarshal(enc, &want); err != nil {
			t.Fatal(err)
		}
		body := enc[1:] // after the opening quote
		if got := jsonStringPrefix(body); got != want {
			t.Fatalf("jsonStringPrefix(%q) = %q, want %q", body, got, want)
		}
		for cut := 0; cut < len(body)-1; cut++ {
			if got := jsonStringPrefix(body[:cut]); !strings.HasPrefix(want, got) {
				t.Fatalf("cut at %d: %q is not a prefix of %q", cut, got, want)
			}
		}
	})
}

// Lite reads and end classification take any bytes without panicking.
func FuzzTranscriptReaders(f *testing.F) {
	f.Add(newTranscript("s", "/p").turn("hi", "out", "done").bytes())
	f.Add(newTranscript("s", "/p").user("hi").toolUse("t", "ls", "").bytes())
	f.Add([]byte("{\"type\":\"user\",\"message\":{\"content\":\"\\ud83d"))
	f.Add([]byte("\n\n{\"type\":\"last-prompt\"}\n\xff\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := readLite(bytes.NewReader(data), "/x/s.jsonl", fakeInfo{size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		classifyLast(data)
		partialUserText(data)
	})
}
