package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRealCLIRun drives the real claude CLI through the built binary,
// against the fake Messages API (see writeRealConfig).
func TestRealCLIRun(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	p := startBinaryEnv(t, []string{"CC_CONNECT_TEST_API_URL=" + api.URL()}, "run", "--config", writeRealConfig(t, claude))
	p.write(t, "hello from a real claude\n")
	p.stdin.Close()
	p.waitOut(t, "echo: hello from a real claude")
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	reqs := api.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake API saw no request")
	}
	if s := p.stderr.String(); strings.Contains(s, "sk-cc-connect-test-key") {
		t.Errorf("the API key reached the log:\n%s", s)
	}
}

// TestRealCLIRunConversation is the end-to-end path a user takes in the
// terminal chat, through the built binary and the real CLI: a reply with
// the context indicator, !new starting a fresh context, and a session
// whose history grew too big falling back to a fresh one that answers the
// same message, with the notice in the chat.
func TestRealCLIRunConversation(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	// 120,000 + 1,500 + 2,500 tokens of a 1,000,000 window: 12%.
	api := fakeapi.Start(t, fakeapi.WithUsage(fakeapi.Usage{InputTokens: 120_000, CacheCreationInputTokens: 1_500, CacheReadInputTokens: 2_500, OutputTokens: 5}))
	p := startBinaryEnv(t, []string{"CC_CONNECT_TEST_API_URL=" + api.URL()}, "run", "--config", writeRealConfig(t, claude))

	p.write(t, "hello there\n")
	lines := p.waitOut(t, "[ctx: ")
	if got := lines[len(lines)-1]; got != "[ctx: 12%]" {
		t.Errorf("indicator line %q, want [ctx: 12%%] on its own line", got)
	}
	if !containsLine(lines, "echo: hello there") {
		t.Errorf("reply lines %q lack the answer", lines)
	}

	p.write(t, "!new\n")
	p.waitOut(t, "Started a new session")
	p.write(t, "after new\n")
	p.waitOut(t, "echo: after new")
	last := lastRequest(t, api)
	if last.Contains("hello there") {
		t.Error("after !new the request still carries the earlier conversation")
	}

	// From now on any request that carries history is too long: the live
	// session fails (the CLI's own compaction fails too), and only a fresh
	// session can answer.
	api.SetMode(fakeapi.ModeTooLongWithHistory)
	p.write(t, "third message\n")
	notice := p.waitOut(t, "Session context was too large to resume")
	if !strings.Contains(strings.Join(notice, "\n"), "starting fresh") {
		t.Errorf("notice %q", notice)
	}
	p.waitOut(t, "echo: third message")
	last = lastRequest(t, api)
	if !last.Contains("third message") || last.Contains("after new") {
		t.Error("the resent message did not go to a fresh session")
	}
	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	logs := p.stderr.String()
	if n := strings.Count(logs, "Started a fresh agent session in place of a failed one"); n != 1 {
		t.Errorf("fresh-session fallback logged %d times, want once", n)
	}
	if !strings.Contains(logs, "Agent session cannot continue; starting fresh") {
		t.Error("the resume failure was not logged")
	}
}

func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func lastRequest(t *testing.T, api *fakeapi.Server) fakeapi.Request {
	t.Helper()
	reqs := api.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake API saw no request")
	}
	return reqs[len(reqs)-1]
}

// writeRealConfig writes a config that runs the terminal chat against the
// real claude, pointed by ${CC_CONNECT_TEST_API_URL} at a fake Messages
// API, with a throwaway HOME. It proves the config's agent environment
// reaches claude with its keys' case and its ${VAR} references expanded: a
// lowercased or unexpanded ANTHROPIC_BASE_URL would send the request
// elsewhere and no reply would come back.
func writeRealConfig(t *testing.T, claude string) string {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
idle_timeout = "5m"
[agent.env]
HOME = %q
CLAUDE_CONFIG_DIR = %q
ANTHROPIC_BASE_URL = "${CC_CONNECT_TEST_API_URL}"
ANTHROPIC_API_KEY = "sk-cc-connect-test-key"
DISABLE_TELEMETRY = "1"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
DISABLE_AUTOUPDATER = "1"
[[platforms]]
name = "tty"
type = "local"
[[bindings]]
platform = "tty"
workspace = "ws"
allow_users = ["tester"]
`, claude, home, filepath.Join(home, ".claude")))
}
