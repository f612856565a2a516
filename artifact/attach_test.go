package artifact

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSafeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"report.log", "report.log"},
		{"../../etc/passwd", "passwd"},
		{`C:\Users\me\notes.txt`, "notes.txt"},
		{".bashrc", "bashrc"},
		{"my file (1).txt", "my_file__1_.txt"},
		{"résumé.pdf", "r_sum_.pdf"},
		{"", "file"},
		{"..", "file"},
		{"/", "file"},
		{strings.Repeat("a", 200) + ".txt", strings.Repeat("a", 76) + ".txt"},
	}
	for _, tt := range tests {
		if got := SafeName(tt.in); got != tt.want {
			t.Errorf("SafeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPutAttachmentPrivateAndOnce(t *testing.T) {
	ws := newWorkspace(t)
	s := NewStore(ws, Options{})
	content := []byte("line one\nline two\n")
	a, err := s.PutAttachment("../notes.txt", content)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.RelPath, ".cc-connect/attachments/") || !strings.HasSuffix(a.RelPath, "-notes.txt") ||
		a.Size != int64(len(content)) || len(a.SHA256) != 64 {
		t.Errorf("artifact = %+v", a)
	}
	full := filepath.Join(ws, filepath.FromSlash(a.RelPath))
	got, err := os.ReadFile(full)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("stored = %q, %v", got, err)
	}
	if m := mode(t, full); m != 0o600 {
		t.Errorf("file mode = %o, want 600", m)
	}
	if m := mode(t, filepath.Join(ws, StateDirName, AttachmentsDirName)); m != 0o700 {
		t.Errorf("folder mode = %o, want 700", m)
	}
	if _, err := os.Stat(filepath.Join(ws, StateDirName, ".gitignore")); err != nil {
		t.Errorf("no .gitignore: %v", err)
	}
	b, err := s.PutAttachment("notes.txt", content)
	if err != nil || b != a {
		t.Errorf("second put = %+v, %v; want the same file", b, err)
	}
	entries, _ := os.ReadDir(filepath.Join(ws, StateDirName, AttachmentsDirName))
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries, want 1", len(entries))
	}
}

func TestPutAttachmentRefusesSymlinkAndQuota(t *testing.T) {
	t.Run("symlinked folder", func(t *testing.T) {
		ws := newWorkspace(t)
		outside := t.TempDir()
		if err := os.Mkdir(filepath.Join(ws, StateDirName), 0o700); err != nil {
			t.Fatal(err)
		}
		mustSymlink(t, outside, filepath.Join(ws, StateDirName, AttachmentsDirName))
		_, err := NewStore(ws, Options{}).PutAttachment("a.txt", []byte("x"))
		if !errors.Is(err, ErrUnsafePath) {
			t.Fatalf("err = %v, want ErrUnsafePath", err)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Errorf("wrote through the link: %v", entries)
		}
	})
	t.Run("quota", func(t *testing.T) {
		ws := newWorkspace(t)
		s := NewStore(ws, Options{Quota: 10})
		if _, err := s.PutAttachment("a", []byte("123456")); err != nil {
			t.Fatal(err)
		}
		_, err := s.PutAttachment("b", []byte("abcdef"))
		var e *Error
		if !errors.Is(err, ErrQuotaExceeded) || !errors.As(err, &e) || e.Used != 6 || e.Need != 6 {
			t.Fatalf("err = %v, want ErrQuotaExceeded with used 6 need 6", err)
		}
	})
}
