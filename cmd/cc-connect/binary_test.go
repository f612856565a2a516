package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/testbin"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// This file runs the cc-connect binary as the tests see it: built once,
// started with its pipes read line by line, killed if a test forgets it.

const testVersion = "v9.9.9-test"

// buildBinary compiles cc-connect, with its version set to testVersion,
// once per test process.
func buildBinary(tb testing.TB) string {
	tb.Helper()
	return testbin.Build(tb, "./cmd/cc-connect", "cc-connect", "-ldflags", "-X main.version="+testVersion)
}

// setup writes a config running the local chat against the fake claude in
// a fresh folder, and returns the config path. extraAgent is appended to
// the [agent] table; extraEnv to its env table.
func setup(t *testing.T, extraAgent string, extraEnv ...string) string {
	t.Helper()
	dir := t.TempDir()
	env := fmt.Sprintf("CLAUDE_CONFIG_DIR = %q", filepath.Join(dir, "claude-config"))
	for _, e := range extraEnv {
		env += ", " + e
	}
	return writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { %s }
%s`, fakeclaude.Build(t), env, extraAgent)+localChatTOML)
}

// process is a running cc-connect binary whose output the test reads line
// by line.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    chan string // stdout lines
	stderr *lockedBuffer
	errLn  chan string // stderr lines
	exited chan struct{}
	err    error // Wait's result, valid after exited is closed
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s + "\n")
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startBinary(t *testing.T, args ...string) *process {
	t.Helper()
	return startBinaryEnv(t, nil, args...)
}

// startBinaryEnv starts cc-connect with env added to the test's own
// environment.
func startBinaryEnv(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	return startBinaryPath(t, buildBinary(t), env, args...)
}

// startBinaryPath starts the cc-connect binary at bin (one built with other
// flags) with env added to the test's own environment.
func startBinaryPath(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "USER=tester"), env...)
	stdin, stdout, stderr := pipes(t, cmd)
	p := &process{cmd: cmd, stdin: stdin, out: make(chan string, 1024), errLn: make(chan string, 1024),
		stderr: &lockedBuffer{}, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	readers.Go(func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.out <- sc.Text()
		}
		close(p.out)
	})
	readers.Go(func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.stderr.add(sc.Text())
			select {
			case p.errLn <- sc.Text():
			default:
			}
		}
	})
	go func() {
		readers.Wait() // Wait must not close the pipes before they are drained
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("stderr of cc-connect:\n%s", p.stderr.String())
		}
	})
	return p
}

// waitOut reads stdout until a line contains want, and returns the lines
// read. Its waits, like waitErr's and exitCode's, are bounded by the run's
// deadline: a real CLI turn under make stress takes many times its idle 2 s.
func (p *process) waitOut(t *testing.T, want string) []string {
	t.Helper()
	var lines []string
	deadline := time.After(testenv.HangLimit(t, 30*time.Second))
	for {
		select {
		case line, ok := <-p.out:
			if !ok {
				t.Fatalf("stdout ended before %q; got %q", want, lines)
			}
			lines = append(lines, line)
			if strings.Contains(line, want) {
				return lines
			}
		case <-deadline:
			t.Fatalf("no %q on stdout; got %q", want, lines)
		}
	}
}

func (p *process) waitErr(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(testenv.HangLimit(t, 30*time.Second))
	for {
		if strings.Contains(p.stderr.String(), want) {
			return
		}
		select {
		case <-p.errLn:
		case <-p.exited:
			if !strings.Contains(p.stderr.String(), want) {
				t.Fatalf("exited without %q on stderr", want)
			}
			return
		case <-deadline:
			t.Fatalf("no %q on stderr", want)
		}
	}
}

func (p *process) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(testenv.HangLimit(t, 60*time.Second)):
		t.Fatal("cc-connect did not exit")
	}
	var exitErr *exec.ExitError
	if errors.As(p.err, &exitErr) {
		return exitErr.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("waiting for cc-connect: %v", p.err)
	}
	return 0
}

// pipes connects cmd's stdin, stdout and stderr, before it starts.
func pipes(tb testing.TB, cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser, io.ReadCloser) {
	tb.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	return stdin, stdout, stderr
}

func (p *process) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, s); err != nil {
		t.Fatal(err)
	}
}
