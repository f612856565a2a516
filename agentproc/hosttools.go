package agentproc

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
)

// Tools of the host's: cc-connect serves them to claude as an SDK MCP
// server, declared in the initialize control request and answered over the
// same stream-json pipe (docs/claude-code.md §4: no second process to own,
// and each call arrives with the process whose conversation it serves).
// The CLI names a tool mcp__<HostServerName>__<Name>, defers it behind
// ToolSearch, and sends its calls as mcp_message control requests carrying
// JSON-RPC, waiting for each answer (with tool_progress heartbeats) and
// sending notifications/cancelled for a call an interrupt gave up.

// HostServerName is the name of the host's MCP server.
const HostServerName = "cc-connect"

// mcpProtocolVersion is answered when the CLI names none.
const mcpProtocolVersion = "2025-11-25"

// HostTool is one tool of the host's.
type HostTool struct {
	// Name is the tool's MCP name (the model sees mcp__cc-connect__Name).
	Name        string
	Description string
	// InputSchema is the JSON Schema of the arguments (an object).
	InputSchema json.RawMessage
	// Call runs the tool with the model's arguments. Its text reaches the
	// model as the tool's result; an error reaches it as an error result
	// with the error's text. ctx ends when the CLI cancels the call (an
	// interrupt) or the process ends. Calls run on goroutines of their
	// own, one per call.
	Call func(ctx context.Context, args json.RawMessage) (string, error)
}

// HostToolName is the name the CLI and the model give a host tool, as
// --allowedTools and permission requests write it.
func HostToolName(name string) string { return "mcp__" + HostServerName + "__" + name }

// mcpRequest is an mcp_message control request's JSON-RPC message.
type mcpRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// mcpMessage is a decoded mcp_message control request.
type mcpMessage struct {
	requestID string
	server    string
	msg       mcpRequest
}

// hostCalls tracks the running tools/call requests by JSON-RPC id, so that
// notifications/cancelled can end one.
type hostCalls struct {
	mu      sync.Mutex
	cancels map[string]context.CancelFunc
}

// handleMCP answers one mcp_message request on a goroutine of its own: a
// tool's call may take as long as an upload does, and the reader must
// never wait for it.
func (p *Process) handleMCP(m *mcpMessage) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		reply := p.mcpReply(m)
		resp := map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "success", "request_id": m.requestID, "response": map[string]any{"mcp_response": reply},
		}}
		if err := p.writeJSON(context.Background(), resp); err != nil && !errors.Is(err, ErrClosed) {
			p.log.Warn("Answering the agent's MCP request failed", "method", m.msg.Method, "error", err, "session_id", p.SessionID())
		}
	}()
}

// mcpReply is the JSON-RPC answer to one message.
func (p *Process) mcpReply(m *mcpMessage) map[string]any {
	id := m.msg.ID
	if len(id) == 0 || string(id) == "null" {
		// A notification: the CLI still waits for an answer, and takes
		// an empty result (the capture's finding).
		if m.msg.Method == "notifications/cancelled" {
			var params struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if json.Unmarshal(m.msg.Params, &params) == nil {
				p.calls.cancel(string(params.RequestID))
			}
		}
		return map[string]any{"jsonrpc": "2.0", "id": 0, "result": map[string]any{}}
	}
	reply := func(result any) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
	}
	fail := func(code int, msg string) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}}
	}
	if m.server != HostServerName {
		return fail(-32601, "no MCP server "+m.server+" here")
	}
	switch m.msg.Method {
	case "initialize":
		var params struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.msg.Params, &params)
		if params.ProtocolVersion == "" {
			params.ProtocolVersion = mcpProtocolVersion
		}
		return reply(map[string]any{
			"protocolVersion": params.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": HostServerName, "version": "1.0.0"},
		})
	case "tools/list":
		tools := make([]map[string]any, 0, len(p.opts.Tools))
		for _, t := range p.opts.Tools {
			schema := t.InputSchema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "inputSchema": schema})
		}
		return reply(map[string]any{"tools": tools})
	case "tools/call":
		var params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(m.msg.Params, &params); err != nil {
			return fail(-32602, "invalid tools/call parameters: "+err.Error())
		}
		var tool *HostTool
		for i := range p.opts.Tools {
			if p.opts.Tools[i].Name == params.Name {
				tool = &p.opts.Tools[i]
			}
		}
		if tool == nil {
			return fail(-32602, "no tool "+params.Name)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-p.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		key := string(id)
		p.calls.add(key, cancel)
		defer p.calls.remove(key)
		text, err := tool.Call(ctx, params.Arguments)
		if err != nil {
			return fail(-32000, err.Error())
		}
		return reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	}
	return fail(-32601, "method not found: "+m.msg.Method)
}

func (c *hostCalls) add(id string, cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancels == nil {
		c.cancels = make(map[string]context.CancelFunc)
	}
	c.cancels[id] = cancel
}

func (c *hostCalls) remove(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cancels, id)
}

func (c *hostCalls) cancel(id string) {
	c.mu.Lock()
	cancel := c.cancels[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
