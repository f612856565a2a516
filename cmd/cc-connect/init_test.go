package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runBinary runs the cc-connect binary in dir with exactly env (plus a
// PATH whose only claude is a stub, which is all `check` looks for) under
// umask, and returns its stdout, stderr and exit code.
func runBinary(t *testing.T, dir, umask string, env []string, args ...string) (string, string, int) {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", `umask "$0"; exec "$@"`, umask, buildBinary(t)}, args...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), 0
}

// TestInitThenCheck: on a fresh machine, `init` writes a config that
// `check` accepts once the variables it names are set, private whatever
// the umask, and says what comes next.
func TestInitThenCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		platform string
		env      []string
		next     []string
	}{
		{"local", nil, []string{"cc-connect doctor --config conf/cc.toml", "cc-connect run --config conf/cc.toml"}},
		{"slack", []string{"SLACK_BOT_TOKEN=xoxb-1-2-abc", "SLACK_APP_TOKEN=xapp-1-A1-2-abc"},
			[]string{"export SLACK_BOT_TOKEN=…", "export SLACK_APP_TOKEN=…", "docs/slack.md", "allow_users in conf/cc.toml", "cc-connect doctor --config conf/cc.toml"}},
		{"discord", []string{"DISCORD_BOT_TOKEN=discord-token"}, []string{"export DISCORD_BOT_TOKEN=…", "docs/discord.md"}},
		{"telegram", []string{"TELEGRAM_BOT_TOKEN=123456:abc"}, []string{"export TELEGRAM_BOT_TOKEN=…", "docs/telegram.md"}},
	} {
		t.Run(tt.platform, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ws := filepath.Join(dir, "app")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			// The config's folder does not exist yet; a umask that would
			// leave the file read-only does not make it so.
			stdout, stderr, code := runBinary(t, dir, "0277", nil, "init", "--platform", tt.platform, "--workspace", "app", "--config", "conf/cc.toml")
			if code != exitOK {
				t.Fatalf("init: exit %d\n%s", code, stderr)
			}
			for _, want := range append([]string{"Wrote conf/cc.toml: " + tt.platform + ", working in " + ws}, tt.next...) {
				if !strings.Contains(stdout, want) {
					t.Errorf("init's output lacks %q:\n%s", want, stdout)
				}
			}
			path := filepath.Join(dir, "conf", "cc.toml")
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o600 {
				t.Errorf("config mode %04o, want 0600", info.Mode().Perm())
			}
			if dirInfo, err := os.Stat(filepath.Dir(path)); err != nil || dirInfo.Mode().Perm() != 0o700 {
				t.Errorf("config folder: %v, %v; want mode 0700", dirInfo.Mode(), err)
			}

			stdout, stderr, code = runBinary(t, dir, "0022", tt.env, "check", "--config", path)
			if code != exitOK {
				t.Fatalf("check after init: exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stdout, "workspace = "+`"`+ws+`"`) || !strings.Contains(stderr, path+": OK") {
				t.Errorf("check's output:\n%s\n%s", stdout, stderr)
			}
			if tt.env != nil {
				// Without the variables, check names the first missing one.
				_, stderr, code = runBinary(t, dir, "0022", nil, "check", "--config", path)
				if name, _, _ := strings.Cut(tt.env[0], "="); code != exitUsage || !strings.Contains(stderr, "environment variable "+name+" is not set") {
					t.Errorf("check without the variables: exit %d\n%s", code, stderr)
				}
			}
		})
	}
}

func TestInitRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"existing config", []string{"init"}, "config.toml already exists; init never writes over a config"},
		{"existing config, global flag", []string{"--config", "config.toml", "init", "--platform", "slack"}, "config.toml already exists"},
		{"unknown platform", []string{"init", "--platform", "irc", "--config", "new.toml"}, `--platform: platform "irc" is not one of slack, discord, telegram, local`},
		{"missing workspace", []string{"init", "--workspace", "nowhere", "--config", "new.toml"}, "--workspace " + filepath.Join(dir, "nowhere") + ": does not exist"},
		{"workspace is a file", []string{"init", "--workspace", "afile", "--config", "new.toml"}, "afile: is not a folder"},
		{"extra argument", []string{"init", "slack", "--config", "new.toml"}, `unexpected argument "slack"`},
		{"unknown flag", []string{"init", "--platfrom", "slack"}, "flag provided but not defined: -platfrom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runBinary(t, dir, "0022", nil, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant %d and %q", code, stderr, exitUsage, tt.want)
			}
		})
	}
	if data, err := os.ReadFile(filepath.Join(dir, "config.toml")); err != nil || string(data) != "# mine\n" {
		t.Errorf("the existing config now holds %q (%v)", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused init left new.toml: %v", err)
	}
}
