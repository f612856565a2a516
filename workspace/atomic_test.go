package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteFileAtomicIsPrivateAndReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "sessions")
	path := filepath.Join(dir, "s.json")
	for _, content := range []string{"first", "second, longer content"} {
		if err := WriteFileAtomic(path, []byte(content)); err != nil {
			t.Fatalf("WriteFileAtomic: %v", err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", di.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
}

func TestEnsurePrivateDirRefusesFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EnsurePrivateDir(f); err == nil {
		t.Fatal("EnsurePrivateDir on a file succeeded")
	}
}

func TestQuarantineCorruptKeepsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	if err := os.WriteFile(path, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst, err := QuarantineCorrupt(path, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(dst), "s.json.corrupt-20260102T030405") {
		t.Errorf("quarantine name %q", dst)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "{broken" {
		t.Errorf("quarantined content %q, %v", b, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("original still present: %v", err)
	}
}
