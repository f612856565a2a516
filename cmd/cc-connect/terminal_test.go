package main

import (
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

	"github.com/creack/pty"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// These tests run the built cc-connect on a pseudo-terminal, as a person
// at a terminal runs it, and assert what the screen shows: the bytes the
// terminal receives (stdout and stderr both), escape codes and all.

// ptyRun is cc-connect on a pseudo-terminal.
type ptyRun struct {
	cmd    *exec.Cmd
	tty    *os.File // the terminal's side a person types at and reads
	mu     sync.Mutex
	screen strings.Builder // everything shown so far
	more   chan struct{}   // poked when the screen grows (capacity 1)
	exited chan struct{}
	err    error  // Wait's result, once exited is closed
	log    string // the log file cc-connect writes on a terminal
}

// startPTY runs `cc-connect run --config path` on a new pseudo-terminal
// with env added.
func startPTY(t *testing.T, path string, env ...string) *ptyRun {
	t.Helper()
	cmd := exec.Command(buildBinary(t), "run", "--config", path)
	cmd.Env = append(append(os.Environ(), "USER=tester", "TERM=xterm"), env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	r := &ptyRun{cmd: cmd, tty: tty, more: make(chan struct{}, 1), exited: make(chan struct{}),
		log: filepath.Join(filepath.Dir(path), "state", logFileName)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			if n > 0 {
				r.mu.Lock()
				r.screen.Write(buf[:n])
				r.mu.Unlock()
				select {
				case r.more <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return // EIO once the process is gone
			}
		}
	}()
	go func() {
		r.err = cmd.Wait()
		<-read
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = cmd.Process.Kill()
			<-r.exited
		}
		_ = tty.Close()
		if t.Failed() {
			t.Logf("screen:\n%q", r.shown())
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "state", logFileName)); err == nil {
				t.Logf("log:\n%s", b)
			}
		}
	})
	return r
}

// waitTurnProcess waits until the turn's Claude process has started (the
// log says so once exec returned). A Ctrl-C typed earlier can reach the
// child too: between its fork and its setpgid it is still in the
// terminal's foreground process group, and the terminal's SIGINT goes to
// the whole group. A person cannot type that fast; a test can.
func (r *ptyRun) waitTurnProcess(t *testing.T) {
	t.Helper()
	waitFile(t, "the turn's process started", func() bool {
		b, _ := os.ReadFile(r.log)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `msg="Agent process started"`) && strings.Contains(l, "session_key=") {
				return true
			}
		}
		return false
	})
}

func (r *ptyRun) shown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.screen.String()
}

// type_ types s at the terminal (Enter is "\r", Ctrl-C "\x03").
func (r *ptyRun) type_(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(r.tty, s); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until the screen shows want after offset from, and
// returns the screen then.
func (r *ptyRun) waitFor(t *testing.T, from int, want string) string {
	t.Helper()
	deadline := time.After(testenv.HangLimit(t, 60*time.Second))
	for {
		s := r.shown()
		if strings.Contains(s[min(from, len(s)):], want) {
			return s
		}
		select {
		case <-r.more:
		case <-r.exited:
			if s := r.shown(); !strings.Contains(s[min(from, len(s)):], want) {
				t.Fatalf("cc-connect exited (%v) without showing %q", r.err, want)
			}
		case <-deadline:
			t.Fatalf("the screen never showed %q", want)
		}
	}
}

// waitIdle waits until no status line shows: the turn has ended (its
// reply shows before its end is noted).
func (r *ptyRun) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.After(testenv.HangLimit(t, 60*time.Second))
	for !strings.HasSuffix(r.shown(), "\r\x1b[K") {
		select {
		case <-r.more:
		case <-r.exited:
			t.Fatalf("cc-connect exited (%v)", r.err)
		case <-deadline:
			t.Fatal("the status line stayed after the turn")
		}
	}
}

func (r *ptyRun) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(testenv.HangLimit(t, 60*time.Second)):
		t.Fatal("cc-connect did not exit")
	}
	var exitErr *exec.ExitError
	if errors.As(r.err, &exitErr) {
		return exitErr.ExitCode()
	}
	if r.err != nil {
		t.Fatalf("waiting for cc-connect: %v", r.err)
	}
	return 0
}

