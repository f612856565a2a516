package agentproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRealCLIRecordFixtures regenerates testdata/full/*.jsonl: the complete stdout
// of the real claude CLI (the shared captures cut lines at 700 chars) for
// the scenarios the parser tests read. It talks to the CLI directly, not
// through the driver, so the fixtures do not inherit the driver's bugs.
// Run it on purpose:
//
//	CC_CONNECT_RECORD_FIXTURES=1 CC_CONNECT_CLAUDE_BIN=/path/to/claude \
//	    go test ./agentproc -run TestRealCLIRecordFixtures
//
// CC_CONNECT_RECORD_DIR=<dir> writes elsewhere (to compare two releases).
// A scenario that keeps an API request writes it as <name>.request.json;
// midtool's belongs in internal/fakeapi/testdata/midtool_<version>.request.json.
func TestRealCLIRecordFixtures(t *testing.T) {
	if os.Getenv("CC_CONNECT_RECORD_FIXTURES") != "1" {
		t.Skip("set CC_CONNECT_RECORD_FIXTURES=1 to re-record testdata/full from the real CLI")
	}
	bin := testenv.ClaudeBinary(t)
	scenarios := recordScenarios()
	outDir := filepath.Join("testdata", "full")
	if d := os.Getenv("CC_CONNECT_RECORD_DIR"); d != "" {
		outDir = d
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			api := fakeapi.Start(t)
			r := startRecorder(t, bin, api, sc.args)
			sc.run(r)
			out := r.finish()
			if err := os.WriteFile(filepath.Join(outDir, sc.name+".jsonl"), out, 0o644); err != nil {
				t.Fatal(err)
			}
			if r.request != nil {
				if err := os.WriteFile(filepath.Join(outDir, sc.name+".request.json"), r.request, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// recorder drives one real CLI process by script and keeps its raw stdout.
type recorder struct {
	t     *testing.T
	api   *fakeapi.Server
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan []byte
	raw   bytes.Buffer
	ctx   context.Context
	home  string // HOME (the CLI's config and transcripts)
	dir   string // the CLI's working directory
	// request is the API request saveRequest kept: its model, stream flag
	// and messages (the system prompt, some 30 KB, left out).
	request []byte
}

type recLine struct {
	Type      string         `json:"type"`
	RequestID string         `json:"request_id"`
	Request   map[string]any `json:"request"`
}

func startRecorder(t *testing.T, bin string, api *fakeapi.Server, extra []string) *recorder {
	home := t.TempDir()
	dir := filepath.Join(home, "work", "fixture")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--permission-prompt-tool", "stdio"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+api.URL(), "ANTHROPIC_API_KEY=test",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CONFIG_DIR=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	r := &recorder{t: t, api: api, cmd: cmd, stdin: stdin, lines: make(chan []byte, 1024), ctx: ctx, home: home, dir: dir}
	go func() {
		defer close(r.lines)
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				r.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	return r
}

func (r *recorder) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.stdin.Write(append(b, '\n')); err != nil {
		r.t.Fatal(err)
	}
}

func (r *recorder) user(text string) {
	r.write(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

func (r *recorder) control(id string, req map[string]any) {
	r.write(map[string]any{"type": "control_request", "request_id": id, "request": req})
}

func (r *recorder) answer(req recLine, resp map[string]any) {
	r.write(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": req.RequestID, "response": resp}})
}

func (r *recorder) waitRequests(n int) {
	if _, err := r.api.WaitRequest(r.ctx, n); err != nil {
		r.t.Fatal(err)
	}
}

// waitTranscript waits until the session's transcript holds s: the CLI
// records a message it took in there before any event says so. (With
// CLAUDE_CONFIG_DIR empty the CLI keeps its config in its working
// directory, so every transcript under HOME is looked at.)
func (r *recorder) waitTranscript(s string) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		found := false
		_ = filepath.WalkDir(r.home, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
				if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(s)) {
					found = true
					return fs.SkipAll
				}
			}
			return nil
		})
		if found {
			return
		}
		select {
		case <-r.ctx.Done():
			r.t.Fatalf("timed out waiting for %s in the transcript", s)
		case <-tick.C:
		}
	}
}

// saveRequest keeps the nth API request (1-based) for the fixture.
func (r *recorder) saveRequest(n int) {
	reqs := r.api.Requests()
	if n < 1 || n > len(reqs) {
		r.t.Fatalf("no API request %d of %d", n, len(reqs))
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(reqs[n-1].Body, &body); err != nil {
		r.t.Fatal(err)
	}
	b, err := json.MarshalIndent(map[string]json.RawMessage{
		"model": body["model"], "stream": body["stream"], "messages": body["messages"]}, "", " ")
	if err != nil {
		r.t.Fatal(err)
	}
	r.request = append(b, '\n')
}

// waitLine reads stdout until a line holding s.
func (r *recorder) waitLine(s string) {
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("stdout ended waiting for %s", s)
			}
			r.raw.Write(line)
			if bytes.Contains(line, []byte(s)) {
				return
			}
		case <-r.ctx.Done():
			r.t.Fatalf("timed out waiting for %s", s)
		}
	}
}

// waitType reads stdout until a line of type typ and returns it.
func (r *recorder) waitType(typ string) recLine {
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("stdout ended waiting for %s", typ)
			}
			r.raw.Write(line)
			var l recLine
			if json.Unmarshal(line, &l) == nil && l.Type == typ {
				return l
			}
		case <-r.ctx.Done():
			r.t.Fatalf("timed out waiting for %s", typ)
		}
	}
}

// finish closes stdin, keeps the rest of stdout and waits for the exit.
func (r *recorder) finish() []byte {
	_ = r.stdin.Close()
	for line := range r.lines {
		r.raw.Write(line)
	}
	err := r.cmd.Wait()
	fmt.Fprintf(os.Stderr, "recorded %d bytes, exit %v\n", r.raw.Len(), err)
	return r.raw.Bytes()
}

// recordScenario is one scripted exchange with a claude CLI: the real one
// for TestRealCLIRecordFixtures, the fake for TestFakeMatchesRecordedStreams.
type recordScenario struct {
	name string
	args []string
	run  func(r *recorder)
	// fakeSkip, when set, says why the fake claude cannot replay it.
	fakeSkip string
}

// recordScenarios are the scripts of testdata/full, in file order.
func recordScenarios() []recordScenario {
	return []recordScenario{
		{name: "turn_hi", run: func(r *recorder) {
			r.user("hi")
			r.waitType("result")
		}},
		{name: "multi", run: func(r *recorder) {
			for _, s := range []string{"turn one", "turn two", "turn three"} {
				r.user(s)
				r.waitType("result")
			}
		}},
		{name: "tool_auto", run: func(r *recorder) {
			r.user("[[TOOL:echo hi]] run it")
			r.waitType("result")
		}},
		{name: "perm_allow", run: func(r *recorder) {
			r.user("[[TOOL:touch allowed.txt]] please")
			req := r.waitType("control_request")
			r.answer(req, map[string]any{"behavior": "allow", "updatedInput": req.Request["input"]})
			r.waitType("result")
		}},
		{name: "perm_deny", run: func(r *recorder) {
			r.user("[[TOOL:touch denied.txt]] please")
			req := r.waitType("control_request")
			r.answer(req, map[string]any{"behavior": "deny", "message": "User said no via chat"})
			r.waitType("result")
		}},
		{name: "perm_deny_interrupt", run: func(r *recorder) {
			r.user("[[TOOL:touch stopped.txt]] please")
			req := r.waitType("control_request")
			r.answer(req, map[string]any{"behavior": "deny", "message": "stop", "interrupt": true})
			r.waitType("result")
		}},
		{name: "perm_cancel", run: func(r *recorder) {
			r.user("[[TOOL:touch cancelled.txt]] please")
			r.waitType("control_request")
			r.control("int_1", map[string]any{"subtype": "interrupt"})
			r.waitType("result")
		}},
		{name: "interrupt_slow", fakeSkip: "the script waits for the fake Messages API's request, which the fake claude never makes", run: func(r *recorder) {
			r.user("[[SLOW]] go slowly")
			r.waitRequests(1)
			r.control("int_1", map[string]any{"subtype": "interrupt"})
			r.waitType("result")
			r.user("after interrupt")
			r.waitType("result")
		}},
		{name: "toolong", run: func(r *recorder) {
			r.user("[[TOOLONG]] first")
			r.waitType("result")
			r.user("normal two")
			r.waitType("result")
		}},
		{name: "control", run: func(r *recorder) {
			r.control("req_bogus", map[string]any{"subtype": "bogus_thing"})
			r.waitType("control_response")
			r.control("req_spm", map[string]any{"subtype": "set_permission_mode", "mode": "acceptEdits"})
			r.waitType("control_response")
			r.control("req_model", map[string]any{"subtype": "set_model", "model": "claude-sonnet-4-5"})
			r.waitType("control_response")
			r.user("on the new model")
			r.waitType("result")
		}},
		{name: "midtool", fakeSkip: "the fake claude does not fold a message into a running tool's turn (cc-connect never sends one then)", run: func(r *recorder) {
			// A message sent while the tool runs (the CLI runs this
			// read-only loop without asking) is folded into the
			// running turn: one result for both.
			r.user("[[TOOL:while [ ! -f gate ]; do sleep 0.05; done; echo opened]] please")
			r.waitLine(`"type":"tool_use"`)
			r.user("midway note")
			r.waitTranscript(`"content":"midway note"`)
			if err := os.WriteFile(filepath.Join(r.dir, "gate"), nil, 0o600); err != nil {
				r.t.Fatal(err)
			}
			r.waitType("result")
			r.saveRequest(len(r.api.Requests()))
		}},
		{name: "resume_unknown", args: []string{"--resume", "11111111-2222-3333-4444-555555555555"}, run: func(r *recorder) {
			r.waitType("result")
		}},
	}
}
