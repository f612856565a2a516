package fakeclaude

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var streamArgs = []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}

type run struct {
	stdout []string
	stderr string
	code   int
}

// world is a home and a workspace for fake runs.
type world struct {
	bin  string
	home string
	dir  string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, "ws")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &world{bin: Build(t), home: home, dir: dir}
}

// exec runs the fake with stdin and returns its output once it exits.
func (w *world) exec(t *testing.T, args []string, env []string, stdin ...string) run {
	t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Dir = w.dir
	// No CLAUDE_CONFIG_DIR (an empty one would mean the working
	// directory, as for the CLI): the config is under HOME.
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") })
	cmd.Env = append(base, append([]string{"HOME=" + w.home}, env...)...)
	cmd.Stdin = strings.NewReader(strings.Join(stdin, "\n"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := run{stderr: errb.String()}
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		r.code = xe.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if l != "" {
			r.stdout = append(r.stdout, l)
		}
	}
	return r
}

func user(text string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
	return string(b)
}

func decode(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("stdout line is not JSON: %q", line)
	}
	return m
}

func results(t *testing.T, r run) []map[string]any {
	var out []map[string]any
	for _, l := range r.stdout {
		if m := decode(t, l); m["type"] == "result" {
			out = append(out, m)
		}
	}
	return out
}

func TestStartupErrors(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"stream-json output needs verbose", []string{"-p", "--output-format", "stream-json"},
			"Error: When using --print, --output-format=stream-json requires --verbose"},
		{"stream-json input needs stream-json output", []string{"-p", "--input-format", "stream-json", "--verbose"},
			"Error: --input-format=stream-json requires output-format=stream-json."},
		{"bad session id", append(streamArgs, "--session-id", "nope"),
			"Error: Invalid session ID. Must be a valid UUID."},
		{"session id with resume needs fork", append(streamArgs, "--session-id", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "--resume", "11111111-2222-3333-4444-555555555555"),
			"Error: --session-id with --continue or --resume also needs --fork-session."},
		{"unknown option", append(streamArgs, "--frobnicate"), "error: unknown option '--frobnicate'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := w.exec(t, tt.args, nil, user("hi"))
			if r.code != 1 || strings.TrimSpace(r.stderr) != tt.stderr || len(r.stdout) != 0 {
				t.Errorf("got code %d stderr %q stdout %q", r.code, r.stderr, r.stdout)
			}
		})
	}
}

func TestInputErrors(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name   string
		line   string
		code   int
		stderr string
	}{
		{"not json", "this is not json", 1, "Error parsing streaming input line (type=unknown, 16 chars): SyntaxError"},
		{"no role", `{"type":"user","message":{"content":"x"}}`, 1, "Error: Expected message role 'user', got 'undefined'"},
		{"no message", `{"type":"user","content":"x"}`, 1, "Error: Expected message role 'user', got 'undefined'"},
		{"assistant role", `{"type":"user","message":{"role":"assistant","content":"x"}}`, 1, "Error: Expected message role 'user', got 'assistant'"},
		{"unknown type ignored", `{"type":"foo"}`, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := w.exec(t, streamArgs, nil, tt.line)
			if r.code != tt.code || strings.TrimSpace(r.stderr) != tt.stderr || len(r.stdout) != 0 {
				t.Errorf("got code %d stderr %q stdout %q", r.code, r.stderr, r.stdout)
			}
		})
	}
}

