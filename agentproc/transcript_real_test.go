package agentproc_test

// The transcript readers against transcripts the real claude CLI wrote
// (same rig as integration_test.go: the pinned CLI and the fake API). The
// unit tests use hand-written lines; these check that the real files read
// the same way, including after the CLI was killed mid-turn.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/google/uuid"
)

// trEventually polls cond until it holds or the turn timeout passes. The
// CLI writes its transcript from a queue it drains on a timer and signals
// nothing when it does, so there is no event to wait on.
func trEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(turnTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// trResult consumes events until the turn's result.
func trResult(t *testing.T, p *agentproc.Process, on func(agentproc.Event)) *agentproc.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				t.Fatalf("events ended before the result: %v\nstderr: %s", p.Err(), p.StderrTail())
			}
			if r, ok := ev.(*agentproc.Result); ok {
				return r
			}
			if on != nil {
				on(ev)
			}
		case <-ctx.Done():
			t.Fatal("timed out waiting for the result")
		}
	}
}

// trKill ends the CLI as a crash would: SIGKILL to its process group.
func trKill(t *testing.T, p *agentproc.Process) {
	t.Helper()
	if err := syscall.Kill(-p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
}

func trTranscript(t *testing.T, r *rig, sid string) string {
	t.Helper()
	path, _, err := agentproc.FindTranscript(r.configDir, sid, r.dir)
	if err != nil {
		t.Fatalf("transcript of %s: %v", sid, err)
	}
	return path
}

func TestRealCLITranscriptReads(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	mustTurn(t, p, "first prompt", "echo: first prompt")
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	sent, err := p.Send(ctx, "second prompt")
	if err != nil {
		t.Fatal(err)
	}
	if res := trResult(t, p, nil); res.IsError {
		t.Fatalf("second turn failed: %+v", res)
	}
	sid := p.SessionID()
	closeProc(t, p)

	// Resumed from another directory, the CLI keeps the first file.
	other := filepath.Join(filepath.Dir(r.dir), "other_dir")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	again := r.start(t, agentproc.StartOptions{Dir: other, ResumeID: sid})
	mustTurn(t, again, "third from elsewhere", "echo: third from elsewhere")
	closeProc(t, again)

	want := agentproc.TranscriptPath(r.configDir, r.dir, sid)
	for _, hint := range [][]string{nil, {other}, {r.dir}} {
		path, size, err := agentproc.FindTranscript(r.configDir, sid, hint...)
		if err != nil || path != want || size == 0 {
			t.Errorf("FindTranscript(hint %v) = %q, %d, %v; want %q", hint, path, size, err, want)
		}
	}

	l, err := agentproc.ReadLite(want)
	if err != nil {
		t.Fatal(err)
	}
	if l.SessionID != sid || l.FirstPrompt != "first prompt" || l.LastPrompt != "third from elsewhere" || l.Cwd != r.dir {
		t.Errorf("ReadLite = %+v\nwant session %s, first %q, last %q, cwd %s", l, sid, "first prompt", "third from elsewhere", r.dir)
	}

	if got, err := agentproc.ClassifyEnd(want); err != nil || got != agentproc.InterruptionNone {
		t.Errorf("ClassifyEnd after finished turns = %s, %v; want none", got, err)
	}
	if ok, err := agentproc.ContainsUUID(want, sent); err != nil || !ok {
		t.Errorf("ContainsUUID(sent message) = %v, %v; want true", ok, err)
	}
	if ok, err := agentproc.ContainsUUID(want, uuid.NewString()); err != nil || ok {
		t.Errorf("ContainsUUID(unknown uuid) = %v, %v; want false", ok, err)
	}

	ls, err := agentproc.ListSessions(r.configDir, r.dir)
	if err != nil || len(ls) != 1 || ls[0].SessionID != sid {
		t.Errorf("ListSessions(first dir) = %+v, %v; want the one session", ls, err)
	}
	if ls, err := agentproc.ListSessions(r.configDir, other); err != nil || len(ls) != 0 {
		t.Errorf("ListSessions(resume dir) = %+v, %v; want none", ls, err)
	}
}

func TestRealCLITranscriptEnds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// run drives the CLI and leaves it ended (closed or killed); it
		// returns the uuid of the message that started the last turn.
		run  func(t *testing.T, r *rig, p *agentproc.Process) string
		want agentproc.Interruption
	}{
		{"interrupted on purpose", func(t *testing.T, r *rig, p *agentproc.Process) string {
			ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
			defer cancel()
			n := len(r.api.Requests()) + 1
			id, err := p.Send(ctx, "[[SLOW]] take your time")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.api.WaitRequest(ctx, n); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.Interrupt(ctx); err != nil {
					t.Errorf("Interrupt: %v", err)
				}
			}()
			res := trResult(t, p, nil)
			wg.Wait()
			if res.TerminalReason != "aborted_streaming" {
				t.Errorf("terminal_reason %q, want aborted_streaming", res.TerminalReason)
			}
			closeProc(t, p)
			return id
		}, agentproc.InterruptionNone},

		{"tool denied and turn stopped", func(t *testing.T, r *rig, p *agentproc.Process) string {
			ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
			defer cancel()
			id, err := p.Send(ctx, "[[TOOL:touch x]]")
			if err != nil {
				t.Fatal(err)
			}
			res := trResult(t, p, func(e agentproc.Event) {
				if pr, ok := e.(agentproc.PermissionRequest); ok {
					if err := p.RespondPermission(ctx, pr.RequestID, agentproc.PermissionDecision{Behavior: agentproc.DenyAndStop, Message: "no"}); err != nil {
						t.Errorf("RespondPermission: %v", err)
					}
				}
			})
			if res.TerminalReason != "aborted_tools" {
				t.Errorf("terminal_reason %q, want aborted_tools", res.TerminalReason)
			}
			closeProc(t, p)
			return id
		}, agentproc.InterruptionNone},

		{"prompt too long", func(t *testing.T, r *rig, p *agentproc.Process) string {
			ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
			defer cancel()
			id, err := p.Send(ctx, "[[TOOLONG]] a lot")
			if err != nil {
				t.Fatal(err)
			}
			if res := trResult(t, p, nil); !res.IsError {
				t.Errorf("result %+v, want an error", res)
			}
			closeProc(t, p)
			return id
		}, agentproc.InterruptionNone},

		{"killed while the reply streams", func(t *testing.T, r *rig, p *agentproc.Process) string {
			ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
			defer cancel()
			n := len(r.api.Requests()) + 1
			id, err := p.Send(ctx, "[[SLOW]] never answered")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.api.WaitRequest(ctx, n); err != nil {
				t.Fatal(err)
			}
			trEventually(t, "the prompt is in the transcript", func() bool {
				sid := p.SessionID()
				if sid == "" {
					return false
				}
				path, _, err := agentproc.FindTranscript(r.configDir, sid, r.dir)
				if err != nil {
					return false
				}
				ok, _ := agentproc.ContainsUUID(path, id)
				return ok
			})
			trKill(t, p)
			return id
		}, agentproc.InterruptionPrompt},

		{"killed at a permission prompt", func(t *testing.T, r *rig, p *agentproc.Process) string {
			ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
			defer cancel()
			id, err := p.Send(ctx, "[[TOOL:touch y]]")
			if err != nil {
				t.Fatal(err)
			}
			var toolUse string
			for toolUse == "" {
				select {
				case ev, ok := <-p.Events():
					if !ok {
						t.Fatalf("events ended: %v", p.Err())
					}
					if pr, ok := ev.(agentproc.PermissionRequest); ok {
						toolUse = pr.ToolUseID
					}
				case <-ctx.Done():
					t.Fatal("no permission request")
				}
			}
			trEventually(t, "the tool call is in the transcript", func() bool {
				b, err := os.ReadFile(agentproc.TranscriptPath(r.configDir, r.dir, p.SessionID()))
				return err == nil && bytes.Contains(b, []byte(`"id":"`+toolUse+`"`))
			})
			trKill(t, p)
			return id
		}, agentproc.InterruptionTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			r.cfg.CloseGrace = 5 * time.Second
			p := r.start(t, agentproc.StartOptions{})
			mustTurn(t, p, "warm up", "echo: warm up")
			sid := p.SessionID()
			id := tt.run(t, r, p)

			path := trTranscript(t, r, sid)
			got, err := agentproc.ClassifyEnd(path)
			if err != nil || got != tt.want {
				b, _ := os.ReadFile(path)
				t.Errorf("ClassifyEnd = %s, %v; want %s\ntranscript tail:\n%s", got, err, tt.want, tailLines(b, 6))
			}
			if ok, err := agentproc.ContainsUUID(path, id); err != nil || !ok {
				t.Errorf("ContainsUUID(last message) = %v, %v; want true", ok, err)
			}
			if l, err := agentproc.ReadLite(path); err != nil || l.FirstPrompt != "warm up" || l.Cwd != r.dir {
				t.Errorf("ReadLite = %+v, %v", l, err)
			}
		})
	}
}

// tailLines is the last n lines of b, each cut to 300 bytes, for failure
// messages.
func tailLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = append(l[:300:300], "…"...)
		}
	}
	return string(bytes.Join(lines, []byte("\n")))
}
