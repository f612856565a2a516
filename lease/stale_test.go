package lease

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestAcquireWaitsOutADeadHoldersChild: a holder killed while forking
// leaves its lock with the child for a moment; the next Acquire waits for
// it instead of refusing to start, but only when the named holder is dead,
// and not forever.
func TestAcquireWaitsOutADeadHoldersChild(t *testing.T) {
	old := staleHolderWait
	t.Cleanup(func() { staleHolderWait = old })

	tests := []struct {
		name     string
		pid      int
		releases bool          // the other descriptor lets go
		wait     time.Duration // staleHolderWait
		wantHeld bool
	}{
		{"dead holder, child lets go", deadPID(t), true, 10 * time.Second, false},
		{"dead holder, lock never freed", deadPID(t), false, 100 * time.Millisecond, true},
		{"live holder", os.Getpid(), true, 10 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "locks")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "x.lock")
			if err := os.WriteFile(path, []byte(strconv.Itoa(tt.pid)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			other, err := os.Open(path) // another open file: another holder
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if ok, err := tryLock(other); !ok || err != nil {
				t.Fatalf("setting up the holder: %v %v", ok, err)
			}
			if tt.releases {
				// The child's exec, a moment after the holder died.
				fd := int(other.Fd())
				time.AfterFunc(50*time.Millisecond, func() { _ = syscall.Flock(fd, syscall.LOCK_UN) })
			}
			staleHolderWait = tt.wait
			l, err := Acquire(path, "test lock")
			var held *HeldError
			if gotHeld := errors.As(err, &held); gotHeld != tt.wantHeld {
				t.Fatalf("Acquire: %v, want held %v", err, tt.wantHeld)
			}
			if err == nil {
				l.Release()
			} else if held.PID != tt.pid {
				t.Errorf("holder pid %d, want %d", held.PID, tt.pid)
			}
		})
	}
}
