package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/internal/testenv"
)

func newWorkspace(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// listArtifacts returns the names in the artifacts folder, temp files included.
func listArtifacts(t *testing.T, ws string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(ws, StateDirName, ArtifactsDirName))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestPutStoresWholeAndPrivate(t *testing.T) {
	tests := []struct {
		name    string
		content []byte
		ext     string
	}{
		{"utf-8 text is markdown", []byte(strings.Repeat("# Title\nbody é 😀\n", 2000)), ".md"},
		{"other bytes are text", append([]byte("latin-1 caf"), 0xe9, '\n'), ".txt"},
		{"empty", nil, ".md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t)
			a, err := NewStore(ws, Options{}).Put(tt.content)
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			sum := sha256.Sum256(tt.content)
			wantHex := hex.EncodeToString(sum[:])
			want := Artifact{RelPath: ".cc-connect/artifacts/" + wantHex + tt.ext, Size: int64(len(tt.content)), SHA256: wantHex}
			if a != want {
				t.Fatalf("Put = %+v, want %+v", a, want)
			}
			got, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(a.RelPath)))
			if err != nil || !bytes.Equal(got, tt.content) {
				t.Fatalf("stored content differs (%d bytes, %v)", len(got), err)
			}
			for path, want := range map[string]os.FileMode{
				filepath.Join(ws, StateDirName):                   0o700,
				filepath.Join(ws, StateDirName, ArtifactsDirName): 0o700,
				filepath.Join(ws, filepath.FromSlash(a.RelPath)):  0o600,
				filepath.Join(ws, StateDirName, ".gitignore"):     0o600,
			} {
				if m := mode(t, path); m != want {
					t.Errorf("%s: mode %v, want %v", path, m, want)
				}
			}
			gi, err := os.ReadFile(filepath.Join(ws, StateDirName, ".gitignore"))
			if err != nil || string(gi) != "*\n" {
				t.Errorf(".gitignore = %q, %v; want %q", gi, err, "*\n")
			}
			if names := listArtifacts(t, ws); len(names) != 1 {
				t.Errorf("artifacts folder holds %v, want only the artifact", names)
			}
		})
	}
}

func TestPutStoresSameContentOnce(t *testing.T) {
	ws := newWorkspace(t)
	s := NewStore(ws, Options{})
	content := []byte(strings.Repeat("same prompt\n", 3000))
	first, err := s.Put(content)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, filepath.FromSlash(first.RelPath))
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Put(content)
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Errorf("second Put = %+v, want %+v", second, first)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the same content was written again (new inode)")
	}
	other, err := s.Put([]byte("different"))
	if err != nil {
		t.Fatal(err)
	}
	if other.RelPath == first.RelPath {
		t.Error("different content got the same name")
	}
	if names := listArtifacts(t, ws); len(names) != 2 {
		t.Errorf("artifacts folder holds %v, want two files", names)
	}
}

func TestPutRepairsDamagedFileAndLooseModes(t *testing.T) {
	ws := newWorkspace(t)
	content := []byte("the real content")
	sum := sha256.Sum256(content)
	name := hex.EncodeToString(sum[:]) + ".md"
	arts := filepath.Join(ws, StateDirName, ArtifactsDirName)
	if err := os.MkdirAll(arts, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(ws, StateDirName), arts} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(arts, name), []byte("trunc"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := NewStore(ws, Options{}).Put(content)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(a.RelPath)))
	if err != nil || !bytes.Equal(got, content) {
		t.Errorf("damaged file not replaced: %q, %v", got, err)
	}
	if m := mode(t, filepath.Join(ws, StateDirName)); m != 0o700 {
		t.Errorf(".cc-connect mode %v, want 0700", m)
	}
	if m := mode(t, arts); m != 0o700 {
		t.Errorf("artifacts mode %v, want 0700", m)
	}
	if m := mode(t, filepath.Join(arts, name)); m != 0o600 {
		t.Errorf("file mode %v, want 0600", m)
	}

	// A stored file loosened later is tightened on the next Put of it.
	if err := os.Chmod(filepath.Join(arts, name), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewStore(ws, Options{}).Put(content); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, filepath.Join(arts, name)); m != 0o600 {
		t.Errorf("file mode after re-Put %v, want 0600", m)
	}
}

