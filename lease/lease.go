// Package lease holds the exclusive locks that keep cc-connect from running
// twice over the same state, the same bot token, or the same Claude session.
// The Claude Code CLI does not lock its sessions: two processes on one
// session id fork its history silently, so cc-connect must. Locks are
// flock(2) locks, which the kernel drops when the holder dies, so a killed
// process never leaves a lock that blocks the next start.
package lease

import (
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

	"github.com/google/uuid"

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
	f    *os.File // holds the flock; closing it drops the lock
	path string
}

// Acquire takes the exclusive lock at path without waiting, creating the
// file (0600, in a 0700 folder) when needed, and writes this process's pid
// into it so that a contender can say who holds it. what names the thing
// protected, for the error message.
//
// The file is opened without following links and must be a regular file
// of this user: a symbolic link planted at a lock's path (or a folder of
// locks that is a link) is refused, so cc-connect never writes its pid
// through it into the link's target.
func Acquire(path, what string) (*Lock, error) {
	if err := workspace.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("locking %s: %w", what, err)
	}
	f, err := workspace.OpenFileNoFollow(path, os.O_RDWR|os.O_CREATE, workspace.FilePerm)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", what, err)
	}
	if err := checkOwnFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", what, err)
	}
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", what, err)
	}
	if !ok {
		pid := readPID(f)
		if pid > 0 && !pidAlive(pid) {
			// The holder the file names is dead, yet the lock is held:
			// by a child it was forking when it was killed, which holds
			// its descriptors until it execs (they are close-on-exec) or
			// dies, moments later.
			ok, err = waitLock(f, staleHolderWait)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("locking %s: %w", what, err)
			}
		}
		if !ok {
			f.Close()
			return nil, &HeldError{What: what, Path: path, PID: pid}
		}
	}
	if err := writePID(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", what, err)
	}
	return &Lock{f: f, path: path}, nil
}

// staleHolderWait bounds the wait for a lock whose named holder is dead.
var staleHolderWait = 5 * time.Second // a var for tests

// tryLock takes the flock on f without waiting; false means another open
// file holds it.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return false, err
	}
}

// waitLock retries tryLock until it succeeds or wait has passed. There is
// no event for "the other descriptor was closed": flock can only block
// without a bound or be asked again.
func waitLock(f *os.File, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := tryLock(f)
		if ok || err != nil || time.Now().After(deadline) {
			return ok, err
		}
		<-tick.C
	}
}

// checkOwnFile refuses a lock file of another user: in a folder of ours
// nobody else can create one, so it was put there on purpose.
func checkOwnFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("lock file %s belongs to uid %d, not to this user", f.Name(), st.Uid)
	}
	return nil
}

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
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	uerr := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err := f.Close(); uerr == nil {
		uerr = err
	}
	if uerr != nil {
		return fmt.Errorf("releasing %s: %w", l.path, uerr)
	}
	return nil
}

// writePID records this process as the holder, through the locked file
// itself: the path is not opened again, so it cannot have been swapped.
func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// readPID is the holder's pid as written in f, or 0.
func readPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
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
// dirs still cannot poll one bot token (HostLocks says why it is where it
// is).
func HostLockDir() string {
	dir, _ := HostLocks()
	return dir
}

// HostLocks returns the folder of the token locks, made if missing, and,
// when the usual one was passed over, why. The usual one is
// <temp>/cc-connect-locks-<uid>, shared by every state dir of this user.
// The temp folder is everyone's: another user may create that name first
// (a folder of theirs, a link, one open to others) to block or redirect
// the locks. cc-connect then does not refuse to start but keeps its locks
// in <user cache dir>/cc-connect/locks ($XDG_CACHE_HOME or ~/.cache), which
// no other user can create, and which two cc-connects of this user still
// share. When neither can be used, the usual one is returned and taking
// a lock there fails, naming it.
func HostLocks() (dir string, passedOver error) {
	usual := filepath.Join(os.TempDir(), "cc-connect-locks-"+strconv.Itoa(os.Getuid()))
	err := workspace.EnsurePrivateDir(usual)
	if err == nil {
		return usual, nil
	}
	cache, cerr := os.UserCacheDir()
	if cerr != nil || !filepath.IsAbs(cache) {
		return usual, err
	}
	fallback := filepath.Join(cache, "cc-connect", "locks")
	if ferr := workspace.EnsurePrivateDir(fallback); ferr != nil {
		return usual, err
	}
	return fallback, fmt.Errorf("token locks are kept in %s instead of %s: %w", fallback, usual, err)
}

// Token locks a platform bot token on this host. The file is named by a
// hash of the token, which never reaches the disk or a message itself.
// lockDir lives under the shared temp dir, where another user could create
// it first to block or redirect the locks: Acquire refuses a lockDir that
// is a link, belongs to another user or is open to others.
func Token(lockDir, platformName, token string) (*Lock, error) {
	sum := sha256.Sum256([]byte(token))
	name := "token-" + hex.EncodeToString(sum[:8]) + ".lock"
	return Acquire(filepath.Join(lockDir, name), "the bot token of platform "+platformName)
}

// Session locks one Claude session id while a claude process runs on it,
// so that a fork, a resume and crash recovery can never run two processes
// on one session.
//
// Only a canonical UUID is accepted, the form of Claude Code's session ids:
// the id names a file, and nothing else (a path, a flag) may reach there.
func Session(stateDir, sessionID string) (*Lock, error) {
	if u, err := uuid.Parse(sessionID); err != nil || u.String() != sessionID {
		return nil, fmt.Errorf("locking claude session: %q is not a session id (a lower-case UUID)", sessionID)
	}
	return Acquire(filepath.Join(stateDir, "locks", "sessions", sessionID+".lock"), "claude session "+sessionID)
}
