package agentproc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// The capture tier: these tests talk to the real claude CLI directly, one
// raw stream-json line at a time, not through agentproc, so that what they
// assert (and the fixtures they record) is the CLI's protocol, not
// agentproc's reading of it. They are the guard that a CLI upgrade did not
// change a behaviour cc-connect relies on (docs/claude-code.md).
//
// CC_CONNECT_RECORD_FIXTURES=1 makes each test also write what went each
// way to testdata/captures/<name>/ (stdin.jsonl, stdout.jsonl).

// capture is one real CLI process driven line by line.
type capture struct {
	t     testing.TB
	api   *fakeapi.Server
	dir   string // the workspace, symlinks resolved
	home  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	exit  chan struct{} // closed when the process has exited
	ctx   context.Context

	mu     sync.Mutex // guards everything below
	out    []map[string]any
	rawOut [][]byte
	rawIn  [][]byte
	// grew is closed and replaced when out grows or stdout ends.
	grew    chan struct{}
	eof     bool
	waitErr error
	cursor  int // next line next() looks at
}

// captureOpts adds to the flags agentproc always passes (args.go).
type captureOpts struct {
	args []string
	env  map[string]string
	// dir, when set, is the workspace (else a fresh one).
	dir string
	// home, when set, is reused (a resumed or forked session).
	home string
}

// capTimeout bounds a whole capture: a fake reply takes milliseconds and a
// CLI start about half a second.
const capTimeout = 120 * time.Second

func startCapture(t testing.TB, api *fakeapi.Server, o captureOpts) *capture {
	t.Helper()
	bin := testenv.ClaudeBinary(t)
	home := o.home
	if home == "" {
		home = t.TempDir()
	}
	dir := o.dir
	if dir == "" {
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(base, "proj")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--permission-prompt-tool", "stdio", "--system-prompt-snapshot", "off"}, o.args...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + api.URL(), "ANTHROPIC_API_KEY=test", "DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	for k, v := range o.env {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), capTimeout)
	c := &capture{t: t, api: api, dir: dir, home: home, cmd: cmd, stdin: stdin, ctx: ctx,
		exit: make(chan struct{}), grew: make(chan struct{})}
	go c.read(stdout)
	t.Cleanup(func() {
		cancel()
		_ = stdin.Close()
		select {
		case <-c.exit:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-c.exit
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("CLI stderr:\n%s", stderr.String())
		}
	})
	return c
}

func (c *capture) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 1<<20)
	verbose := os.Getenv("CC_CONNECT_CAPTURE_VERBOSE") == "1"
	for {
		line, err := br.ReadBytes('\n')
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			var m map[string]any
			if json.Unmarshal(trimmed, &m) != nil {
				m = map[string]any{"type": "_malformed", "line": string(trimmed)}
			}
			if verbose {
				fmt.Fprintf(os.Stderr, "< %s\n", clip(trimmed))
			}
			c.mu.Lock()
			c.out = append(c.out, m)
			c.rawOut = append(c.rawOut, append([]byte(nil), trimmed...))
			close(c.grew)
			c.grew = make(chan struct{})
			c.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	werr := c.cmd.Wait()
	c.mu.Lock()
	c.eof, c.waitErr = true, werr
	close(c.grew)
	c.grew = make(chan struct{})
	c.mu.Unlock()
	close(c.exit)
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// send writes one stdin line, as cc-connect would.
func (c *capture) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if os.Getenv("CC_CONNECT_CAPTURE_VERBOSE") == "1" {
		fmt.Fprintf(os.Stderr, "> %s\n", clip(b))
	}
	c.mu.Lock()
	c.rawIn = append(c.rawIn, b)
	c.mu.Unlock()
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to the CLI: %v", err)
	}
}

// user sends a user message; content is a string or a list of blocks.
func (c *capture) user(content any) {
	c.t.Helper()
	c.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content}})
}

// control sends a control request of ours.
func (c *capture) control(id string, req map[string]any) {
	c.t.Helper()
	c.send(map[string]any{"type": "control_request", "request_id": id, "request": req})
}

// answer answers a control request of the CLI's with success.
func (c *capture) answer(req map[string]any, resp map[string]any) {
	c.t.Helper()
	c.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": req["request_id"], "response": resp}})
}

