package agentproc_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testbin"
)

// The capture tier (see capture_helper_test.go) for giving claude a tool of
// the host's: send_file, served either by an SDK MCP server that the host
// declares in initialize and answers over stdin/stdout, or by a stdio MCP
// server process given with --mcp-config. Either way the CLI defers MCP
// tools: the model must fetch the schema with ToolSearch before the call.

const (
	sendFileName   = "mcp__cc-connect__send_file"
	sendFilePrompt = `[[MCP:cc-connect/send_file {"path":"report.txt","comment":"the report"}]]`
)

// checkToolSearch asserts the ToolSearch step that must come before the MCP
// call, and what the CLI answers to it.
func checkToolSearch(t *testing.T, c *capture, api *fakeapi.Server, want string, isError bool) {
	t.Helper()
	uses := toolUses(c.lines())
	if len(uses) != 2 || uses[0]["name"] != "ToolSearch" || str(uses[0], "input", "query") != "select:"+sendFileName ||
		uses[1]["name"] != sendFileName {
		t.Fatalf("tool calls %v, want ToolSearch select:%s, then %s", uses, sendFileName, sendFileName)
	}
	reqs := api.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d API requests, want 3 (prompt, ToolSearch result, tool result)", len(reqs))
	}
	if slicesContains(reqs[0].Tools, sendFileName) {
		t.Errorf("the first request already lists %s: not deferred any more", sendFileName)
	}
	if tr := reqs[1].ToolResults; len(tr) != 1 || len(tr[0].Types) != 1 || tr[0].Types[0] != "tool_reference" ||
		!slicesContains(reqs[1].Tools, sendFileName) {
		t.Errorf("after ToolSearch: tool_result %+v, tools %v; want a tool_reference and the tool listed", tr, reqs[1].Tools)
	}
	if tr := reqs[2].ToolResults; len(tr) != 1 || tr[0].IsError != isError || tr[0].Content != want {
		t.Errorf("the model got %+v, want %q (error %v)", tr, want, isError)
	}
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestRealCLICaptureSdkMCP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		prompted  bool
		callError string // the host's JSON-RPC error for tools/call
		want      string // what the model gets
	}{
		{"prompted", nil, true, "", "sent report.txt to the chat"},
		{"allowed", []string{"--allowedTools", sendFileName}, false, "", "sent report.txt to the chat"},
		{"call_error", []string{"--allowedTools", sendFileName}, false, "the chat refused the upload: file too large",
			"the chat refused the upload: file too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := fakeapi.Start(t)
			c := startCapture(t, api, captureOpts{args: tt.args})
			srv := &sdkMCP{name: "cc-connect", callError: tt.callError}
			c.control("init_1", map[string]any{"subtype": "initialize", "sdkMcpServers": []string{"cc-connect"}})
			// The CLI connects to the server while answering initialize:
			// the MCP handshake begins before the initialize response.
			for {
				l := c.next("the initialize response", func(m map[string]any) bool {
					return m["type"] == "control_request" || m["type"] == "control_response"
				})
				if srv.handle(c, l) {
					continue
				}
				if str(l, "response", "request_id") != "init_1" || str(l, "response", "subtype") != "success" {
					t.Fatalf("initialize answer %v", l)
				}
				break
			}
			if len(srv.methods) == 0 || srv.methods[0] != "initialize" {
				t.Errorf("MCP methods before the initialize response %v, want initialize first", srv.methods)
			}
			var perm map[string]any
			res := c.turn(sendFilePrompt, srv, func(req map[string]any) map[string]any {
				perm = req
				return map[string]any{"behavior": "allow", "updatedInput": dig(req, "request", "input")}
			})
			if tt.prompted {
				if perm == nil || str(perm, "request", "tool_name") != sendFileName ||
					str(perm, "request", "mcp_server", "name") != "cc-connect" || str(perm, "request", "mcp_server", "source") != "sdk" {
					t.Errorf("permission request %v, want one for %s from the sdk server", perm, sendFileName)
				}
			} else if perm != nil {
				t.Errorf("asked %v although --allowedTools names the tool", perm["request"])
			}
			if len(srv.calls) != 1 || srv.calls[0]["path"] != "report.txt" || srv.calls[0]["comment"] != "the report" {
				t.Errorf("tools/call arguments %v", srv.calls)
			}
			checkToolSearch(t, c, api, tt.want, tt.callError != "")
			if got := strings.Join(srv.methods, ","); got != "initialize,notifications/initialized,tools/list,tools/call" {
				t.Errorf("MCP methods %s", got)
			}
			for _, l := range c.lines() {
				if l["type"] == "system" && l["subtype"] == "init" {
					servers, _ := l["mcp_servers"].([]any)
					if len(servers) != 1 || str(servers[0].(map[string]any), "name") != "cc-connect" ||
						str(servers[0].(map[string]any), "status") != "connected" || str(servers[0].(map[string]any), "source") != "sdk" {
						t.Errorf("init mcp_servers %v, want cc-connect connected from sdk", servers)
					}
					break
				}
			}
			if res["is_error"] != false {
				t.Errorf("result %v", res)
			}
			c.finish()
			c.save("mcp_sdk_"+tt.name, "Fake API marker: `"+sendFilePrompt+"`. The host declares an SDK MCP server in\n"+
				"initialize (sdkMcpServers [\"cc-connect\"]) and answers the CLI's mcp_message control requests\n"+
				"(initialize, notifications/initialized, tools/list, tools/call) with mcp_response."+
				map[bool]string{true: "\nThe host answers tools/call with a JSON-RPC error.", false: ""}[tt.callError != ""])
		})
	}
}