func TestPutKeepsExistingGitignore(t *testing.T) {
	ws := newWorkspace(t)
	if err := os.Mkdir(filepath.Join(ws, StateDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	const custom = "*\n!keep.txt\n"
	if err := os.WriteFile(filepath.Join(ws, StateDirName, ".gitignore"), []byte(custom), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewStore(ws, Options{}).Put([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, StateDirName, ".gitignore")); string(b) != custom {
		t.Errorf(".gitignore rewritten to %q", b)
	}
}

func TestPutRefusesSymlinks(t *testing.T) {
	content := []byte("prompt")
	sum := sha256.Sum256(content)
	fileName := hex.EncodeToString(sum[:]) + ".md"
	tests := []struct {
		name string
		// setup plants a link in ws, pointing into outside, and returns the
		// path relative to the workspace that must be named.
		setup func(t *testing.T, ws, outside string) string
	}{
		{"state folder links outside", func(t *testing.T, ws, outside string) string {
			mustSymlink(t, outside, filepath.Join(ws, StateDirName))
			return ".cc-connect"
		}},
		{"state folder links inside the workspace", func(t *testing.T, ws, _ string) string {
			mustMkdir(t, filepath.Join(ws, "elsewhere"))
			mustSymlink(t, "elsewhere", filepath.Join(ws, StateDirName))
			return ".cc-connect"
		}},
		{"artifacts folder", func(t *testing.T, ws, outside string) string {
			mustMkdir(t, filepath.Join(ws, StateDirName))
			mustSymlink(t, outside, filepath.Join(ws, StateDirName, ArtifactsDirName))
			return ".cc-connect/artifacts"
		}},
		{"gitignore", func(t *testing.T, ws, outside string) string {
			mustMkdir(t, filepath.Join(ws, StateDirName))
			mustSymlink(t, filepath.Join(outside, "victim"), filepath.Join(ws, StateDirName, ".gitignore"))
			return ".cc-connect/.gitignore"
		}},
		{"the artifact file, even with the right content", func(t *testing.T, ws, outside string) string {
			arts := filepath.Join(ws, StateDirName, ArtifactsDirName)
			mustMkdir(t, arts)
			target := filepath.Join(outside, "same")
			if err := os.WriteFile(target, content, 0o600); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, target, filepath.Join(arts, fileName))
			return ".cc-connect/artifacts/" + fileName
		}},
		{"the artifact file, dangling", func(t *testing.T, ws, outside string) string {
			arts := filepath.Join(ws, StateDirName, ArtifactsDirName)
			mustMkdir(t, arts)
			mustSymlink(t, filepath.Join(outside, "new"), filepath.Join(arts, fileName))
			return ".cc-connect/artifacts/" + fileName
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t)
			outside := newWorkspace(t)
			rel := tt.setup(t, ws, outside)
			before := treeOf(t, outside)
			_, err := NewStore(ws, Options{}).Put(content)
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("Put err = %v, want ErrUnsafePath", err)
			}
			msg := UserMessage(err)
			if !strings.Contains(msg, rel) || !strings.Contains(msg, "symbolic link") {
				t.Errorf("UserMessage %q does not name %s as a symbolic link", msg, rel)
			}
			assertNoHostPath(t, msg, ws, outside)
			if after := treeOf(t, outside); after != before {
				t.Errorf("the link target changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func TestPutRefusesWrongKinds(t *testing.T) {
	ws := newWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws, StateDirName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewStore(ws, Options{}).Put([]byte("x"))
	if !errors.Is(err, ErrUnsafePath) || !strings.Contains(UserMessage(err), ".cc-connect is not a folder") {
		t.Errorf("Put with .cc-connect a file: %v / %q", err, UserMessage(err))
	}
}

func TestPutRefusesAnotherOwner(t *testing.T) {
	testenv.NeedRoot(t, "chowning a file to another user")
	const nobody = 65534
	content := []byte("prompt")
	sum := sha256.Sum256(content)
	fileName := hex.EncodeToString(sum[:]) + ".md"
	tests := []struct {
		name string
		rel  string // path chowned, relative to the workspace
	}{
		{"state folder", ".cc-connect"},
		{"artifacts folder", ".cc-connect/artifacts"},
		{"gitignore", ".cc-connect/.gitignore"},
		{"artifact file", ".cc-connect/artifacts/" + fileName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t)
			s := NewStore(ws, Options{})
			if _, err := s.Put(content); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(filepath.Join(ws, filepath.FromSlash(tt.rel)), nobody, nobody); err != nil {
				t.Fatal(err)
			}
			_, err := s.Put(content)
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("Put err = %v, want ErrUnsafePath", err)
			}
			msg := UserMessage(err)
			if !strings.Contains(msg, tt.rel+" belongs to another user") {
				t.Errorf("UserMessage %q does not name %s", msg, tt.rel)
			}
			assertNoHostPath(t, msg, ws)
		})
	}
}

func TestPutQuota(t *testing.T) {
	ws := newWorkspace(t)
	// The quota bounds the artifacts folder only; .gitignore lives a level up.
	s := NewStore(ws, Options{Quota: 100})
	a60 := bytes.Repeat([]byte("a"), 60)
	first, err := s.Put(a60)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Put(bytes.Repeat([]byte("b"), 41))
	if !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("Put past the quota: err = %v, want ErrQuotaExceeded", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Used != 60 || e.Need != 41 || e.Quota != 100 {
		t.Errorf("quota error = %+v", e)
	}
	msg := UserMessage(err)
	for _, want := range []string{".cc-connect/artifacts", "60 B used of 100 B", "41 B more", "Nothing was sent"} {
		if !strings.Contains(msg, want) {
			t.Errorf("UserMessage %q lacks %q", msg, want)
		}
	}
	assertNoHostPath(t, msg, ws)
	// Nothing of the user's was deleted to make room, and nothing was written.
	if names := listArtifacts(t, ws); len(names) != 1 || !strings.HasSuffix(first.RelPath, names[0]) {
		t.Errorf("artifacts folder holds %v after a refusal", names)
	}
	// Content already stored needs no room.
	if _, err := s.Put(a60); err != nil {
		t.Errorf("re-Put of stored content: %v", err)
	}
	// Exactly filling the quota is allowed.
	if _, err := s.Put(bytes.Repeat([]byte("c"), 40)); err != nil {
		t.Errorf("Put up to the quota: %v", err)
	}
	if _, err := s.Put([]byte("d")); !errors.Is(err, ErrQuotaExceeded) {
		t.Errorf("Put one byte past a full quota: %v", err)
	}
}

func TestPutQuotaHoldsUnderConcurrency(t *testing.T) {
	ws := newWorkspace(t)
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A Store each: the quota must hold per workspace, not per Store.
			_, errs[i] = NewStore(ws, Options{Quota: 1000}).Put([]byte(fmt.Sprintf("%03d%s", i, strings.Repeat("x", 97))))
		}()
	}
	wg.Wait()
	stored := 0
	for _, err := range errs {
		switch {
		case err == nil:
			stored++
		case !errors.Is(err, ErrQuotaExceeded):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if stored != 10 || len(listArtifacts(t, ws)) != 10 {
		t.Errorf("stored %d (%d files) of 100-byte artifacts under a 1000-byte quota, want 10", stored, len(listArtifacts(t, ws)))
	}
}

func TestPutMissingWorkspaceHidesPath(t *testing.T) {
	ws := filepath.Join(newWorkspace(t), "gone")
	_, err := NewStore(ws, Options{}).Put([]byte("x"))
	if err == nil {
		t.Fatal("Put into a missing workspace succeeded")
	}
	if !strings.Contains(err.Error(), ws) {
		t.Errorf("Error() %q should keep the host path for the log", err)
	}
	assertNoHostPath(t, UserMessage(err), ws)
	assertNoHostPath(t, UserMessage(errors.New("open "+ws+": boom")), ws)
}

func TestNewStoreTouchesNothing(t *testing.T) {
	ws := newWorkspace(t)
	s := NewStore(ws, Options{})
	if s.Exceeds(DefaultThreshold) || !s.Exceeds(DefaultThreshold+1) {
		t.Error("default threshold is not 16 KiB")
	}
	if _, err := os.Lstat(filepath.Join(ws, StateDirName)); !os.IsNotExist(err) {
		t.Errorf("NewStore created %s: %v", StateDirName, err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

// treeOf describes every entry under dir (name, mode, size), to show that a
// refused Put wrote nothing through a link.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d; ", strings.TrimPrefix(path, dir), fi.Mode(), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func assertNoHostPath(t *testing.T, msg string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if strings.Contains(msg, p) {
			t.Errorf("user message %q exposes host path %s", msg, p)
		}
	}
	if strings.Contains(msg, os.TempDir()) {
		t.Errorf("user message %q exposes a host path", msg)
	}
}
