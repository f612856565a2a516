package agentproc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAgentDiesWithParent: when the process that started the agent is
// SIGKILLed, the agent does not live on as an orphan. The test re-runs its
// own binary as that parent.
func TestAgentDiesWithParent(t *testing.T) {
	if bin := os.Getenv("AGENTPROC_PARENT_OF"); bin != "" {
		// The parent: start the agent, say its pid, wait to be killed.
		p, err := Start(context.Background(), Config{Command: bin, Env: map[string]string{"HOME": t.TempDir()}},
			StartOptions{Dir: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A turn that stdin EOF does not end: without the parent-death
		// signal the agent would outlive its parent.
		if _, err := p.Send(context.Background(), "busy [[HANG]]"); err != nil {
			t.Fatal(err)
		}
		waitEvent[Init](t, p)
		fmt.Printf("agent %d\n", p.Pid())
		<-p.Done()
		t.Fatal("the agent ended before its parent was killed")
	}
	e := newFakeEnv(t)
	parent := exec.Command(os.Args[0], "-test.run=^TestAgentDiesWithParent$", "-test.count=1")
	parent.Env = append(os.Environ(), "AGENTPROC_PARENT_OF="+e.bin)
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Process.Kill()
		t.Fatalf("reading the agent pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "agent ")))
	if err != nil {
		t.Fatalf("parent said %q", line)
	}
	if !alive(pid) {
		t.Fatal("the agent is not running before the parent is killed")
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	// The agent is not our child: its /proc entry is all there is to
	// watch.
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscallKill(pid)
			t.Fatalf("agent %d still runs after its parent was killed", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(data[i+1:])), "Z")
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
