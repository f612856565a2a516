package agentproc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadyBeforeAnyMessage: Start sends initialize, and its answer makes
// the process ready while nothing else has happened: no event, no session,
// no transcript. The first message may come any time after.
func TestReadyBeforeAnyMessage(t *testing.T) {
	e := newFakeEnv(t)
	const id = "0b5f1e8e-7a6c-4d2b-9e3f-1c2d3e4f5a6b"
	p := e.start(StartOptions{SessionID: id})
	info, err := p.WaitReady(testCtx(t))
	if err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	select {
	case <-p.Ready():
	default:
		t.Fatal("Ready is not closed after WaitReady returned")
	}
	if info.PID != p.Pid() || info.Version == "" || info.SessionState != "idle" || info.PermissionMode != "default" {
		t.Errorf("InitInfo %+v, want the process's pid, a version, idle, default", info)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(info.Raw, &raw); err != nil || raw["commands"] == nil {
		t.Errorf("Raw %s (%v), want the whole answer", info.Raw, err)
	}
	select {
	case ev := <-p.Events():
		t.Fatalf("event %T before any message", ev)
	default:
	}
	if p.SessionID() != "" {
		t.Errorf("SessionID %q before the first turn", p.SessionID())
	}
	if _, err := os.Stat(e.transcript(id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("transcript before the first message: %v", err)
	}
	res, _ := mustTurn(t, p, "first")
	if res.SessionID != id || res.Text != "echo: first" {
		t.Errorf("result %+v, want session %s", res, id)
	}
	if _, err := os.Stat(e.transcript(id)); err != nil {
		t.Errorf("no transcript after the first message: %v", err)
	}
}

// TestReadyThenClosedUnused: a process closed after the handshake alone
// exits cleanly and leaves no transcript.
func TestReadyThenClosedUnused(t *testing.T) {
	e := newFakeEnv(t)
	const id = "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
	p := e.start(StartOptions{SessionID: id})
	if _, err := p.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); err != nil {
		t.Errorf("Err after closing an unused process: %v", err)
	}
	if _, err := os.Stat(e.transcript(id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("transcript of an unused process: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(e.configDir, "projects")); len(entries) != 0 {
		t.Errorf("project folders of an unused process: %v", entries)
	}
}

// TestTurnWithoutWaitingForReady: a message written at once follows the
// handshake on stdin; the turn needs no wait of its own.
func TestTurnWithoutWaitingForReady(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	res, _ := mustTurn(t, p, "at once")
	if res.Text != "echo: at once" {
		t.Errorf("result %q", res.Text)
	}
	if _, err := p.WaitReady(testCtx(t)); err != nil {
		t.Errorf("WaitReady after a turn: %v", err)
	}
}

func TestReadyFailures(t *testing.T) {
	tests := []struct {
		name  string
		opts  StartOptions
		env   string // FAKECLAUDE_INITIALIZE
		check func(t *testing.T, err error)
	}{
		{
			// --session-id with --resume needs --fork-session: the CLI
			// exits 1 before it reads stdin.
			name: "exits first",
			opts: StartOptions{ResumeID: "11111111-2222-3333-4444-555555555555", SessionID: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"},
			check: func(t *testing.T, err error) {
				var ee *ExitError
				if !errors.Is(err, ErrNotReady) || !errors.As(err, &ee) || ee.Code != 1 {
					t.Errorf("WaitReady = %v, want ErrNotReady with the exit status", err)
				}
			},
		},
		{
			name: "refused",
			env:  "refuse",
			check: func(t *testing.T, err error) {
				var ce *ControlError
				if !errors.As(err, &ce) || ce.Subtype != "initialize" || ce.Message != "Already initialized" {
					t.Errorf("WaitReady = %v, want the CLI's refusal", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFakeEnv(t)
			if tt.env != "" {
				e.env["FAKECLAUDE_INITIALIZE"] = tt.env
			}
			p := e.start(tt.opts)
			_, err := p.WaitReady(testCtx(t))
			tt.check(t, err)
		})
	}
}

// TestWaitReadyCtx: a CLI that never answers leaves the caller's ctx to
// decide, and the process untouched; its exit then settles the handshake.
func TestWaitReadyCtx(t *testing.T) {
	e := newFakeEnv(t)
	e.env["FAKECLAUDE_INITIALIZE"] = "ignore"
	p := e.start(StartOptions{})
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	if _, err := p.WaitReady(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady = %v, want the ctx's deadline", err)
	}
	select {
	case <-p.Done():
		t.Fatal("the process ended when only the wait gave up")
	default:
	}
	if err := p.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitReady(testCtx(t)); !errors.Is(err, ErrNotReady) || !errors.Is(err, ErrClosed) {
		t.Errorf("WaitReady after a clean exit = %v, want ErrNotReady and ErrClosed", err)
	}
}

// TestInitializeIsTheFirstLine: the handshake goes out before anything a
// caller writes, as a bare initialize when the host declares nothing.
func TestInitializeIsTheFirstLine(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "stdin")
	script := filepath.Join(dir, "claude")
	// A CLI that only records its stdin.
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec cat > "+out+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := Start(context.Background(), Config{Command: script}, StartOptions{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(testCtx(t), "hello"); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdin %q, want the handshake and the message", b)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	req, _ := first["request"].(map[string]any)
	if first["type"] != "control_request" || first["request_id"] != initRequestID || len(req) != 1 || req["subtype"] != "initialize" {
		t.Errorf("first line %s, want a bare initialize request", lines[0])
	}
	if !strings.Contains(lines[1], `"hello"`) {
		t.Errorf("second line %s, want the message", lines[1])
	}
	if _, err := p.WaitReady(testCtx(t)); !errors.Is(err, ErrNotReady) {
		t.Errorf("WaitReady of a CLI that never answered = %v", err)
	}
}

// TestInitializeAnswerRecorded reads the real CLI's recorded answer
// (testdata/captures/spare_*) as the reader does: the fields InitInfo
// names are there.
func TestInitializeAnswerRecorded(t *testing.T) {
	for _, name := range []string{"spare_closed_unused", "spare_first_message_later"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "captures", name, "stdout.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			var dec decoder
			d := dec.decodeLine([]byte(first))
			if d.replyID != "init_1" || !d.reply.ok || len(d.events) != 0 {
				t.Fatalf("first line decoded as reply %q ok %v with %d events, want the initialize answer alone",
					d.replyID, d.reply.ok, len(d.events))
			}
			var info InitInfo
			if err := json.Unmarshal(d.reply.response, &info); err != nil {
				t.Fatal(err)
			}
			if info.PID <= 0 || !strings.HasPrefix(info.Version, "2.1.") || info.SessionState != "idle" || info.PermissionMode != "default" {
				t.Errorf("InitInfo %+v from the recorded answer", info)
			}
		})
	}
}
