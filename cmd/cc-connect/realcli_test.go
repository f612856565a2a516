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

// TestRunRealClaude drives the real claude CLI through the built binary,
// against the fake Messages API. It proves the config's agent environment
// reaches claude with its keys' case and its ${VAR} references expanded:
// a lowercased or unexpanded ANTHROPIC_BASE_URL would send the request
// elsewhere and no reply would come back.
func TestRunRealClaude(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	for _, d := range []string{"ws", "home"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`
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
`, claude, home, filepath.Join(home, ".claude"))
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinaryEnv(t, []string{"CC_CONNECT_TEST_API_URL=" + api.URL()}, "run", "--config", path)
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
	s := p.stderr.String()
	if strings.Contains(s, "sk-cc-connect-test-key") {
		t.Errorf("the API key reached the log:\n%s", s)
	}
	if !strings.Contains(s, "Config loaded") || !strings.Contains(s, "ANTHROPIC_API_KEY") {
		t.Errorf("the debug log does not show the config (with env keys, without values):\n%s", s)
	}
}
