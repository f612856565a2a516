package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestEnsurePrivateDirRefusesSharedFolders: a state folder that already
// exists and is open to others (state.dir = "/tmp", a 1777 folder), or is
// a link, is refused and left as it was; only a folder cc-connect creates
// is made 0700.
func TestEnsurePrivateDirRefusesSharedFolders(t *testing.T) {
	tests := []struct {
		name string
		mode os.FileMode
		want error
	}{
		{"sticky world-writable, like /tmp", os.ModeSticky | 0o777, ErrNotPrivate},
		{"world-readable", 0o755, ErrNotPrivate},
		{"group-readable", 0o750, ErrNotPrivate},
		{"private", 0o700, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.mode); err != nil {
				t.Fatal(err)
			}
			err := EnsurePrivateDir(dir)
			if !errors.Is(err, tt.want) {
				t.Fatalf("EnsurePrivateDir = %v, want %v", err, tt.want)
			}
			if err != nil && (!strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "chmod 700")) {
				t.Errorf("error %q should name the folder and the fix", err)
			}
			fi, _ := os.Stat(dir)
			if got := fi.Mode() & (os.ModePerm | os.ModeSticky); got != tt.mode {
				t.Errorf("mode changed to %v, want %v kept", got, tt.mode)
			}
		})
	}
}

func TestEnsurePrivateDirCreatesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "state")
	if err := EnsurePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != DirPerm {
			t.Errorf("%s mode %v, want 0700", d, fi.Mode().Perm())
		}
	}
	if err := EnsurePrivateDir(dir); err != nil {
		t.Errorf("a second call on the folder it made: %v", err)
	}
}

func TestEnsurePrivateDirRefusesLinkAndForeignOwner(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := EnsurePrivateDir(link); !errors.Is(err, ErrSymlink) {
		t.Errorf("EnsurePrivateDir(link) = %v, want ErrSymlink", err)
	}
	if err := WriteFileAtomic(filepath.Join(link, "f"), []byte("x")); !errors.Is(err, ErrSymlink) {
		t.Errorf("WriteFileAtomic through a linked folder = %v, want ErrSymlink", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("the link's target was written to: %v", entries)
	}
	testenv.NeedRoot(t, "giving a folder to another user")
	foreign := filepath.Join(root, "foreign")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := EnsurePrivateDir(foreign); !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("EnsurePrivateDir(another user's folder) = %v, want ErrNotPrivate naming the owner", err)
	}
}

// TestNoFollowRefusesPlantedLinks: a link planted where cc-connect keeps a
// file is not followed, so its target is neither read nor written.
func TestNoFollowRefusesPlantedLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "state.lock")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFileNoFollow(link, os.O_RDWR|os.O_CREATE|os.O_TRUNC, FilePerm); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenFileNoFollow(link) = %v, want ErrSymlink", err)
	}
	if _, err := ReadFileNoFollow(link); !errors.Is(err, ErrSymlink) {
		t.Errorf("ReadFileNoFollow(link) = %v, want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the link's target became %q", b)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := OpenFileNoFollow(fifo, os.O_RDWR, FilePerm)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("OpenFileNoFollow(fifo) = %v, want a refusal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO blocked")
	}
}

// TestWriteFileAtomicReplacesPlantedLink: the state files written through
// WriteFileAtomic (session records, agent pid files) replace a link at
// their path instead of writing through it.
func TestWriteFileAtomicReplacesPlantedLink(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := EnsurePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.json")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("state")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the link's target became %q", b)
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s is %v (%v), want a regular file", path, fi.Mode(), err)
	}
	if b, _ := ReadFileNoFollow(path); string(b) != "state" {
		t.Errorf("read back %q", b)
	}
}
