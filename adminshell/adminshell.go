// Package adminshell runs an admin's `!sh` command in a session's workspace:
// in its own process group, under a timeout, with bounded output, so that
// the whole process tree can be killed on timeout, on !stop and on
// shutdown. It deliberately runs the text through /bin/sh: that is what an
// admin shell is for. The engine only lets a binding's admins reach it, and
// only where the binding enables it; ordinary chat text never goes here.
package adminshell

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/launch"
)

// Defaults for a binding that does not set its own.
const (
	DefaultTimeout   = 2 * time.Minute
	DefaultMaxOutput = 64 << 10
	// killGrace is how long the group has between SIGTERM and SIGKILL.
	killGrace = 2 * time.Second
)

// Result is what a command did.
type Result struct {
	Command   string
	ExitCode  int    // -1 when killed by a signal or not started
	Signal    string // the signal that ended it, if any
	Duration  time.Duration
	Output    string // stdout and stderr interleaved; the last MaxOutput bytes
	Truncated bool   // earlier output was dropped
	TimedOut  bool
	Cancelled bool  // stopped by !stop or shutdown
	Err       error // could not start
}

// Options for one run.
type Options struct {
	Dir string // the session's workspace
	// Rule is the agent's (agentproc.Config.Rule): the command gets the
	// agent's environment and runs as the agent's OS user, so that !sh
	// reaches no more than Claude's own Bash does.
	Rule      launch.Rule
	Timeout   time.Duration
	MaxOutput int
}

// Run runs command with /bin/sh -c in opts.Dir. Cancelling ctx (!stop,
// shutdown) or the timeout kills the whole process group: SIGTERM, then
// SIGKILL after a short grace.
func Run(ctx context.Context, command string, opts Options) Result {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	res := Result{Command: command, ExitCode: -1}
	out := &tailBuffer{max: opts.MaxOutput}
	start := time.Now()
	// Its own process group (launch), so that the whole tree can be
	// killed; a grandchild that keeps the output pipe open must not hold
	// Wait forever once the group was killed.
	cmd, err := launch.Start(opts.Rule, launch.Spec{
		Path: "/bin/sh", Args: []string{"-c", command}, Dir: opts.Dir,
		Stdout: out, Stderr: out, WaitDelay: killGrace,
	})
	if err != nil {
		res.Err = fmt.Errorf("starting shell command: %w", err)
		return res
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	select {
	case err = <-waited:
	case <-timer.C:
		res.TimedOut = true
		err = killGroup(cmd, waited)
	case <-ctx.Done():
		res.Cancelled = true
		err = killGroup(cmd, waited)
	}
	// The shell may have exited while children it started in the
	// background live on: end the group whatever happened.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	res.Duration = time.Since(start)
	res.Output, res.Truncated = out.String()
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
		}
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		res.Err = err
	}
	return res
}

// killGroup ends the process group: SIGTERM, then SIGKILL if it is still
// there after the grace. It returns Wait's error.
func killGroup(cmd *exec.Cmd, waited <-chan error) error {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-waited:
		return err
	case <-time.After(killGrace):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return <-waited
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.truncated = true
	}
	return len(p), nil
}

func (b *tailBuffer) String() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := string(b.buf)
	if b.truncated {
		// Don't start in the middle of a UTF-8 sequence.
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
	}
	return s, b.truncated
}

// Status is a one-line summary: "exit 0 in 1.2s", "killed by timeout after 2m0s".
func (r Result) Status() string {
	d := r.Duration.Round(10 * time.Millisecond)
	switch {
	case r.Err != nil:
		return "could not run: " + r.Err.Error()
	case r.TimedOut:
		return fmt.Sprintf("killed by timeout after %s", d)
	case r.Cancelled:
		return fmt.Sprintf("stopped after %s", d)
	case r.Signal != "":
		return fmt.Sprintf("killed by %s after %s", r.Signal, d)
	default:
		return fmt.Sprintf("exit %d in %s", r.ExitCode, d)
	}
}

// ChatReply renders the result for the chat: the status and the output as
// a code block, saying when earlier output was cut.
func (r Result) ChatReply() string {
	var b strings.Builder
	fmt.Fprintf(&b, "`$ %s` — %s\n", oneLine(r.Command, 200), r.Status())
	if r.Truncated {
		b.WriteString("(output cut: only the last part is shown)\n")
	}
	out := strings.TrimRight(r.Output, "\n")
	if out == "" {
		b.WriteString("(no output)")
		return b.String()
	}
	b.WriteString("```\n")
	b.WriteString(strings.ReplaceAll(out, "```", "`\u200b``"))
	b.WriteString("\n```")
	return b.String()
}

// NoteMaxOutput bounds the output tail in the note Claude receives.
const NoteMaxOutput = 4 << 10

// Note is the short, bounded note Claude receives once at the start of the
// session's next turn, so that "I ran the tests, look at the failure" works.
func (r Result) Note() string {
	out := r.Output
	cut := r.Truncated
	if len(out) > NoteMaxOutput {
		out = out[len(out)-NoteMaxOutput:]
		for len(out) > 0 && !utf8.RuneStart(out[0]) {
			out = out[1:]
		}
		cut = true
	}
	var b strings.Builder
	b.WriteString("[The user ran a shell command in this workspace since your last turn.]\n")
	fmt.Fprintf(&b, "Command: %s\nResult: %s\n", oneLine(r.Command, 500), r.Status())
	if cut {
		b.WriteString("Output (last part only):\n")
	} else {
		b.WriteString("Output:\n")
	}
	b.WriteString(strings.TrimRight(out, "\n"))
	b.WriteString("\n[End of shell command note.]")
	return b.String()
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "…"
	}
	return s
}
