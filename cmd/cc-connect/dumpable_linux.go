package main

import (
	"fmt"
	"syscall"
)

// hideProcess makes this process not dumpable: its /proc/<pid> files then
// belong to root, and a process of the same user can no longer read its
// environment or memory, nor ptrace it. The children are unaffected (exec
// makes a process dumpable again), so the agent keeps working, but Claude's
// Bash running as cc-connect's own user cannot reach the tokens this way.
func hideProcess() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("making the process not dumpable: %w", errno)
	}
	return nil
}
