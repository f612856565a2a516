// Package lease holds the exclusive locks that keep cc-connect from running
// twice over the same state, the same bot token, or the same Claude session.
// The Claude Code CLI does not lock its sessions: two processes on one
// session id fork its history silently, so cc-connect must. Locks are
// flock(2) locks, which the kernel drops when the holder dies, so a killed
// process never leaves a lock that blocks the next start.
package lease

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/cc-connect/cc-connect/workspace"
)

// ErrHeld is wrapped by HeldError; callers branch on it with errors.Is to
// tell "someone else has it" from an I/O failure.
var ErrHeld = errors.New("lock is held by another process")

// HeldError says who holds a lock.
type HeldError struct {
	What string // what the lock protects, e.g. "state dir /var/lib/cc-connect"
	Path string // the lock file
	PID  int    // the holder's pid as it wrote it; 0 when unknown
}

func (e *HeldError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("%s is in use by %s (lock file %s)", e.What, holder, e.Path)
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// Lock is one held lease. The zero value is not usable; get one from
// Acquire.
type Lock struct {
	fl   *flock.Flock
	path string
}

// Acquire takes the exclusive lock at path without waiting, creating the
// file (0600, in a 0700 folder) when needed, and writes this process's pid
// into it so that a contender can say who holds it. what names the thing
// protected, for the error message.
func Acquire(path, what string) (*Lock, error) {
	if err := workspace.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("locking %s: %w", what, err)
	}
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(workspace.FilePerm))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", what, err)
	}
	if !ok {
		pid := readPID(path)
		if pid > 0 && !pidAlive(pid) {
			// The holder the file names is dead, yet the lock is held:
			// by a child it was forking when it was killed, which holds
			// its descriptors until it execs (they are close-on-exec) or
			// dies, moments later.
			ctx, cancel := context.WithTimeout(context.Background(), staleHolderWait)
			ok, err = fl.TryLockContext(ctx, 5*time.Millisecond)
			cancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("locking %s: %w", what, err)
			}
		}
		if !ok {
			return nil, &HeldError{What: what, Path: path, PID: pid}
		}
	}
	if err := writePID(path); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("locking %s: %w", what, err)
	}
	return &Lock{fl: fl, path: path}, nil
}

// staleHolderWait bounds the wait for a lock whose named holder is dead.
var staleHolderWait = 5 * time.Second // a var for tests

// pidAlive reports whether a process with that pid exists.
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Path is the lock file.
func (l *Lock) Path() string { return l.path }

// Release drops the lock. The file stays: removing it would let a process
// that opened the old file and one that creates a new one both "hold" it.
func (l *Lock) Release() error {
	if l == nil || l.fl == nil {
		return nil
	}
	if err := l.fl.Unlock(); err != nil {
		return fmt.Errorf("releasing %s: %w", l.path, err)
	}
	return nil
}

func writePID(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, workspace.FilePerm)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// StateDir locks a cc-connect state dir: one cc-connect per state dir.
func StateDir(stateDir string) (*Lock, error) {
	return Acquire(filepath.Join(stateDir, "locks", "instance.lock"), "state dir "+stateDir)
}

// HostLockDir is where token locks live: one folder per user on the host,
// shared by every state dir, so that two cc-connects with different state
// dirs still cannot poll one bot token.
func HostLockDir() string {
	return filepath.Join(os.TempDir(), "cc-connect-locks-"+strconv.Itoa(os.Getuid()))
}

// Token locks a platform bot token on this host. The file is named by a
// hash of the token, which never reaches the disk or a message itself.
func Token(lockDir, platformName, token string) (*Lock, error) {
	if err := checkOwnDir(lockDir); err != nil {
		return nil, fmt.Errorf("locking the bot token of platform %s: %w", platformName, err)
	}
	sum := sha256.Sum256([]byte(token))
	name := "token-" + hex.EncodeToString(sum[:8]) + ".lock"
	return Acquire(filepath.Join(lockDir, name), "the bot token of platform "+platformName)
}

// checkOwnDir refuses a lock folder that is a symlink or belongs to another
// user: token locks live under the shared temp dir, where another user
// could create the folder first to block or redirect them. A missing
// folder is fine: Acquire creates it.
func checkOwnDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("lock folder %s is not a directory (a symlink?)", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("lock folder %s belongs to uid %d, not to this user", dir, st.Uid)
	}
	return nil
}

// Session locks one Claude session id while a claude process runs on it,
// so that a fork, a resume and crash recovery can never run two processes
// on one session.
func Session(stateDir, sessionID string) (*Lock, error) {
	if sessionID == "" || strings.ContainsAny(sessionID, `/\`) || sessionID == "." || sessionID == ".." {
		return nil, fmt.Errorf("locking claude session: invalid session id %q", sessionID)
	}
	return Acquire(filepath.Join(stateDir, "locks", "sessions", sessionID+".lock"), "claude session "+sessionID)
}