func TestTurnShape(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, streamArgs, nil, user("one"), user("two"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var types []string
	for _, l := range r.stdout {
		m := decode(t, l)
		typ, _ := m["type"].(string)
		if st, ok := m["subtype"].(string); ok && typ == "system" {
			typ += "/" + st
		}
		types = append(types, typ)
		if typ == "result" && strings.HasPrefix(l, `{"type"`) {
			t.Error("result line starts with its type; the CLI's does not")
		}
		if typ == "assistant" {
			msg := m["message"].(map[string]any)
			if msg["stop_reason"] != nil || len(msg["content"].([]any)) != 1 {
				t.Errorf("assistant event = %s", l)
			}
		}
	}
	want := "system/init assistant result system/init assistant result"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	rs := results(t, r)
	if rs[0]["result_index"] != 0.0 || rs[1]["result_index"] != 1.0 ||
		rs[1]["total_cost_usd"].(float64) <= rs[0]["total_cost_usd"].(float64) {
		t.Errorf("results = %v", rs)
	}
	mu := rs[0]["modelUsage"].(map[string]any)["claude-opus-5-5"].(map[string]any)
	if mu["contextWindow"] != 1000000.0 {
		t.Errorf("modelUsage = %v", mu)
	}
}

func TestNoOutputBeforeFirstUserLine(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, streamArgs, nil)
	if r.code != 0 || len(r.stdout) != 0 {
		t.Errorf("got code %d stdout %q", r.code, r.stdout)
	}
}

func TestExitCodeFollowsLastResult(t *testing.T) {
	w := newWorld(t)
	if r := w.exec(t, streamArgs, nil, user("[[TOOLONG]]")); r.code != 1 {
		t.Errorf("after an error result: exit %d, want 1", r.code)
	}
	env := []string{"FAKECLAUDE_TOOLONG_STICKY=0"}
	if r := w.exec(t, streamArgs, env, user("[[TOOLONG]]"), user("fine")); r.code != 0 {
		t.Errorf("after a good last result: exit %d, want 0", r.code)
	}
}

func TestOneShot(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, []string{"-p", "hi there"}, nil)
	if r.code != 0 || len(r.stdout) != 1 || r.stdout[0] != "echo: hi there" {
		t.Errorf("text: code %d stdout %q", r.code, r.stdout)
	}
	r = w.exec(t, []string{"-p", "hi", "--output-format", "json"}, nil)
	if len(r.stdout) != 1 || decode(t, r.stdout[0])["result"] != "echo: hi" {
		t.Errorf("json: stdout %q", r.stdout)
	}
}

func TestSessionsPersist(t *testing.T) {
	w := newWorld(t)
	const id = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	r := w.exec(t, append(streamArgs, "--session-id", id), nil, user("remember me"))
	if rs := results(t, r); len(rs) != 1 || rs[0]["session_id"] != id {
		t.Fatalf("results = %v (stderr %q)", rs, r.stderr)
	}
	matches, _ := filepath.Glob(filepath.Join(w.home, ".claude", "projects", "*", id+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("transcript not found: %v", matches)
	}
	st, err := os.Stat(matches[0])
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("transcript mode = %v, %v", st.Mode(), err)
	}
	data, _ := os.ReadFile(matches[0])
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	first := decode(t, lines[0])
	if first["type"] != "user" || first["parentUuid"] != nil || first["sessionId"] != id || first["cwd"] == "" {
		t.Errorf("first transcript line = %v", first)
	}
	if !strings.Contains(string(data), `"type":"last-prompt"`) || !strings.Contains(string(data), `"type":"cost-state"`) {
		t.Error("no bookkeeping lines")
	}

	r = w.exec(t, append(streamArgs, "--session-id", id), nil, user("again"))
	if want := "Error: Session ID " + id + " is already in use."; r.code != 1 || strings.TrimSpace(r.stderr) != want {
		t.Errorf("reused id: code %d stderr %q", r.code, r.stderr)
	}

	r = w.exec(t, append(streamArgs, "--resume", id), []string{"FAKECLAUDE_TOOLONG_ON_RESUME=1"}, user("resumed"))
	if rs := results(t, r); r.code != 1 || len(rs) != 1 || rs[0]["terminal_reason"] != "prompt_too_long" {
		t.Errorf("FAKECLAUDE_TOOLONG_ON_RESUME: code %d results %v", r.code, rs)
	}
}

func TestContinue(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, append(streamArgs, "--continue"), nil, user("first"))
	first := results(t, r)
	if len(first) != 1 || first[0]["is_error"] != false {
		t.Fatalf("new session via --continue: %v (stderr %q)", first, r.stderr)
	}
	r = w.exec(t, append(streamArgs, "-c"), nil, user("second"))
	if rs := results(t, r); len(rs) != 1 || rs[0]["session_id"] != first[0]["session_id"] {
		t.Errorf("--continue picked %v, want session %v", rs, first[0]["session_id"])
	}
}

