package artifact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrepareThreshold(t *testing.T) {
	tests := []struct {
		name       string
		size       int
		threshold  int
		wantStored bool
	}{
		{"small", 10, 0, false},
		{"exactly the default threshold", DefaultThreshold, 0, false},
		{"one byte over the default", DefaultThreshold + 1, 0, true},
		{"configured threshold", 101, 100, true},
		{"at the configured threshold", 100, 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t)
			text := strings.Repeat("z", tt.size)
			prompt, a, stored, err := NewStore(ws, Options{Threshold: tt.threshold}).Prepare(text)
			if err != nil {
				t.Fatal(err)
			}
			if stored != tt.wantStored {
				t.Fatalf("stored = %v, want %v", stored, tt.wantStored)
			}
			_, statErr := os.Lstat(filepath.Join(ws, StateDirName))
			if !stored {
				if prompt != text || a != (Artifact{}) {
					t.Errorf("a message within the threshold was changed")
				}
				if !os.IsNotExist(statErr) {
					t.Errorf("a small message created %s", StateDirName)
				}
				return
			}
			if prompt != BoundedPrompt(text, a, DefaultHeadBytes) {
				t.Errorf("Prepare prompt is not BoundedPrompt")
			}
			got, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(a.RelPath)))
			if err != nil || string(got) != text {
				t.Errorf("artifact does not hold the whole message (%d bytes, %v)", len(got), err)
			}
		})
	}
}

func TestPrepareHeadBytesOption(t *testing.T) {
	ws := newWorkspace(t)
	text := "HEAD" + strings.Repeat("-", 200)
	prompt, _, _, err := NewStore(ws, Options{Threshold: 10, HeadBytes: -1}).Prepare(text)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(prompt, "HEAD") || strings.Contains(prompt, "excerpt") {
		t.Errorf("negative HeadBytes still shows an excerpt: %q", prompt)
	}
	prompt, _, _, err = NewStore(ws, Options{Threshold: 10, HeadBytes: 6}).Prepare(text)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prompt, "<excerpt>\nHEAD--\n</excerpt>") {
		t.Errorf("HeadBytes 6 excerpt wrong: %q", prompt)
	}
}

func TestBoundedPromptTellsClaudeToReadTheFile(t *testing.T) {
	ws := newWorkspace(t)
	text := "Please review this log:\n" + strings.Repeat("line ü\n", 5000)
	a, err := NewStore(ws, Options{}).Put([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p := BoundedPrompt(text, a, 100)
	for _, want := range []string{
		"path: " + a.RelPath,
		"size: 40024 bytes",
		"sha256: " + a.SHA256,
		"Read that file in full",
		"<excerpt>\nPlease review this log:\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if a.Size != int64(len(text)) || len(text) != 40024 {
		t.Fatalf("size %d, text %d", a.Size, len(text))
	}
	if !strings.HasPrefix(a.RelPath, ".cc-connect/artifacts/") || filepath.IsAbs(a.RelPath) {
		t.Errorf("RelPath %q is not relative to the workspace", a.RelPath)
	}
	if strings.Contains(p, ws) || strings.Contains(p, os.TempDir()) {
		t.Errorf("prompt exposes a host path:\n%s", p)
	}
	if len(p) > 2000 {
		t.Errorf("prompt is %d bytes for a 100-byte head; it must stay bounded", len(p))
	}
}

func TestCutUTF8(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"héllo", 2, "h"}, // 'é' is 2 bytes: cutting inside it backs off
		{"héllo", 3, "hé"},
		{"😀😀", 5, "😀"},
		{"😀😀", 3, ""},
		{"abc", 10, "abc"},
		{"abc", 0, ""},
		{"abc", -1, ""},
	}
	for _, tt := range tests {
		got := cutUTF8(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("cutUTF8(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
