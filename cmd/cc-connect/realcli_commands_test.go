package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRealCLIRunChatCommands drives !sh, !allow and !resume through the
// built binary and the real CLI, and checks what each did rather than what
// cc-connect said: the shell command's file and its output reaching Claude,
// the allowed tool's file, and the resumed session's history reaching the
// API.
func TestRealCLIRunChatCommands(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	path := writeRealConfig(t, claude)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), `allow_users = ["tester"]`, "allow_users = [\"tester\"]\nadmins = [\"tester\"]\nallow_shell = true", 1)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(filepath.Dir(path), "ws")
	p := startBinaryEnv(t, []string{"CC_CONNECT_TEST_API_URL=" + api.URL()}, "run", "--config", path)

	p.write(t, "remember the word kumquat\n")
	p.waitOut(t, "echo: remember the word kumquat")
	p.write(t, "!status\n")
	m := regexp.MustCompile(`Session: ([0-9a-f-]{36})`).FindStringSubmatch(strings.Join(p.waitOut(t, "Session: "), "\n"))
	if m == nil {
		t.Fatal("!status named no session")
	}
	first := m[1]

	// !sh runs in the workspace, and Claude is told its output at the
	// start of the next turn.
	p.write(t, "!sh echo made-by-sh > sh_made.txt; echo shell-output-42\n")
	p.waitOut(t, "shell-output-42")
	if b, err := os.ReadFile(filepath.Join(ws, "sh_made.txt")); err != nil || strings.TrimSpace(string(b)) != "made-by-sh" {
		t.Errorf("the !sh command's file: %q, %v", b, err)
	}
	p.write(t, "what did the shell say?\n")
	p.waitOut(t, "what did the shell say?") // echoed after the note, on a line of its own
	if !lastRequest(t, api).Contains("shell-output-42") {
		t.Error("the !sh output did not reach Claude on the next turn")
	}

	// !allow answers the CLI's permission request, and the tool runs.
	p.write(t, "[[TOOL:touch allowed_via_chat.txt]]\n")
	p.waitOut(t, "!allow")
	p.write(t, "!allow\n")
	p.waitOut(t, "tool said:")
	if _, err := os.Stat(filepath.Join(ws, "allowed_via_chat.txt")); err != nil {
		t.Errorf("the tool allowed with !allow did not run: %v", err)
	}

	// !resume goes back to the first session, whose history the CLI
	// then sends again.
	p.write(t, "!new\n")
	p.waitOut(t, "Started a new session")
	p.write(t, "a fresh one\n")
	p.waitOut(t, "echo: a fresh one")
	if lastRequest(t, api).Contains("kumquat") {
		t.Fatal("the session after !new carries the first one's history")
	}
	p.write(t, "!resume "+first+"\n")
	p.waitOut(t, "Switched to session")
	p.write(t, "what was the word?\n")
	p.waitOut(t, "echo: what was the word?")
	last := lastRequest(t, api)
	if !last.Contains("kumquat") || last.Contains("a fresh one") {
		t.Error("after !resume the request does not carry the first session's history (or carries the second's)")
	}

	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}