func TestTooLongStaysAcrossResume(t *testing.T) {
	w := newWorld(t)
	const id = "bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	w.exec(t, append(streamArgs, "--session-id", id), nil, user("ok"), user("paste [[TOOLONG]]"))
	r := w.exec(t, append(streamArgs, "--resume", id), nil, user("small"))
	if rs := results(t, r); len(rs) != 1 || rs[0]["terminal_reason"] != "prompt_too_long" || rs[0]["result"] != "Prompt is too long" {
		t.Errorf("resumed poisoned session: %v", rs)
	}
	r = w.exec(t, append(streamArgs, "--resume", id), []string{"FAKECLAUDE_TOOLONG_STICKY=0"}, user("small"))
	if rs := results(t, r); len(rs) != 1 || rs[0]["is_error"] != false {
		t.Errorf("with FAKECLAUDE_TOOLONG_STICKY=0: %v", rs)
	}
}

func TestResumeNotAUUID(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, append(streamArgs, "--resume", "not-a-session"), nil)
	rs := results(t, r)
	if r.code != 1 || len(rs) != 1 || !strings.Contains(r.stderr, `Provided value "not-a-session" is not a UUID`) {
		t.Errorf("code %d stderr %q results %v", r.code, r.stderr, rs)
	}
}

func TestSlow(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, streamArgs, nil, user("[[SLOW:3]]"))
	if rs := results(t, r); len(rs) != 1 || rs[0]["result"] != "[chunk 0] [chunk 1] [chunk 2] " {
		t.Errorf("[[SLOW:3]] results = %v", rs)
	}
	release := filepath.Join(t.TempDir(), "release")
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = w.exec(t, streamArgs, []string{"FAKECLAUDE_RELEASE=" + release}, user("[[SLOW]]"))
	if rs := results(t, r); len(rs) != 1 || rs[0]["result"] != "[chunk 0] " {
		t.Errorf("released results = %v", rs)
	}
}

func TestSelfReport(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, streamArgs, nil, user("hi [[SELF:42]]"))
	if rs := results(t, r); len(rs) != 1 || rs[0]["result"] != "echo: hi [[SELF:42]]\n[ctx: ~42%]" {
		t.Errorf("results = %v", rs)
	}
}

func TestContextEnv(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, streamArgs, []string{"FAKECLAUDE_CONTEXT_WINDOW=5000", "FAKECLAUDE_INPUT_TOKENS=11"}, user("x"), user("[[BIG]]"))
	rs := results(t, r)
	if len(rs) != 2 {
		t.Fatalf("results = %v", rs)
	}
	mu := rs[0]["modelUsage"].(map[string]any)["claude-opus-5-5"].(map[string]any)
	if mu["contextWindow"] != 5000.0 || rs[0]["usage"].(map[string]any)["input_tokens"] != 11.0 {
		t.Errorf("first result = %v", rs[0])
	}
	if rs[1]["usage"].(map[string]any)["input_tokens"] != 120000.0 {
		t.Errorf("[[BIG]] usage = %v", rs[1]["usage"])
	}
}