// next returns the first line from the cursor on that match says yes to,
// and moves the cursor past it. It fails the test when stdout ends or the
// capture times out first.
func (c *capture) next(what string, match func(m map[string]any) bool) map[string]any {
	c.t.Helper()
	for {
		c.mu.Lock()
		for c.cursor < len(c.out) {
			m := c.out[c.cursor]
			c.cursor++
			if match(m) {
				c.mu.Unlock()
				return m
			}
		}
		ch, eof, werr := c.grew, c.eof, c.waitErr
		c.mu.Unlock()
		if eof {
			c.t.Fatalf("stdout ended (exit %v) waiting for %s", werr, what)
		}
		select {
		case <-ch:
		case <-c.ctx.Done():
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// nextType waits for the next line of type typ (and subtype, when given).
func (c *capture) nextType(typ string, subtype ...string) map[string]any {
	c.t.Helper()
	return c.next(typ+" "+strings.Join(subtype, ""), func(m map[string]any) bool {
		if m["type"] != typ {
			return false
		}
		return len(subtype) == 0 || str(m, "subtype") == subtype[0] || str(m, "request", "subtype") == subtype[0]
	})
}

// permission waits for the next can_use_tool request.
func (c *capture) permission() map[string]any {
	c.t.Helper()
	return c.nextType("control_request", "can_use_tool")
}

// result waits for the turn's result.
func (c *capture) result() map[string]any {
	c.t.Helper()
	return c.nextType("result")
}

// lines returns every stdout line so far.
func (c *capture) lines() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.out...)
}

// finish closes stdin and waits for the process to exit.
func (c *capture) finish() {
	c.t.Helper()
	_ = c.stdin.Close()
	select {
	case <-c.exit:
	case <-c.ctx.Done():
		c.t.Fatal("the CLI did not exit after stdin closed")
	}
}

// save writes the exchange to testdata/captures/<name>/ when recording.
func (c *capture) save(name, readme string) {
	c.t.Helper()
	if os.Getenv("CC_CONNECT_RECORD_FIXTURES") != "1" {
		return
	}
	dir := filepath.Join("testdata", "captures", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	in, out := bytes.Join(c.rawIn, []byte("\n")), bytes.Join(c.rawOut, []byte("\n"))
	c.mu.Unlock()
	// Paths of this run's temporary folders vary; a replay test needs
	// stable text.
	clean := func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte(c.dir), []byte("/work/proj"))
		return bytes.ReplaceAll(b, []byte(c.home), []byte("/home/user"))
	}
	version, _ := exec.Command(c.cmd.Path, "--version").Output()
	files := map[string][]byte{
		"stdin.jsonl":  append(clean(in), '\n'),
		"stdout.jsonl": append(clean(out), '\n'),
		"README.md": fmt.Appendf(nil, "# %s\n\nCLI: %s\nFlags: `%s`\n\n%s\n", name, strings.TrimSpace(string(version)),
			strings.Join(c.cmd.Args[1:], " "), strings.TrimSpace(readme)),
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
}

// str digs a string out of nested maps ("" when absent).
func str(m map[string]any, keys ...string) string {
	v := dig(m, keys...)
	s, _ := v.(string)
	return s
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// toolUses returns the tool_use blocks of the assistant lines so far.
func toolUses(lines []map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["type"] != "assistant" {
			continue
		}
		content, _ := dig(l, "message", "content").([]any)
		for _, b := range content {
			if bm, ok := b.(map[string]any); ok && bm["type"] == "tool_use" {
				out = append(out, bm)
			}
		}
	}
	return out
}

// toolResults returns the tool_result blocks of the user lines so far.
func toolResults(lines []map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["type"] != "user" {
			continue
		}
		content, _ := dig(l, "message", "content").([]any)
		for _, b := range content {
			if bm, ok := b.(map[string]any); ok && bm["type"] == "tool_result" {
				bm["_line"] = l
				out = append(out, bm)
			}
		}
	}
	return out
}

// lastToolResult is the tool_result the model got in the last API
// request.
func lastToolResult(t testing.TB, api *fakeapi.Server) fakeapi.ToolResult {
	t.Helper()
	reqs := api.Requests()
	if len(reqs) == 0 || len(reqs[len(reqs)-1].ToolResults) == 0 {
		t.Fatalf("the last of %d API requests carries no tool_result", len(reqs))
	}
	trs := reqs[len(reqs)-1].ToolResults
	return trs[len(trs)-1]
}