// TestRealCLITerminalChat is a person's first conversation in the
// terminal, with the real claude against the fake API: no log line on the
// screen (the log goes to a file, named once), a long reply shown as it
// is written under a status line with the elapsed time, the [ctx] line
// dimmed, a permission prompt without Markdown marks, and Ctrl-D ending
// it with code 0.
func TestRealCLITerminalChat(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	path := writeRealConfig(t, claude)
	r := startPTY(t, path, "CC_CONNECT_TEST_API_URL="+api.URL())
	logFile := filepath.Join(filepath.Dir(path), "state", "cc-connect.log")
	r.waitFor(t, 0, "logging to "+logFile)
	r.waitFor(t, 0, "type a message and press Enter")

	// A reply written over twelve seconds in 32 pieces: its start shows
	// while its end is not written yet.
	from := len(r.shown())
	r.type_(t, "[[STREAM:32:12s]] go\r")
	s := r.waitFor(t, from, fakeapi.StreamChunk(4, 32))
	if strings.Contains(s[from:], fakeapi.StreamChunk(32, 32)) {
		t.Errorf("the reply showed only once it was all written:\n%q", s[from:])
	}
	s = r.waitFor(t, from, "[ctx: ")
	if !strings.Contains(s[from:], "s · Claude is working · Ctrl-C stops it") {
		t.Errorf("no status line with the elapsed time while Claude worked:\n%q", s[from:])
	}
	if !strings.Contains(s[from:], "\x1b[2m[ctx: ") {
		t.Errorf("the [ctx] line is not dimmed:\n%q", s[from:])
	}
	if n := strings.Count(stripANSI(s[from:]), strings.TrimSpace(fakeapi.StreamChunk(20, 32))); n != 1 {
		t.Errorf("a piece of the reply shows %d times, want once:\n%q", n, s[from:])
	}
	r.waitIdle(t)

	// A tool that needs approval: the prompt in terminal text.
	from = len(r.shown())
	r.type_(t, "[[TOOL:touch made-here]]\r")
	s = r.waitFor(t, from, "!allow")
	prompt := stripANSI(s[from:])
	if strings.Contains(prompt, "**") || strings.Contains(prompt, "```") {
		t.Errorf("the permission prompt shows Markdown marks:\n%s", prompt)
	}
	if !strings.Contains(prompt, "touch made-here") {
		t.Errorf("the permission prompt lacks the command:\n%s", prompt)
	}
	r.type_(t, "!allow\r")
	r.waitFor(t, from, "tool said:")

	r.type_(t, "\x04") // Ctrl-D: end of input
	if code := r.exitCode(t); code != 0 {
		t.Errorf("exit code %d after Ctrl-D, want 0", code)
	}
	all := stripANSI(r.shown())
	for _, noise := range []string{"level=", "WARN", "INFO", "msg="} {
		if strings.Contains(all, noise) {
			t.Errorf("the screen shows log output (%q):\n%s", noise, all)
		}
	}
	if n := strings.Count(all, "logging to"); n != 1 {
		t.Errorf("the log file is named %d times, want once", n)
	}
	logged, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(logged), "cc-connect started") {
		t.Errorf("log file: %v; holds %d bytes without the start line", err, len(logged))
	}
	if info, err := os.Stat(logFile); err == nil && info.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v, want 0600", info.Mode().Perm())
	}
	if !strings.Contains(all, "Running:") {
		t.Errorf("the status line never named the tool in use:\n%s", all)
	}
}

// terminalConfig writes a config running the terminal chat against the
// fake claude, with a shutdown grace long enough to tell waiting it out
// from not waiting.
func terminalConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	return writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q }
shutdown_grace = "60s"
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"))+localChatTOML)
}

// Ctrl-C stops the running turn and the chat goes on; Ctrl-C with nothing
// running ends cc-connect at once, with code 0 and no warning.
func TestTerminalCtrlCStopsTheTurn(t *testing.T) {
	t.Parallel()
	r := startPTY(t, terminalConfig(t))
	r.waitFor(t, 0, "type a message and press Enter")
	from := len(r.shown())
	r.type_(t, "[[HANG]] wait\r")
	r.waitFor(t, from, "Ctrl-C stops it")
	r.waitTurnProcess(t)
	r.type_(t, "\x03")
	r.waitFor(t, from, "Stopped")
	from = len(r.shown())
	r.type_(t, "still here\r")
	r.waitFor(t, from, "echo: still here")
	r.waitIdle(t)

	began := time.Now()
	r.type_(t, "\x03")
	if code := r.exitCode(t); code != 0 {
		t.Errorf("exit code %d after Ctrl-C with nothing running, want 0", code)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("Ctrl-C with nothing running took %s to exit: the shutdown grace was waited out", took)
	}
	all := stripANSI(r.shown())
	if strings.Contains(all, "WARN") || strings.Contains(all, "level=") || strings.Contains(all, "rror") {
		t.Errorf("the screen shows a warning or an error:\n%s", all)
	}
}

// A second Ctrl-C while the turn is being stopped exits at once (the
// fake claude no longer reads its stdin, so the turn never stops).
func TestTerminalSecondCtrlCExits(t *testing.T) {
	t.Parallel()
	r := startPTY(t, terminalConfig(t))
	r.waitFor(t, 0, "type a message and press Enter")
	r.type_(t, "[[DEAF]] wait\r")
	r.waitFor(t, 0, "Ctrl-C stops it")
	r.waitTurnProcess(t)
	r.type_(t, "\x03")
	r.waitFor(t, 0, "Ctrl-C again exits at once")
	r.type_(t, "\x03")
	if code := r.exitCode(t); code != exitInterrupted {
		t.Errorf("exit code %d after a second Ctrl-C, want %d", code, exitInterrupted)
	}
}

// stripANSI drops escape codes and carriage returns from what a terminal
// received.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\x1b' && i+1 < len(s) && s[i+1] == '[':
			i += 2
			for i < len(s) && (s[i] < '@' || s[i] > '~') {
				i++
			}
		case s[i] == '\r':
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
