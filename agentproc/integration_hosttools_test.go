package agentproc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/sendfile"
)

// The host's tools on the real CLI: agentproc declares send_file as an SDK
// MCP server at start, allows it without a prompt, answers the CLI's
// mcp_message requests, and cancels a call the CLI gives up.

// sent records what the send_file tool delivered.
type sent struct {
	mu    sync.Mutex
	files []platform.OutgoingFile
}

func (s *sent) send(_ context.Context, f platform.OutgoingFile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = append(s.files, f)
	return nil
}

func (s *sent) list() []platform.OutgoingFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]platform.OutgoingFile(nil), s.files...)
}

func TestRealCLIHostToolSendFile(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	content := []byte("line one\nline two\x00binary\n")
	if err := os.WriteFile(filepath.Join(r.dir, "report.txt"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(r.dir), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	var s sent
	p := r.start(t, agentproc.StartOptions{Tools: []agentproc.HostTool{
		sendfile.Tool(sendfile.Config{Workspace: r.dir, MaxSize: 1 << 20, Send: s.send}),
	}})

	_, evs, err := turn(t, p, `[[MCP:cc-connect/send_file {"path":"report.txt","comment":"the report"}]]`)
	if err != nil {
		t.Fatalf("turn: %v\nstderr: %s", err, p.StderrTail())
	}
	for _, e := range evs {
		if pr, ok := e.(agentproc.PermissionRequest); ok {
			t.Errorf("asked for %s: the host's tools are allowed without a prompt", pr.ToolName)
		}
	}
	files := s.list()
	if len(files) != 1 || string(files[0].Data) != string(content) || files[0].Name != "report.txt" || files[0].Comment != "the report" {
		t.Fatalf("delivered %+v, want report.txt's exact bytes with the comment", files)
	}
	if tr := lastToolResult(t, r.api); tr.IsError || tr.Content != fmt.Sprintf("sent report.txt (%d bytes) to the chat", len(content)) {
		t.Errorf("the model got %+v", tr)
	}

	// A file outside the workspace: the model gets an error, nothing is sent.
	if _, _, err := turn(t, p, `[[MCP:cc-connect/send_file {"path":"`+outside+`"}]]`); err != nil {
		t.Fatalf("turn: %v", err)
	}
	if tr := lastToolResult(t, r.api); !tr.IsError || !strings.Contains(tr.Content, "not inside the workspace") {
		t.Errorf("the model got %+v, want an error saying the file is outside", tr)
	}
	if n := len(s.list()); n != 1 {
		t.Errorf("%d files delivered, want still 1", n)
	}
}

// TestRealCLIHostToolInterrupt: an interrupt while a call is delivering
// ends the call's context (the CLI's notifications/cancelled) and the turn.
func TestRealCLIHostToolInterrupt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	started := make(chan struct{})
	ended := make(chan error, 1)
	p := r.start(t, agentproc.StartOptions{Tools: []agentproc.HostTool{{
		Name: "send_file",
		Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
			close(started)
			<-ctx.Done()
			ended <- ctx.Err()
			return "", ctx.Err()
		},
	}}})
	done := make(chan error, 1)
	go func() {
		_, _, err := turn(t, p, `[[MCP:cc-connect/send_file {"path":"slow.bin"}]]`)
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the turn ended before the tool was called: %v\nstderr: %s", err, p.StderrTail())
	}
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	if err := p.Interrupt(ctx); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	select {
	case err := <-ended:
		if err != context.Canceled {
			t.Errorf("the call ended with %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("the interrupted call's context never ended")
	}
	<-done
	mustTurn(t, p, "after", "echo: after")
}

// TestRealCLIReadOnlyHasNoHostTools: a read-only process (a /btw question)
// gets no host tool even when asked to start with one.
func TestRealCLIReadOnlyHasNoHostTools(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var s sent
	p := r.start(t, agentproc.StartOptions{ReadOnly: true, Tools: []agentproc.HostTool{
		sendfile.Tool(sendfile.Config{Workspace: r.dir, MaxSize: 1 << 20, Send: s.send}),
	}})
	if _, _, err := turn(t, p, `[[MCP:cc-connect/send_file {"path":"x"}]]`); err != nil {
		t.Fatalf("turn: %v", err)
	}
	if n := len(s.list()); n != 0 {
		t.Errorf("a read-only process delivered %d files", n)
	}
	if tr := lastToolResult(t, r.api); !tr.IsError {
		t.Errorf("the model got %+v, want an error (no such tool)", tr)
	}
}
