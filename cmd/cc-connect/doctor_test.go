package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/lease"
)

// opsConfig writes a config for the local chat with the fake claude (which
// reports the tested version), an API key in agent.env and extra TOML, and
// returns its path.
func opsConfig(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	return writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[agent]
command = %q
env = { ANTHROPIC_API_KEY = "sk-OPSSECRET", CLAUDE_CONFIG_DIR = %q }
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"))+localChatTOML+extra)
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli(context.Background(), args, stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

func TestDoctorCommand(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		extra    string
		holdLock bool
		args     func(path string) []string
		wantCode int
		want     []string
	}{
		{
			name:     "ready",
			args:     func(p string) []string { return []string{"doctor", "--config", p} },
			wantCode: exitOK,
			want: []string{"✓ config: ", "✓ platform adapters: 1 built", "✓ claude: " + testenv.ClaudeVersion + " at ", "✓ claude login: ANTHROPIC_API_KEY is set in agent.env",
				"✓ workspace ", "✓ state dir: ", "✓ state dir lock: ", "✓ metrics: off", "0 failures: ready to run"},
		},
		{
			name:     "global --config",
			args:     func(p string) []string { return []string{"--config", p, "doctor"} },
			wantCode: exitOK,
			want:     []string{"ready to run"},
		},
		{
			name:     "another instance holds the state dir",
			holdLock: true,
			args:     func(p string) []string { return []string{"doctor", "--config", p} },
			wantCode: exitFailure,
			want:     []string{fmt.Sprintf("✗ state dir lock: held by pid %d", os.Getpid()), "1 failure: fix the failures above"},
		},
		{
			name:     "remote metrics refused by the config",
			extra:    "[metrics]\naddr = \"0.0.0.0:9464\"\n",
			args:     func(p string) []string { return []string{"doctor", "--config", p} },
			wantCode: exitUsage,
			want:     []string{"✗ config: invalid config", "\n    metrics.addr: \"0.0.0.0:9464\" can be reached from other hosts"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := opsConfig(t, tt.extra)
			if tt.holdLock {
				l, err := lease.StateDir(filepath.Join(filepath.Dir(path), "state"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Release() })
			}
			code, out, errOut := runCLI(t, tt.args(path)...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "OPSSECRET") {
				t.Errorf("output shows the API key:\n%s", out)
			}
		})
	}
}

func TestDoctorCommandArguments(t *testing.T) {
	t.Parallel()
	code, _, errOut := runCLI(t, "doctor", "extra")
	if code != exitUsage || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("doctor extra: exit %d, stderr %q", code, errOut)
	}
	code, out, _ := runCLI(t, "doctor", "--config", filepath.Join(t.TempDir(), "none.toml"))
	if code != exitUsage || !strings.Contains(out, "✗ config: config file not found") {
		t.Errorf("missing config: exit %d, stdout %q", code, out)
	}
}
