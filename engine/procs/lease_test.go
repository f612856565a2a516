package procs

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestKillOrphanAgent: the claude process a killed cc-connect left behind
// is killed (with its process group) by the next holder of the session
// lease; a pid file naming a process that is gone, or a pid now used by
// another process, kills nothing.
func TestKillOrphanAgent(t *testing.T) {
	if _, ok := ProcStart(os.Getpid()); !ok {
		t.Skip("no /proc: orphans are not detected here")
	}
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	orphan := start()
	st, _ := ProcStart(orphan.Process.Pid)
	reaped := make(chan error, 1)
	go func() { reaped <- orphan.Wait() }()
	if err := killOrphanAgent(write("orphan.agent", strconv.Itoa(orphan.Process.Pid)+" "+st+"\n"), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reaped:
		if ws, ok := err.(*exec.ExitError); !ok || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("orphan ended with %v, want SIGKILL", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the orphan was not killed")
	}

	bystander := start()
	for name, content := range map[string]string{
		"reused.agent": strconv.Itoa(bystander.Process.Pid) + " 1\n", // same pid, other start time
		"gone.agent":   "999999999 1\n",
		"empty.agent":  "",
	} {
		if err := killOrphanAgent(write(name, content), slog.New(slog.DiscardHandler)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !PidAlive(bystander.Process.Pid) {
		t.Error("a process that only reuses the pid was killed")
	}
}
