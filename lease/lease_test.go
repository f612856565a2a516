package lease

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/workspace"
)

func TestAcquireIsExclusiveAndNamesHolder(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		acquire func() (*Lock, error)
		what    string
	}{
		{"state dir", func() (*Lock, error) { return StateDir(dir) }, "state dir " + dir},
		{"token", func() (*Lock, error) { return Token(filepath.Join(dir, "tokens"), "slack-main", "xoxb-secret") }, "bot token of platform slack-main"},
		{"session", func() (*Lock, error) { return Session(dir, "0b3c6c1e-2f7e-4a53-9b7e-2f1d0a9c1234") }, "claude session 0b3c6c1e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tt.acquire()
			if err != nil {
				t.Fatalf("first acquire: %v", err)
			}
			_, err = tt.acquire()
			var held *HeldError
			if !errors.As(err, &held) || !errors.Is(err, ErrHeld) {
				t.Fatalf("second acquire: got %v, want a HeldError", err)
			}
			if held.PID != os.Getpid() {
				t.Errorf("holder pid %d, want %d", held.PID, os.Getpid())
			}
			if !strings.Contains(err.Error(), tt.what) || !strings.Contains(err.Error(), l.Path()) || !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
				t.Errorf("message %q should name %q, the lock file and the pid", err, tt.what)
			}
			if strings.Contains(err.Error(), "xoxb-secret") {
				t.Errorf("message leaks the token: %q", err)
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			l2, err := tt.acquire()
			if err != nil {
				t.Fatalf("acquire after release: %v", err)
			}
			_ = l2.Release()
		})
	}
}

func TestLockFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	l, err := StateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	fi, err := os.Stat(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(l.Path()))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("lock dir mode %v, want 0700", di.Mode().Perm())
	}
	if b, _ := os.ReadFile(l.Path()); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q, want our pid", b)
	}
}

func TestSessionRejectsIDsThatAreNotUUIDs(t *testing.T) {
	for _, id := range []string{"", "..", "a/b", `a\b`, "--dangerously-skip-permissions", "sess-1",
		"0B3C6C1E-2F7E-4A53-9B7E-2F1D0A9C1234", "0b3c6c1e2f7e4a539b7e2f1d0a9c1234"} {
		if _, err := Session(t.TempDir(), id); err == nil || errors.Is(err, ErrHeld) {
			t.Errorf("Session(%q) = %v, want an invalid id error", id, err)
		}
	}
}

// TestLockDiesWithKilledHolder runs a child process that takes the lock and
// is then SIGKILLed: the next acquire must succeed.
func TestLockDiesWithKilledHolder(t *testing.T) {
	if os.Getenv("LEASE_TEST_CHILD") != "" {
		l, err := Acquire(os.Getenv("LEASE_TEST_CHILD"), "test lock")
		if err != nil {
			os.Exit(3)
		}
		_ = l
		os.Stdout.WriteString("locked\n")
		select {} // hold until killed
	}
	path := filepath.Join(t.TempDir(), "locks", "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDiesWithKilledHolder$")
	cmd.Env = append(os.Environ(), "LEASE_TEST_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child did not lock: %q %v", buf, err)
	}
	_, err = Acquire(path, "test lock")
	var held *HeldError
	if !errors.As(err, &held) || held.PID != cmd.Process.Pid {
		t.Fatalf("while the child holds it: got %v, want HeldError naming pid %d", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	l, err := Acquire(path, "test lock")
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	_ = l.Release()
}

func TestTokenRefusesForeignOrLinkedLockDir(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Token(link, "tg", "secret"); !errors.Is(err, workspace.ErrSymlink) {
		t.Errorf("Token in a symlinked folder = %v, want a refusal", err)
	}
	testenv.NeedRoot(t, "giving a folder to another user")
	foreign := filepath.Join(root, "foreign")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Token(foreign, "tg", "secret"); !errors.Is(err, workspace.ErrNotPrivate) || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("Token in another user's folder = %v, want a refusal", err)
	}
	l, err := Token(filepath.Join(root, "fresh"), "tg", "secret")
	if err != nil {
		t.Fatalf("Token in a new folder: %v", err)
	}
	_ = l.Release()
}