// --tools and --disallowedTools narrow the tool set as the CLI does (a
// repeated --tools never widens it), init reports it, and a Bash call
// without Bash gets the CLI's refusal instead of a run or a prompt.
func TestToolsNarrow(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		args  []string
		tools string
		bash  bool
	}{
		{nil, "Task Bash Edit Read Write WebFetch WebSearch", true},
		{[]string{"--tools", "Read,Grep,Glob"}, "Read", false},
		{[]string{"--tools", "default", "--tools", "Read,Bash"}, "Bash Read", true},
		{[]string{"--tools", "Read", "--tools", "default"}, "Read", false},
		{[]string{"--disallowedTools", "Bash,Write"}, "Task Edit Read WebFetch WebSearch", false},
	}
	for _, tt := range tests {
		args := append(append(slices.Clone(streamArgs), "--permission-mode", "acceptEdits"), tt.args...)
		r := w.exec(t, args, nil, user("[[TOOL:touch x]]"))
		var tools []string
		for _, l := range r.stdout {
			if m := decode(t, l); m["subtype"] == "init" {
				for _, v := range m["tools"].([]any) {
					tools = append(tools, v.(string))
				}
			}
		}
		if got := strings.Join(tools, " "); got != tt.tools {
			t.Errorf("%q: init tools %q, want %q", tt.args, got, tt.tools)
		}
		res := results(t, r)
		ran := len(res) == 1 && strings.Contains(res[0]["result"].(string), "(fake) ran: touch x")
		refused := len(res) == 1 && strings.Contains(res[0]["result"].(string), "No such tool available: Bash")
		if ran != tt.bash || refused == tt.bash {
			t.Errorf("%q: result %v, want Bash available %v", tt.args, res, tt.bash)
		}
	}
}

// TestExecRunsTheCommand: [[EXEC:cmd]] really runs cmd in the working
// directory with the fake's environment and replies with how it ended.
func TestExecRunsTheCommand(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, streamArgs, []string{"CCX_PROBE=seen"}, user(`[[EXEC:pwd; echo "$CCX_PROBE"; exit 3]]`))
	res := results(t, r)
	if r.code != 0 || len(res) != 1 {
		t.Fatalf("code %d, results %v, stderr %q", r.code, res, r.stderr)
	}
	want := "exec exit 3:\n" + w.dir + "\nseen\n"
	if got, _ := res[0]["result"].(string); got != want {
		t.Errorf("result %q, want %q", got, want)
	}
}

func TestSeveralTools(t *testing.T) {
	w := newWorld(t)
	r := w.exec(t, streamArgs, nil, user("[[TOOL:echo one]] then [[TOOL:ls]]"))
	var tools []string
	for _, l := range r.stdout {
		m := decode(t, l)
		if m["type"] != "assistant" {
			continue
		}
		for _, c := range m["message"].(map[string]any)["content"].([]any) {
			if b := c.(map[string]any); b["type"] == "tool_use" {
				tools = append(tools, b["input"].(map[string]any)["command"].(string))
			}
		}
	}
	if len(tools) != 2 || tools[0] != "echo one" || tools[1] != "ls" {
		t.Errorf("tool calls = %q, want echo one then ls", tools)
	}
	if rs := results(t, r); len(rs) != 1 || rs[0]["result"] != "tool said: (fake) ran: echo one\ntool said: (fake) ran: ls" {
		t.Errorf("results = %v", rs)
	}
}

// TestToolTurnTranscriptStops: the transcript lines of a turn that calls a
// tool carry each message's stop reason as the real CLI writes them
// (agentproc's captures steer_transcript and steer_after_tool): tool_use on
// both blocks of the message that calls the tool, end_turn on the reply.
// A line of the first message saying end_turn would make a transcript cut
// after it read as a finished turn.
func TestToolTurnTranscriptStops(t *testing.T) {
	w := newWorld(t)
	const id = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeef"
	r := w.exec(t, append(streamArgs, "--session-id", id), nil, user("[[TOOL:echo hi]]"))
	if rs := results(t, r); len(rs) != 1 {
		t.Fatalf("results = %v (stderr %q)", rs, r.stderr)
	}
	matches, _ := filepath.Glob(filepath.Join(w.home, ".claude", "projects", "*", id+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("transcript not found: %v", matches)
	}
	data, _ := os.ReadFile(matches[0])
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		m := decode(t, l)
		if m["type"] != "assistant" {
			continue
		}
		msg := m["message"].(map[string]any)
		block := msg["content"].([]any)[0].(map[string]any)
		got = append(got, block["type"].(string)+":"+msg["stop_reason"].(string))
	}
	want := []string{"text:tool_use", "tool_use:tool_use", "text:end_turn"}
	if !slices.Equal(got, want) {
		t.Errorf("assistant transcript lines (block:stop_reason) = %v, want %v", got, want)
	}
}
