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

// TestRealCLINotLoggedInPiped is a first try without a login, as a script
// runs it: the real claude with an empty HOME and no key. The start says
// once that there is no login, the reply names the fix instead of "Please
// run /login", !status does not pass for all well, and the run exits 1
// because no turn succeeded.
func TestRealCLINotLoggedInPiped(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t) // where a request would go; none must
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[agent]
command = %q
[agent.env]
HOME = %q
CLAUDE_CONFIG_DIR = %q
ANTHROPIC_BASE_URL = %q
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
DISABLE_AUTOUPDATER = "1"
[[platforms]]
name = "tty"
type = "local"
[[bindings]]
platform = "tty"
workspace = "ws"
allow_users = ["tester"]
`, claude, home, filepath.Join(home, ".claude"), api.URL()))
	p := startBinaryEnv(t, []string{"ANTHROPIC_API_KEY=", "ANTHROPIC_AUTH_TOKEN=", "CLAUDE_CODE_OAUTH_TOKEN="},
		"run", "--config", path)
	p.write(t, "hello\n")
	reply := strings.Join(p.waitOut(t, "Then send your message again"), "\n")
	p.write(t, "!status\n")
	status := strings.Join(p.waitOut(t, "Workspace:"), "\n")
	p.stdin.Close()
	if code := p.exitCode(t); code != exitFailure {
		t.Errorf("exit code %d when every turn failed, want %d", code, exitFailure)
	}
	for _, want := range []string{"Not logged in · Please run /login", "ANTHROPIC_API_KEY", "claude auth login", "cc-connect doctor"} {
		if !strings.Contains(reply, want) {
			t.Errorf("the reply lacks %q:\n%s", want, reply)
		}
	}
	if !strings.Contains(status, "not logged in") {
		t.Errorf("!status does not say the last turn failed for the login:\n%s", status)
	}
	stderr := p.stderr.String()
	if n := strings.Count(stderr, "Claude Code is not logged in"); n != 1 {
		t.Errorf("the start said %d times that there is no login, want once:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "every turn failed") {
		t.Errorf("stderr does not say why the exit code is 1:\n%s", stderr)
	}
	if n := len(api.Requests()); n != 0 {
		t.Errorf("the API got %d requests without a login", n)
	}
}
