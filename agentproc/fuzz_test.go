package agentproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeLine checks the decoder never panics and keeps its promise on
// any input: a line that is not JSON is exactly one Malformed event; a JSON
// line is never Malformed, except a result that does not decode, which is
// flagged ErrMalformedOutput so the turn fails instead of hanging. Every
// line of the fixtures seeds the corpus.
func FuzzDecodeLine(f *testing.F) {
	for _, dir := range []string{"captures", "full", filepath.Join("captures", "*")} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.jsonl"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				f.Add(append([]byte(nil), sc.Bytes()...))
			}
		}
	}
	f.Add([]byte(`{"type":"result","num_turns":"x"}`))
	f.Add([]byte(`{"type":"control_request","request_id":"r","request":null}`))
	f.Add([]byte(`{"type":"assistant","message":{"content":"text"}}`))

	// A real call first, so the decoder holds turn state the fuzzed line
	// may have to reset.
	call := []byte(`{"type":"assistant","message":{"id":"m","model":"x","usage":{"input_tokens":1},"content":[{"type":"text","text":"t"}]}}`)
	f.Fuzz(func(t *testing.T, line []byte) {
		var dec decoder
		dec.decodeLine(call)
		if !dec.sawCall {
			t.Fatal("the seed call did not register")
		}
		d := dec.decodeLine(line)
		trimmed := bytes.TrimSpace(line)
		var malformed []Malformed
		for _, ev := range d.events {
			if ev == nil {
				t.Fatal("nil event")
			}
			if m, ok := ev.(Malformed); ok {
				malformed = append(malformed, m)
			}
		}
		switch {
		case len(trimmed) == 0:
			if len(d.events) != 0 {
				t.Fatalf("blank line gave %d events", len(d.events))
			}
		case !json.Valid(trimmed):
			if len(d.events) != 1 || len(malformed) != 1 || d.replyID != "" || d.perm != nil || d.unsupported != "" {
				t.Fatalf("invalid JSON gave %+v", d)
			}
			if len(malformed[0].Line) > malformedSnippet+len("…") {
				t.Fatalf("snippet of %d bytes", len(malformed[0].Line))
			}
		default:
			for _, m := range malformed {
				if !errors.Is(m.Err, ErrMalformedOutput) {
					t.Fatalf("valid JSON decoded as Malformed: %v", m.Err)
				}
			}
		}
		// The result side of the decoder state resets after every result.
		for _, ev := range d.events {
			_, isResult := ev.(*Result)
			m, isMalformed := ev.(Malformed)
			if (isResult || isMalformed && errors.Is(m.Err, errResultDecode)) && (dec.sawCall || dec.lastModel != "") {
				t.Fatal("decoder kept the turn's usage after a result")
			}
		}
	})
}

// FuzzLineReader compares the line splitter, run with bufio's smallest
// buffer so long lines span many fills, against a plain split: same lines,
// too-long ones reported and skipped, nothing lost after them.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nbb\n"), uint8(1))
	f.Add([]byte("0123456789abcdefghij\nshort\nlast"), uint8(5))
	f.Add([]byte("\n\n\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, max uint8) {
		var want []string
		if len(data) > 0 {
			parts := strings.Split(string(data), "\n")
			if strings.HasSuffix(string(data), "\n") {
				parts = parts[:len(parts)-1]
			}
			for _, p := range parts {
				if len(p) > int(max) {
					p = "!"
				}
				want = append(want, p)
			}
		}
		got := readLines(t, newLineReaderSize(bytes.NewReader(data), int(max), 16))
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("lines %q, want %q", got, want)
		}
	})
}
