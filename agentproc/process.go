// Package agentproc owns one Claude Code CLI process per session: it spawns
// `claude -p` in long-lived stream-json mode, writes user messages and
// control requests to its stdin, and turns its stdout into typed events
// (PROTOCOL.md §3-§5). It knows nothing about chat platforms or the engine's
// sessions; it must not touch the CLI's transcripts except to read them
// (transcript*.go).
package agentproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/launch"
)

const (
	defaultCloseGrace      = 5 * time.Second
	defaultStderrTailBytes = 8 << 10
	// eventBuffer lets the reader run ahead of a slow consumer for a while;
	// past it the reader blocks (backpressure) rather than drop events.
	eventBuffer = 256
	// pipeDrainWait bounds how long the pipes are read after the process
	// ended without reaching EOF: a grandchild (a tool's background job)
	// may keep them open.
	pipeDrainWait = 2 * time.Second
	// pipeIdleWait is how long stdout must stay silent, after
	// pipeDrainWait, to count as ended.
	pipeIdleWait = 50 * time.Millisecond
)

// ErrTurnInProgress is returned by StartTurn while another turn runs on the
// same process. Callers queue messages and run one turn at a time.
var ErrTurnInProgress = errors.New("a turn is already running")

// sessionNotFoundText is what the CLI says on --resume of an unknown id.
const sessionNotFoundText = "No conversation found with session ID"

// Process is one running claude CLI. Its methods are safe for concurrent
// use, but only one turn runs at a time (StartTurn), and while it runs the
// turn is the only consumer of Events.
type Process struct {
	cfg  Config
	opts StartOptions
	log  *slog.Logger
	cmd  *exec.Cmd
	pid  int

	stdin  *os.File
	wmu    sync.Mutex // serializes whole lines on stdin
	stderr *tailBuffer
	// outR and errR are read by their goroutines; wait sets deadlines on
	// them once the process is gone, so that a grandchild still holding
	// the pipes (a tool's background job) cannot keep them open forever.
	outR, errR *os.File

	events chan Event
	done   chan struct{} // closed after the process is reaped
	err    error         // set before done is closed
	init   handshake     // the initialize request (initialize.go)

	*controls // the control protocol (control.go)
	ownTurns  // the turns the CLI starts by itself (background.go)

	mu      sync.Mutex // guards session
	session string

	// routeMu guards cur and streamEnded: where the reader hands each
	// event (turn.go).
	routeMu     sync.Mutex
	cur         *Turn // the running turn (or an abandoned one until its result); nil between turns
	streamEnded bool  // the reader is done: a turn started now ends at once

	calls     hostCalls // the host tools' running calls (hosttools.go)
	turnBusy  atomic.Bool
	closeOnce sync.Once
	closing   atomic.Bool
	wg        sync.WaitGroup // stray writers started by the reader
}

// ValidSessionID reports whether id is a canonical UUID, the only form
// cc-connect passes to --resume and --session-id.
func ValidSessionID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == strings.ToLower(id)
}

// Start spawns the agent process for opts in opts.Dir. ctx bounds only the
// spawn: the process lives until Close or its own exit. No shell is ever
// involved: arguments go to the executable as they are, and session ids
// must be UUIDs (ErrInvalidSessionID) so none can pass for a flag.
func Start(ctx context.Context, cfg Config, opts StartOptions, log *slog.Logger) (*Process, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting agent: %w", err)
	}
	for _, id := range []string{opts.ResumeID, opts.SessionID} {
		if id != "" && !ValidSessionID(id) {
			return nil, fmt.Errorf("starting agent: %q: %w", id, ErrInvalidSessionID)
		}
	}
	command := cfg.Command
	if command == "" {
		command = "claude"
	}

	// Plain pipes rather than cmd.StdoutPipe: cmd.Wait must reap the
	// process even while nobody drains the events (backpressure), and the
	// stdin end supports write deadlines.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting agent: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("starting agent: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("starting agent: %w", err)
	}
	// launch gives it the agent's environment and user and a process
	// group of its own, so Close can signal the tools it spawned too.
	cmd, err := launch.Start(cfg.Rule(), launch.Spec{
		Path: command, Args: BuildArgs(cfg, opts), Dir: opts.Dir,
		Stdin: inR, Stdout: outW, Stderr: errW,
		DieWithParent: true,
	})
	if err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("starting agent %q in %s: %w", command, opts.Dir, err)
	}
	closeAll(inR, outW, errW) // the child holds its own copies

	tail := cfg.StderrTailBytes
	if tail <= 0 {
		tail = defaultStderrTailBytes
	}
	p := &Process{
		cfg:      cfg,
		opts:     opts,
		log:      log,
		cmd:      cmd,
		pid:      cmd.Process.Pid,
		stdin:    inW,
		outR:     outR,
		errR:     errR,
		stderr:   &tailBuffer{max: tail},
		events:   make(chan Event, eventBuffer),
		done:     make(chan struct{}),
		init:     newHandshake(),
		ownTurns: newOwnTurns(),
	}
	p.controls = newControls(p.writeJSON, p.done, log, p.SessionID, &p.wg)
	p.controls.stopped = p.ownTurns.stopped
	resume := opts.ResumeID
	if resume == "" {
		resume = "new"
	}
	// The caller's logger names the workspace (opts.Dir) already.
	log.Info("Agent process started", "pid", p.pid, "resume", resume,
		"fork", opts.Fork, "model", firstNonEmpty(opts.Model, cfg.Model))

	readerDone := make(chan struct{})
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(p.stderr, errR)
		_ = errR.Close()
	}()
	go func() {
		defer close(readerDone)
		p.readLoop(&afterExitReader{f: outR})
		_ = outR.Close()
	}()
	go p.wait(readerDone, stderrDone)
	init := opts.Init
	if len(opts.Tools) > 0 && !opts.ReadOnly {
		// The host's tools are declared in the one handshake, before
		// anything else is written to stdin, so that the first prompt
		// already has them.
		init.SDKMCPServers = []string{HostServerName}
	}
	p.sendInitialize(ctx, init)
	return p, nil
}