// sendFileTool is the tool both MCP variants offer: what cc-connect would
// give the agent to post a file into the chat.
var sendFileTool = map[string]any{
	"name":        "send_file",
	"description": "Send a file from the workspace to the chat.",
	"inputSchema": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":    map[string]any{"type": "string", "description": "Path of the file to send"},
			"comment": map[string]any{"type": "string", "description": "Optional text posted with the file"},
		},
		"required": []string{"path"},
	},
}

// sdkMCP answers the CLI's mcp_message control requests for one SDK MCP
// server, as cc-connect would in-process. calls records tools/call
// arguments.
type sdkMCP struct {
	name    string
	methods []string
	calls   []map[string]any
	// callError, when set, makes tools/call answer a JSON-RPC error.
	callError string
}

// handle answers one mcp_message control request; it reports false for
// any other line.
func (s *sdkMCP) handle(c *capture, m map[string]any) bool {
	if m["type"] != "control_request" || str(m, "request", "subtype") != "mcp_message" ||
		str(m, "request", "server_name") != s.name {
		return false
	}
	msg, _ := dig(m, "request", "message").(map[string]any)
	method, _ := msg["method"].(string)
	s.methods = append(s.methods, method)
	id, hasID := msg["id"]
	var reply map[string]any
	switch {
	case !hasID: // a notification: the CLI wants an empty result
		reply = map[string]any{"jsonrpc": "2.0", "id": 0, "result": map[string]any{}}
	case method == "initialize":
		pv, _ := dig(msg, "params", "protocolVersion").(string)
		reply = map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
			"protocolVersion": pv,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": s.name, "version": "1.0.0"},
		}}
	case method == "tools/list":
		reply = map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"tools": []any{sendFileTool}}}
	case method == "tools/call":
		args, _ := dig(msg, "params", "arguments").(map[string]any)
		s.calls = append(s.calls, args)
		if s.callError != "" {
			reply = map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32000, "message": s.callError}}
			break
		}
		reply = map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("sent %v to the chat", args["path"])}},
		}}
	default:
		reply = map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32601, "message": "method not found: " + method}}
	}
	c.answer(m, map[string]any{"mcp_response": reply})
	return true
}

// turn sends prompt and runs the turn to its result, answering each
// can_use_tool with onPerm (nil: allow with the input unchanged) and each
// mcp_message with mcp (when set).
func (c *capture) turn(prompt any, mcp *sdkMCP, onPerm func(req map[string]any) map[string]any) map[string]any {
	c.t.Helper()
	c.user(prompt)
	return c.runTurn(mcp, onPerm)
}

func (c *capture) runTurn(mcp *sdkMCP, onPerm func(req map[string]any) map[string]any) map[string]any {
	c.t.Helper()
	for {
		m := c.next("the turn's result", func(m map[string]any) bool {
			return m["type"] == "result" || m["type"] == "control_request"
		})
		switch {
		case m["type"] == "result":
			return m
		case mcp != nil && mcp.handle(c, m):
		case str(m, "request", "subtype") == "can_use_tool":
			resp := map[string]any{"behavior": "allow", "updatedInput": dig(m, "request", "input")}
			if onPerm != nil {
				resp = onPerm(m)
			}
			c.answer(m, resp)
		}
	}
}

// allowWith answers a can_use_tool by allowing it with extra fields
// merged into the original input.
func allowWith(extra map[string]any) func(map[string]any) map[string]any {
	return func(req map[string]any) map[string]any {
		in := map[string]any{}
		if orig, ok := dig(req, "request", "input").(map[string]any); ok {
			for k, v := range orig {
				in[k] = v
			}
		}
		for k, v := range extra {
			in[k] = v
		}
		return map[string]any{"behavior": "allow", "updatedInput": in}
	}
}

// permsFor returns the can_use_tool requests so far for tool.
func permsFor(lines []map[string]any, tool string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["type"] == "control_request" && str(l, "request", "subtype") == "can_use_tool" && str(l, "request", "tool_name") == tool {
			out = append(out, l)
		}
	}
	return out
}

// cliVersion is the version the CLI reported in its first init line.
func cliVersion(lines []map[string]any) string {
	for _, l := range lines {
		if l["type"] == "system" && l["subtype"] == "init" {
			return str(l, "claude_code_version")
		}
	}
	return ""
}
