package adminshell

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentenv"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/launch"
)

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// state is the field after the ")" that closes the command name
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// waitDead polls /proc: a killed process has no event to wait on.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d survived", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("child pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		command  string
		env      map[string]string
		wantCode int
		wantOut  string
	}{
		{"exit status and output", "echo hello; echo oops >&2; exit 3", nil, 3, "hello\noops\n"},
		{"runs in the workspace", "pwd", nil, 0, dir + "\n"},
		{"gets the agent environment", `echo "$CC_TEST_VAR"`, map[string]string{"CC_TEST_VAR": "from-agent-env"}, 0, "from-agent-env\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Run(context.Background(), tt.command, Options{Dir: dir, Rule: launch.Rule{Env: tt.env}})
			if r.Err != nil || r.ExitCode != tt.wantCode || r.Output != tt.wantOut {
				t.Fatalf("got code %d out %q err %v; want %d %q", r.ExitCode, r.Output, r.Err, tt.wantCode, tt.wantOut)
			}
			if !strings.Contains(r.Status(), "exit "+strconv.Itoa(tt.wantCode)) {
				t.Errorf("status %q", r.Status())
			}
		})
	}
}

func TestRunTimeoutKillsTheTree(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	r := Run(context.Background(), "sleep 300 & echo $! > child.pid; wait", Options{Dir: dir, Timeout: 300 * time.Millisecond})
	if !r.TimedOut || !strings.Contains(r.Status(), "timeout") {
		t.Fatalf("want a timeout, got %+v", r)
	}
	waitDead(t, readPID(t, pidFile))
}

func TestRunCancelKillsTheTree(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() {
		done <- Run(ctx, "sleep 300 & echo $! > child.pid.tmp && mv child.pid.tmp child.pid; wait", Options{Dir: dir})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("command did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	r := <-done
	if !r.Cancelled || r.TimedOut {
		t.Fatalf("want cancelled, got %+v", r)
	}
	waitDead(t, readPID(t, pidFile))
}

func TestRunKillsBackgroundChildrenAfterShellExits(t *testing.T) {
	dir := t.TempDir()
	r := Run(context.Background(), "sleep 300 & echo $! > child.pid", Options{Dir: dir})
	if r.ExitCode != 0 {
		t.Fatalf("got %+v", r)
	}
	waitDead(t, readPID(t, filepath.Join(dir, "child.pid")))
}

func TestRunBoundsOutput(t *testing.T) {
	r := Run(context.Background(), "i=0; while [ $i -lt 3000 ]; do echo line-$i; i=$((i+1)); done", Options{Dir: t.TempDir(), MaxOutput: 1000})
	if !r.Truncated || len(r.Output) > 1000 {
		t.Fatalf("output %d bytes, truncated %v", len(r.Output), r.Truncated)
	}
	if !strings.HasSuffix(r.Output, "line-2999\n") {
		t.Errorf("the tail was not kept: %q", r.Output[len(r.Output)-40:])
	}
	if !strings.Contains(r.ChatReply(), "output cut") {
		t.Errorf("chat reply does not say the output was cut")
	}
}

func TestNoteIsBounded(t *testing.T) {
	r := Result{Command: "go test ./...", ExitCode: 1, Output: strings.Repeat("x", 10*NoteMaxOutput) + "FAIL: TestFoo\n", Duration: time.Second}
	n := r.Note()
	if len(n) > NoteMaxOutput+600 {
		t.Errorf("note is %d bytes", len(n))
	}
	for _, want := range []string{"go test ./...", "exit 1", "FAIL: TestFoo", "last part only"} {
		if !strings.Contains(n, want) {
			t.Errorf("note lacks %q", want)
		}
	}
}

func TestChatReplyKeepsCodeBlockIntact(t *testing.T) {
	r := Result{Command: "cat README.md", Output: "```go\nx\n```\n"}
	reply := r.ChatReply()
	if strings.Count(reply, "```") != 2 {
		t.Errorf("fences in the output must not close the reply's block: %q", reply)
	}
}

// TestRunAsAnotherUser: with a credential the command runs as that user
// (here nobody, 65534) without cc-connect's groups, and the timeout still
// kills its whole process group: root may signal another user's processes.
func TestRunAsAnotherUser(t *testing.T) {
	testenv.NeedRoot(t, "running a command as another user")
	dir := t.TempDir()
	// nobody must reach the folder: t.TempDir's parent is private.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	r := Run(context.Background(), "id -u; id -G; sleep 300 & echo $! > child.pid; wait", Options{
		Dir: dir, Timeout: time.Second,
		Rule: launch.Rule{User: &agentenv.User{Name: "nobody", UID: 65534, GID: 65534, Groups: []uint32{65534}, Home: "/nonexistent"}},
	})
	if !r.TimedOut || r.Err != nil {
		t.Fatalf("want a timeout, got %+v", r)
	}
	if lines := strings.Fields(r.Output); len(lines) < 2 || lines[0] != "65534" || lines[1] != "65534" {
		t.Errorf("output %q, want uid 65534 and only group 65534", r.Output)
	}
	waitDead(t, readPID(t, filepath.Join(dir, "child.pid")))
}