// wait reaps the process, records how it ended, and closes Events once the
// reader has delivered everything.
func (p *Process) wait(readerDone, stderrDone <-chan struct{}) {
	waitErr := p.cmd.Wait()
	// Whatever the process wrote is in the pipes now. Reads that block
	// past the drain wait mean someone else holds the write end.
	deadline := time.Now().Add(pipeDrainWait)
	_ = p.errR.SetReadDeadline(deadline)
	_ = p.outR.SetReadDeadline(deadline)
	<-stderrDone
	var err error
	if waitErr != nil {
		err = exitError(waitErr, p.stderr.String())
	}
	p.controls.end()
	p.err = err
	_ = p.stdin.Close()
	close(p.done)
	if err != nil {
		p.log.Warn("Agent process exited", "pid", p.pid, "session_id", p.SessionID(), "error", err)
	} else {
		p.log.Info("Agent process exited", "pid", p.pid, "session_id", p.SessionID())
	}
	<-readerDone
	p.endStream()
	p.endInitialize()
	p.wg.Wait()
	close(p.events)
}

// exitError says how the process ended, with the tail of its stderr.
func exitError(waitErr error, stderrTail string) error {
	ee := &ExitError{Code: -1, StderrTail: strings.TrimSpace(stderrTail)}
	var xe *exec.ExitError
	if !errors.As(waitErr, &xe) {
		ee.StderrTail = strings.TrimSpace(waitErr.Error() + "\n" + ee.StderrTail)
		return ee
	}
	ee.Code = xe.ExitCode()
	if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ee.Signal = signalName(ws.Signal())
	}
	return ee
}

// readLoop decodes stdout until EOF and hands the events, in order, to the
// running turn (which buffers them, so the loop never waits on a turn's
// consumer) or, between turns, to Events (when that is full the loop
// blocks, which in turn blocks the CLI's stdout).
func (p *Process) readLoop(r io.Reader) {
	lr := newLineReader(r, MaxLineBytes)
	var dec decoder
	for {
		line, err := lr.next()
		if errors.Is(err, errLineTooLong) {
			p.log.Warn("Agent output line too long", "limit", MaxLineBytes, "session_id", p.SessionID())
			p.route(Malformed{Line: "(line too long)", Err: fmt.Errorf("%w: %w", ErrMalformedOutput, err)})
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.log.Warn("Reading agent output failed", "error", err, "session_id", p.SessionID())
			}
			return
		}
		d := dec.decodeLine(line)
		p.handleControl(&d)
		for _, ev := range d.events {
			switch e := ev.(type) {
			case Init:
				p.mu.Lock()
				p.session = e.SessionID
				p.mu.Unlock()
			case Malformed:
				p.log.Warn("Agent wrote a malformed line", "line", e.Line, "error", e.Err, "session_id", p.SessionID())
			}
			p.route(ev)
		}
	}
}

// Pid is the agent's process id (also its process group id).
func (p *Process) Pid() int { return p.pid }

// SessionID is the session id from the latest system/init (with Fork, the
// new session's id); "" before the first turn started.
func (p *Process) SessionID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.session
}

// Events delivers the typed events that come between turns, in order; a
// turn started next takes those still waiting there first. It is closed
// after the process exited and every event was delivered. While a turn
// runs its events go to the Turn; read Events directly only on a process
// that runs no turns.
func (p *Process) Events() <-chan Event { return p.events }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err reports how the process ended, after Done: nil on exit 0, else an
// *ExitError.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// StderrTail is the last part of the agent's stderr (Config.StderrTailBytes).
func (p *Process) StderrTail() string { return p.stderr.String() }

