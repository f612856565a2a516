package procs

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/sendfile"
)

// toolTarget is where the host tools of a spare process send their calls.
// The CLI takes its tools once, in the initialize handshake at its start,
// and a spare starts before any conversation has it; so its tools are
// declared as every process's are (name, description, schema) and call
// through here, to the tools of the conversation that took it.
type ToolTarget struct {
	mu    sync.Mutex
	calls map[string]func(context.Context, json.RawMessage) (string, error)
}

// errNoConversation answers a call that came before any conversation took
// the process; the CLI makes none before its first message, which only a
// conversation sends.
var errNoConversation = errors.New("this process serves no conversation yet")

// Set points the tools at a conversation's (turnRunner.hostTools).
func (t *ToolTarget) Set(tools []agentproc.HostTool) {
	calls := make(map[string]func(context.Context, json.RawMessage) (string, error), len(tools))
	for _, tool := range tools {
		calls[tool.Name] = tool.Call
	}
	t.mu.Lock()
	t.calls = calls
	t.mu.Unlock()
}

// HostTools are the tools a spare declares: those turnRunner.hostTools
// gives every process, calling through t.
func (t *ToolTarget) HostTools() []agentproc.HostTool {
	tool := sendfile.Tool(sendfile.Config{}) // its name, description and schema
	name := tool.Name
	tool.Call = func(ctx context.Context, args json.RawMessage) (string, error) {
		t.mu.Lock()
		call := t.calls[name]
		t.mu.Unlock()
		if call == nil {
			return "", errNoConversation
		}
		return call(ctx, args)
	}
	return []agentproc.HostTool{tool}
}