// TestRealCLICaptureSdkMCPFork: an SDK server lives in the host, so a forked
// process only needs the same initialize again.
func TestRealCLICaptureSdkMCPFork(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	args := []string{"--allowedTools", sendFileName}
	c := startCapture(t, api, captureOpts{args: args})
	srv := &sdkMCP{name: "cc-connect"}
	c.control("init_1", map[string]any{"subtype": "initialize", "sdkMcpServers": []string{"cc-connect"}})
	c.turn(sendFilePrompt, srv, nil)
	id := str(c.lines()[len(c.lines())-1], "session_id")
	c.finish()

	f := startCapture(t, api, captureOpts{home: c.home, dir: c.dir, args: append([]string{"--resume", id, "--fork-session"}, args...)})
	srv2 := &sdkMCP{name: "cc-connect"}
	f.control("init_1", map[string]any{"subtype": "initialize", "sdkMcpServers": []string{"cc-connect"}})
	res := f.turn(`[[MCP:cc-connect/send_file {"path":"second.txt"}]]`, srv2, nil)
	if len(srv2.calls) != 1 || srv2.calls[0]["path"] != "second.txt" || res["is_error"] != false {
		t.Errorf("fork: calls %v, result %v", srv2.calls, res["is_error"])
	}
	f.finish()
}

// TestRealCLICaptureSdkMCPInterrupt: an interrupt while the host is still working
// on a tools/call makes the CLI send the server an MCP
// notifications/cancelled for that call, then end the turn.
func TestRealCLICaptureSdkMCPInterrupt(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{args: []string{"--allowedTools", sendFileName}})
	srv := &sdkMCP{name: "cc-connect"}
	c.control("init_1", map[string]any{"subtype": "initialize", "sdkMcpServers": []string{"cc-connect"}})
	c.user(sendFilePrompt)
	var call map[string]any
	for call == nil {
		m := c.next("tools/call", func(m map[string]any) bool { return m["type"] == "control_request" })
		if str(m, "request", "message", "method") == "tools/call" {
			call = m // left unanswered, as a slow upload
			break
		}
		srv.handle(c, m)
	}
	c.control("int_1", map[string]any{"subtype": "interrupt"})
	cancel := c.next("the cancel notification", func(m map[string]any) bool {
		return str(m, "request", "subtype") == "mcp_message" && str(m, "request", "message", "method") == "notifications/cancelled"
	})
	if got, want := dig(cancel, "request", "message", "params", "requestId"), dig(call, "request", "message", "id"); got != want {
		t.Errorf("cancelled request %v, want the pending tools/call %v", got, want)
	}
	srv.handle(c, cancel)
	res := c.result()
	if str(res, "terminal_reason") != "aborted_tools" {
		t.Errorf("result %v, want aborted_tools", res["terminal_reason"])
	}
	// The late answer to the cancelled call is harmless; the process
	// stays usable.
	c.answer(call, map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "id": dig(call, "request", "message", "id"),
		"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "too late"}}}}})
	if next := c.turn("after", srv, nil); str(next, "result") != "echo: after" {
		t.Errorf("next turn %q", str(next, "result"))
	}
	c.finish()
	c.save("mcp_sdk_interrupt", "Fake API marker: `"+sendFilePrompt+"` with an SDK MCP server; the host leaves tools/call\n"+
		"unanswered and sends an interrupt. The CLI sends notifications/cancelled for the call over\n"+
		"mcp_message. Left unanswered (checked by hand for 150 s) the CLI waits, with a tool_progress\n"+
		"heartbeat every 30 s.")
}