// TestLocksRefusePlantedLinks: a symbolic link planted at any lock's path
// (the state dir lock, a session lock, a token lock under the temp dir)
// is refused, and the file it points to keeps its content: cc-connect
// never writes its pid through it.
func TestLocksRefusePlantedLinks(t *testing.T) {
	const id = "0b3c6c1e-2f7e-4a53-9b7e-2f1d0a9c1234"
	tests := []struct {
		name    string
		path    func(dir string) string
		acquire func(dir string) (*Lock, error)
	}{
		{"state dir", func(dir string) string { return filepath.Join(dir, "locks", "instance.lock") },
			func(dir string) (*Lock, error) { return StateDir(dir) }},
		{"session", func(dir string) string { return filepath.Join(dir, "locks", "sessions", id+".lock") },
			func(dir string) (*Lock, error) { return Session(dir, id) }},
		{"token", func(dir string) string {
			sum := sha256.Sum256([]byte("secret"))
			return filepath.Join(dir, "token-"+hex.EncodeToString(sum[:8])+".lock")
		}, func(dir string) (*Lock, error) { return Token(dir, "tg", "secret") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			victim := filepath.Join(t.TempDir(), "authorized_keys")
			if err := os.WriteFile(victim, []byte("ssh-ed25519 AAAA precious\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			path := tt.path(dir)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, path); err != nil {
				t.Fatal(err)
			}
			l, err := tt.acquire(dir)
			if !errors.Is(err, workspace.ErrSymlink) {
				l.Release()
				t.Fatalf("acquire over a planted link = %v, want ErrSymlink", err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "ssh-ed25519 AAAA precious\n" {
				t.Errorf("the link's target became %q", b)
			}
			// A linked folder of locks is refused too.
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			elsewhere := t.TempDir()
			lockDir := filepath.Dir(path)
			if err := os.Remove(lockDir); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, lockDir); err != nil {
				t.Fatal(err)
			}
			if l, err := tt.acquire(dir); !errors.Is(err, workspace.ErrSymlink) {
				l.Release()
				t.Fatalf("acquire in a linked folder = %v, want ErrSymlink", err)
			}
			if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
				t.Errorf("a lock was written through the linked folder: %v", entries)
			}
		})
	}
}

// TestHostLocksPassOverAFolderPlantedByAnother: another user who creates
// the usual token-lock folder first (a folder of theirs, a link, one open
// to everyone) does not keep cc-connect from starting: the locks go to a
// private folder in this user's cache dir, where two cc-connects of this
// user still meet, and the planted folder is left alone.
func TestHostLocksPassOverAFolderPlantedByAnother(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, usual string)
	}{
		{"nothing planted", func(*testing.T, string) {}},
		{"a link", func(t *testing.T, usual string) {
			if err := os.Symlink(t.TempDir(), usual); err != nil {
				t.Fatal(err)
			}
		}},
		{"a folder open to everyone", func(t *testing.T, usual string) {
			if err := os.Mkdir(usual, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(usual, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"a folder of another user", func(t *testing.T, usual string) {
			testenv.NeedRoot(t, "making a folder of another user")
			if err := os.Mkdir(usual, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(usual, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp, cache := t.TempDir(), t.TempDir()
			t.Setenv("TMPDIR", tmp)
			t.Setenv("XDG_CACHE_HOME", cache)
			usual := filepath.Join(tmp, "cc-connect-locks-"+strconv.Itoa(os.Getuid()))
			tt.plant(t, usual)
			before, _ := os.Lstat(usual)
			dir, moved := HostLocks()
			fallback := filepath.Join(cache, "cc-connect", "locks")
			switch {
			case tt.name == "nothing planted" && (dir != usual || moved != nil):
				t.Fatalf("HostLocks = %s, %v; want the usual %s", dir, moved, usual)
			case tt.name != "nothing planted" && (dir != fallback || moved == nil || !strings.Contains(moved.Error(), usual)):
				t.Fatalf("HostLocks = %s, %v; want %s, saying why", dir, moved, fallback)
			}
			l, err := Token(HostLockDir(), "slack", "xoxb-planted")
			if err != nil {
				t.Fatalf("taking a token lock: %v", err)
			}
			defer l.Release()
			if _, err := Token(HostLockDir(), "slack", "xoxb-planted"); !errors.Is(err, ErrHeld) {
				t.Errorf("a second cc-connect of this user took the same token: %v", err)
			}
			if before != nil {
				if after, _ := os.Lstat(usual); after == nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
					t.Errorf("the planted %s was changed", usual)
				}
				if entries, _ := os.ReadDir(usual); len(entries) != 0 {
					t.Errorf("something was written into the planted folder: %v", entries)
				}
			}
		})
	}
}
