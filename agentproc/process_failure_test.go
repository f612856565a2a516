package agentproc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCrashMidTurn(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	var c collect
	res, err := runTurn(testCtx(t), p, "[[CRASH]]", c.on)
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Turn = %v, %v; want *ExitError", res, err)
	}
	if ee.Code != 2 || !strings.Contains(ee.StderrTail, "simulated crash") {
		t.Errorf("ExitError = %+v", ee)
	}
	if got := c.texts(); len(got) != 1 {
		t.Errorf("events before the crash: %q", got)
	}
	if _, err := p.Send(testCtx(t), "again"); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after exit = %v, want ErrClosed", err)
	}
}

func TestCloseEscalates(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		// grace must leave a loaded machine time to act on SIGTERM
		// where the process honours it, or Close rightly goes on to
		// SIGKILL.
		grace      time.Duration
		wantCode   int
		wantSignal string
	}{
		{name: "SIGTERM", grace: time.Second, wantCode: 143},
		{name: "SIGKILL", env: map[string]string{"FAKECLAUDE_IGNORE_SIGTERM": "1"}, grace: 50 * time.Millisecond,
			wantCode: -1, wantSignal: "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFakeEnv(t)
			e.grace = tt.grace
			for k, v := range tt.env {
				e.env[k] = v
			}
			p := e.start(StartOptions{})
			waitHanging(t, p)
			if err := p.Close(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			var ee *ExitError
			if !errors.As(p.Err(), &ee) {
				t.Fatalf("Err = %v, want *ExitError", p.Err())
			}
			if ee.Code != tt.wantCode || ee.Signal != tt.wantSignal {
				t.Errorf("ExitError = %+v, want code %d signal %q", ee, tt.wantCode, tt.wantSignal)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	e := newFakeEnv(t)
	cfg := Config{Command: filepath.Join(t.TempDir(), "missing-claude")}
	if _, err := Start(context.Background(), cfg, StartOptions{Dir: e.dir}, nil); err == nil {
		t.Error("Start with a missing command succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Config{Command: e.bin}, StartOptions{Dir: e.dir}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a cancelled ctx = %v", err)
	}
}

func TestFlagErrorIsExitError(t *testing.T) {
	e := newFakeEnv(t)
	// --session-id with --resume needs --fork-session: the CLI refuses
	// before reading stdin.
	p := e.start(StartOptions{ResumeID: "11111111-2222-3333-4444-555555555555", SessionID: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"})
	_, err := runTurn(testCtx(t), p, "hi", nil)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 1 || !strings.Contains(ee.StderrTail, "also needs --fork-session") {
		t.Errorf("Turn = %v, want *ExitError with the CLI's text", err)
	}
}

func TestStartRelativeCommand(t *testing.T) {
	e := newFakeEnv(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, e.bin)
	if err != nil {
		t.Skipf("no relative path to the fake: %v", err)
	}
	if !strings.Contains(rel, string(filepath.Separator)) {
		rel = "." + string(filepath.Separator) + rel
	}
	// The workspace differs from the test's cwd: the path must still
	// resolve against the cwd it was given in.
	p, err := Start(context.Background(), Config{Command: rel, Env: e.env}, StartOptions{Dir: e.dir}, nil)
	if err != nil {
		t.Fatalf("Start(%q): %v", rel, err)
	}
	defer p.Close(context.Background())
	if res, _ := mustTurn(t, p, "rel"); res.Text != "echo: rel" {
		t.Errorf("result = %q", res.Text)
	}
}

// TestTranscriptAfterCrash checks the fake leaves transcripts the recovery
// classification reads as the real CLI's would.
func TestTranscriptAfterCrash(t *testing.T) {
	tests := []struct {
		prompt string
		want   Interruption
	}{
		{"plain", InterruptionNone},
		{"[[CRASH]]", InterruptionPrompt},
		{"[[TOOL:touch h.txt]] [[CRASH]]", InterruptionTurn},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			e := newFakeEnv(t)
			p := e.start(StartOptions{})
			ctx := testCtx(t)
			id, err := p.Send(ctx, tt.prompt)
			if err != nil {
				t.Fatal(err)
			}
			init := waitEvent[Init](t, p)
			if err := p.Close(ctx); err != nil {
				t.Fatal(err)
			}
			path := e.transcript(init.SessionID)
			got, err := ClassifyEnd(path)
			if err != nil || got != tt.want {
				t.Errorf("ClassifyEnd = %v, %v; want %v", got, err, tt.want)
			}
			if ok, err := ContainsUUID(path, id); !ok || err != nil {
				t.Errorf("ContainsUUID(%s) = %v, %v", id, ok, err)
			}
			lite, err := ReadLite(path)
			if err != nil || lite.SessionID != init.SessionID || lite.FirstPrompt != tt.prompt || lite.Cwd != e.dir {
				t.Errorf("ReadLite = %+v, %v", lite, err)
			}
		})
	}
}

// TestCrashWithOrphanHoldingPipes: a tool's background job that outlives
// the CLI keeps stdout open; the turn must still end with the exit status.
func TestCrashWithOrphanHoldingPipes(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	t.Cleanup(func() { _ = syscall.Kill(-p.Pid(), syscall.SIGKILL) }) // the orphan
	res, err := runTurn(testCtx(t), p, "[[ORPHAN]]", nil)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 2 {
		t.Fatalf("Turn = %+v, %v; want *ExitError code 2", res, err)
	}
	if _, ok := <-p.Events(); ok {
		t.Error("events still open")
	}
}

// TestSendHonoursCtxOnAFullPipe: a CLI that stopped reading stdin must not
// hold Send past its ctx when nothing of the line went out yet.
func TestSendHonoursCtxOnAFullPipe(t *testing.T) {
	e := newFakeEnv(t)
	e.grace = 50 * time.Millisecond
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	if _, err := p.Send(ctx, "[[DEAF]]"); err != nil {
		t.Fatal(err)
	}
	waitEvent[Init](t, p) // the fake has read the line and stopped reading
	// Fill the pipe exactly: the line (with its JSON envelope) is as long
	// as the pipe holds.
	capacity := pipeCapacity(t, p.stdin)
	envelope := len(`{"type":"user","message":{"role":"user","content":""},"uuid":"00000000-0000-0000-0000-000000000000"}` + "\n")
	if _, err := p.Send(ctx, strings.Repeat("f", capacity-envelope)); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := p.Send(short, "blocked"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send to a full pipe = %v, want context.DeadlineExceeded", err)
	}
	// The deadline was cleared: Close's own path still works.
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func pipeCapacity(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	const fGetPipeSz = 1032 // F_GETPIPE_SZ
	var size uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		size, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, fGetPipeSz, 0)
	}); err != nil || errno != 0 {
		t.Skipf("F_GETPIPE_SZ: %v %v", err, errno)
	}
	return int(size)
}

func TestTurnAfterClose(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	mustTurn(t, p, "one")
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := runTurn(ctx, p, "two", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Turn after Close = %v, want ErrClosed", err)
	}
	for _, f := range []func() error{
		func() error { return p.Interrupt(ctx) },
		func() error { return p.SetModel(ctx, "m") },
		func() error { _, err := p.Send(ctx, "x"); return err },
	} {
		if err := f(); !errors.Is(err, ErrClosed) {
			t.Errorf("call after Close = %v, want ErrClosed", err)
		}
	}
}

func TestStderrTailBounded(t *testing.T) {
	e := newFakeEnv(t)
	cfg := Config{Command: e.bin, Env: e.env, StderrTailBytes: 16}
	p, err := Start(context.Background(), cfg, StartOptions{Dir: e.dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	_, err = runTurn(testCtx(t), p, "[[CRASH]]", nil)
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Turn = %v", err)
	}
	// The fake's stderr is longer than 16 bytes; only its end is kept.
	if !strings.HasSuffix("fakeclaude: simulated crash ([[CRASH]])\n", p.StderrTail()) || len(p.StderrTail()) != 16 {
		t.Errorf("StderrTail = %q", p.StderrTail())
	}
}