// Send writes one user message and returns the uuid it carries; the CLI
// records that uuid in the transcript (PROTOCOL.md §14). Send does not wait
// for the turn; see StartTurn. Its events come on Events, never as an own
// turn.
func (p *Process) Send(ctx context.Context, text string) (string, error) {
	id := uuid.NewString()
	p.loose.Add(1) // its turn is the caller's, not one the CLI started by itself
	if err := p.sendUUID(ctx, id, text); err != nil {
		p.loose.Add(-1)
		return "", err
	}
	return id, nil
}

// sendUUID writes one user message carrying id.
func (p *Process) sendUUID(ctx context.Context, id, text string) error {
	msg := userLine{Type: "user", Message: userMessage{Role: "user", Content: text}, UUID: id}
	if err := p.writeJSON(ctx, msg); err != nil {
		return fmt.Errorf("sending message: %w", err)
	}
	return nil
}

type userLine struct {
	Type    string      `json:"type"`
	Message userMessage `json:"message"`
	UUID    string      `json:"uuid"`
}

type userMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// resultError maps a result to the sentinel errors callers branch on.
func resultError(r *Result) error {
	if !r.IsError {
		return nil
	}
	if r.TerminalReason == "prompt_too_long" || strings.HasPrefix(r.Text, "Prompt is too long") {
		return fmt.Errorf("turn failed: %w: %s", ErrPromptTooLong, r.Text)
	}
	if err := limitError(r); err != nil {
		return err
	}
	for _, e := range r.Errors {
		if strings.Contains(e, sessionNotFoundText) {
			return fmt.Errorf("resuming session %s: %w", r.SessionID, ErrSessionNotFound)
		}
	}
	return nil
}

// endedError explains a stream that ended without a result.
func (p *Process) endedError() error {
	<-p.done // events close only after done; this never blocks long
	var ee *ExitError
	if !errors.As(p.err, &ee) {
		ee = &ExitError{Code: 0, StderrTail: strings.TrimSpace(p.stderr.String())}
	}
	if strings.Contains(ee.StderrTail, sessionNotFoundText) {
		return fmt.Errorf("resuming session %s: %w: %w", p.opts.ResumeID, ErrSessionNotFound, ee)
	}
	return ee
}

// writeJSON writes v as one line on stdin. ctx cancels a write the CLI is not
// reading.
func (p *Process) writeJSON(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-p.done:
		return ErrClosed
	default:
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.closing.Load() {
		return ErrClosed
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = p.stdin.SetWriteDeadline(time.Now())
		close(fired)
	})
	n, err := p.stdin.Write(b)
	if !stop() {
		// ctx ended during the write: clear the deadline for the next one.
		<-fired
		_ = p.stdin.SetWriteDeadline(time.Time{})
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if n == 0 {
				return ctx.Err()
			}
			// Half a line is malformed input the CLI exits on: the
			// line has begun, so it is finished, ctx or not.
			_, err = p.stdin.Write(b[n:])
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) {
			return fmt.Errorf("%w: %w", ErrClosed, err)
		}
		return err
	}
	return nil
}

// Close ends the process: stdin EOF (the CLI finishes its turn and exits),
// then after CloseGrace SIGTERM to its process group, then after CloseGrace
// again SIGKILL. It returns once the process is reaped; when ctx ends first
// it goes straight to SIGKILL. Close is idempotent.
func (p *Process) Close(ctx context.Context) error {
	p.closeOnce.Do(func() {
		grace := p.cfg.CloseGrace
		if grace <= 0 {
			grace = defaultCloseGrace
		}
		// Close stdin between whole lines (half a line is a malformed
		// input that makes the CLI exit 1), but never wait for a writer
		// stuck on a CLI that stopped reading: the signals below free it.
		p.closing.Store(true)
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			p.wmu.Lock()
			defer p.wmu.Unlock()
			_ = p.stdin.Close()
		}()
		defer func() { <-closed }() // after the reap, wait closed stdin: the lock is free

		if waitDone(ctx, p.done, grace) {
			return
		}
		p.log.Info("Agent process did not exit, terminating", "pid", p.pid, "session_id", p.SessionID())
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
		if waitDone(ctx, p.done, grace) {
			return
		}
		p.log.Warn("Agent process ignored SIGTERM, killing", "pid", p.pid, "session_id", p.SessionID())
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	})
	<-p.done
	return nil
}

// waitDone waits up to d for done (the exit); false when it did not come in
// time or ctx ended.
func waitDone(ctx context.Context, done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return s.String()
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
