package procs

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cc-connect/cc-connect/workspace"
)

// The session lease (lease.Session) is held by this cc-connect while a
// claude process of ours runs on that Claude session, so that two
// conversations (through !resume) or a resume racing recovery can never run
// two processes on one session: the CLI does not lock, and two processes
// fork its history silently (PROTOCOL.md §5).
//
// The lock dies with cc-connect, but the claude child does not: it runs in
// its own process group and, when cc-connect is killed, reads EOF on stdin
// and goes on with its turn, writing to the transcript. So next to the lock
// we record the child's pid (and, on Linux, its start time, against pid
// reuse). Whoever takes the lease next kills such an orphan before reading
// the transcript or starting another process on the session.

// agentMarkPath is where the pid of the live claude process of a session
// is recorded.
func MarkPath(stateDir, sessionID string) string {
	return filepath.Join(stateDir, "locks", "sessions", sessionID+".agent")
}

// orphanWait bounds the wait for a killed orphan to disappear.
const orphanWait = 10 * time.Second

// killOrphanAgent kills the process group recorded at path when that
// process still lives (the same pid with the same start time), and waits
// until it is gone. The caller holds the session lease, so a live process
// named there belongs to a cc-connect that died. A symbolic link at path is
// not a pid file markAgent wrote (it renames a regular file into place):
// it is removed, not followed.
func killOrphanAgent(path string, log *slog.Logger) error {
	data, err := workspace.ReadFileNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if errors.Is(err, workspace.ErrSymlink) {
		log.Warn("Removing a symbolic link found in place of an agent pid file; its target is left alone", "pid_file", path)
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return fmt.Errorf("removing a link in place of the agent pid file: %w", rerr)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading agent pid file: %w", err)
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return nil
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 1 {
		return nil
	}
	start, known := ProcStart(pid)
	if !known || len(fields) < 2 || fields[1] != start || !PidAlive(pid) {
		// Gone, or the pid now names another process: nothing of ours.
		return nil
	}
	log.Warn("Killing an orphaned agent process left by a previous cc-connect", "pid", pid, "pid_file", path)
	_ = syscall.Kill(-pid, syscall.SIGKILL) // its process group: the CLI and its tools
	_ = syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(orphanWait)
	for PidAlive(pid) {
		// Not our child: there is nothing to wait on but its /proc entry.
		if time.Now().After(deadline) {
			return fmt.Errorf("orphaned agent process %d did not exit after SIGKILL", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// procStart is the start time of pid (field 22 of /proc/<pid>/stat, in
// clock ticks since boot), which tells a process from a later one that got
// the same pid. Without /proc it reports false and orphans are not killed.
func ProcStart(pid int) (string, bool) {
	stat, ok := procStat(pid)
	if !ok || len(stat) < 20 {
		return "", false
	}
	return stat[19], true
}

// PidAlive reports whether pid is a live process (not a zombie).
func PidAlive(pid int) bool {
	stat, ok := procStat(pid)
	if !ok || len(stat) < 1 {
		return false
	}
	return stat[0] != "Z" && stat[0] != "X"
}

// procStat returns the fields of /proc/<pid>/stat after the command name,
// starting with the state (field 3).
func procStat(pid int) ([]string, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(data[i+1:])), true
}