func TestRealCLICaptureStdioMCP(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t, "./internal/mcpsendfile", "mcpsendfile")
	api := fakeapi.Start(t)
	logPath := filepath.Join(t.TempDir(), "calls.jsonl")
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"cc-connect": map[string]any{"type": "stdio", "command": bin, "env": map[string]string{"MCP_SENDFILE_LOG": logPath}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := startCapture(t, api, captureOpts{args: []string{"--mcp-config", string(cfg), "--allowedTools", sendFileName}})
	res := c.turn(sendFilePrompt, nil, func(req map[string]any) map[string]any {
		t.Errorf("asked %v although --allowedTools names the tool", req["request"])
		return map[string]any{"behavior": "deny", "message": "unexpected"}
	})
	checkToolSearch(t, c, api, "sent report.txt to the chat", false)
	if res["is_error"] != false {
		t.Errorf("result %v", res)
	}
	c.finish()
	// The server started once, for this CLI process, and got the call.
	events := readJournal(t, logPath)
	var starts, calls int
	for _, e := range events {
		switch e["event"] {
		case "start":
			starts++
		case "call":
			calls++
			if e["path"] != "report.txt" || e["comment"] != "the report" {
				t.Errorf("call %v", e)
			}
		}
	}
	if starts != 1 || calls != 1 {
		t.Errorf("server journal %v: want one start and one call", events)
	}
	c.save("mcp_stdio", "Fake API marker: `"+sendFilePrompt+"`, with a stdio MCP server (internal/mcpsendfile)\n"+
		"given by --mcp-config and allowed by --allowedTools "+sendFileName+". Only the CLI's side\n"+
		"is on stdout; the server speaks MCP with the CLI over its own pipes.")
}

func readJournal(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the MCP server left no journal: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// TestRealCLICaptureSdkMCPBesideAdminRules: the host adds its own --allowedTools
// for send_file after the admin's (agent.args) and sends initialize without
// waiting for its answer before the first prompt. Both rules hold (the CLI
// adds up repeated --allowedTools, a later one does not replace an earlier
// one), and the turn runs with the server connected.
func TestRealCLICaptureSdkMCPBesideAdminRules(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{args: []string{"--allowedTools", "Bash(touch:*)", "--allowedTools", sendFileName}})
	srv := &sdkMCP{name: "cc-connect"}
	c.control("init_1", map[string]any{"subtype": "initialize", "sdkMcpServers": []string{"cc-connect"}})
	var perms []string
	res := c.turn(`[[MCP:cc-connect/send_file {"path":"report.txt"}]] [[TOOL:touch made-by-bash]]`, srv, func(req map[string]any) map[string]any {
		perms = append(perms, str(req, "request", "tool_name"))
		return map[string]any{"behavior": "deny", "message": "not expected"}
	})
	if len(perms) != 0 {
		t.Errorf("asked for %v although both tools are allowed", perms)
	}
	if len(srv.calls) != 1 || srv.calls[0]["path"] != "report.txt" {
		t.Errorf("tools/call arguments %v, want one call for report.txt", srv.calls)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "made-by-bash")); err != nil {
		t.Errorf("the allowed Bash command did not run: %v", err)
	}
	var initOK bool
	for _, l := range c.lines() {
		if l["type"] == "control_response" && str(l, "response", "request_id") == "init_1" {
			initOK = str(l, "response", "subtype") == "success"
		}
	}
	if !initOK {
		t.Error("no successful answer to initialize")
	}
	if res["is_error"] != false {
		t.Errorf("result %v", res)
	}
	c.finish()
}
