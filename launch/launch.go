// Package launch starts every process cc-connect starts: the claude CLI
// and its forks (agentproc), an admin's !sh (adminshell), git for
// worktrees (worktree), doctor's probes, and whatever comes later. Each
// child gets its environment from one Rule (cc-connect's own, less every
// variable a secret comes from or whose value is a secret, less what
// agent.env_drop names, then agent.env), runs as agent.user when that is
// set, and leads a process group of its own, so that it and whatever it
// spawns can be signalled together.
//
// No other package starts a process: TestOnlyLaunchStartsProcesses fails
// on exec.Command, exec.CommandContext, an exec.Cmd literal, os.StartProcess
// or syscall.Exec anywhere else in the module (tests and internal/fake*
// aside). launch knows nothing of Claude Code, git or chat.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cc-connect/cc-connect/agentenv"
)

// Spec is one process to start.
type Spec struct {
	// Path is the executable: a path, or a name looked up in cc-connect's
	// PATH. A relative path found there is made absolute, since exec
	// would resolve it against Dir.
	Path string
	// Args follow the executable's name.
	Args []string
	// Dir is the working directory; "" keeps cc-connect's.
	Dir string
	// Environ is what the child inherits before the Rule is applied;
	// nil is cc-connect's own (os.Environ()). doctor passes the
	// environment it was asked to judge.
	Environ []string
	// Env are KEY=VALUE settings of this child alone (git's hardening),
	// set after the Rule's; a secret's name or value is still never
	// passed.
	Env []string
	// DropPrefixes: inherited variables (and the Rule's Env and
	// Defaults) whose names start with one of these are not passed, so
	// that only Env speaks for them (git's GIT_* settings).
	DropPrefixes []string
	// Stdin, Stdout and Stderr as in exec.Cmd; an *os.File is handed to
	// the child as it is.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// WaitDelay as in exec.Cmd: how long Wait waits for the I/O to end
	// once the process has exited (a grandchild may hold the pipes).
	WaitDelay time.Duration
	// DieWithParent has the kernel SIGKILL the child when the thread that
	// started it ends with cc-connect (Linux): a claude orphaned by a
	// killed cc-connect must not go on with its turn unobserved.
	DieWithParent bool
}

// Start starts s under r and returns the running command, for the caller
// to Wait on. Its environment, user and process group are r's and
// cannot be changed: the process has started when Start returns. It
// refuses (wrapping agentenv.ErrNotRoot) to start as another user when
// this process cannot switch to it.
func Start(r Rule, s Spec) (*exec.Cmd, error) {
	cmd, err := command(context.Background(), r, s)
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	return cmd, nil
}

// Run starts s under r and waits for it. Cancelling ctx kills the child's
// whole process group. A child that exits non-zero returns an
// *exec.ExitError (its Stderr is not kept: pass Spec.Stderr).
func Run(ctx context.Context, r Rule, s Spec) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("starting %s: %w", s.Path, err)
	}
	cmd, err := command(ctx, r, s)
	if err != nil {
		return err
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if s.WaitDelay == 0 {
		// A grandchild holding the pipes must not hold Run past ctx.
		cmd.WaitDelay = 2 * time.Second
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	return cmd.Wait()
}

// command builds the exec.Cmd of s under r; ctx, when it can be
// cancelled, is the command's own (Run).
func command(ctx context.Context, r Rule, s Spec) (*exec.Cmd, error) {
	if r.SwitchesUser() {
		if err := agentenv.CheckSwitch(r.User); err != nil {
			return nil, fmt.Errorf("starting %s as %s: %w", s.Path, r.User, err)
		}
	}
	path, err := resolve(s.Path)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, s.Args...)
	cmd.Dir = s.Dir
	base := s.Environ
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = r.environ(base, s.Env, s.DropPrefixes)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
	cmd.WaitDelay = s.WaitDelay
	// Its own process group, so that a caller can signal the tools it
	// spawned too; agent.user's credential when it runs as another user
	// (root can still signal the group).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: r.Credential()}
	if s.DieWithParent {
		dieWithParent(cmd.SysProcAttr)
	}
	return cmd, nil
}

// resolve finds the executable the way exec.Command would, from
// cc-connect's working directory.
func resolve(name string) (string, error) {
	if name == "" {
		return "", errors.New("starting a process: no executable named")
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path, nil
}
