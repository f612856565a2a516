package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// realCLIClusterHost writes the config of cluster host name (of a and b,
// on the NATS server at url) running the real claude against the fake
// API, with chat's platform and a binding held by a, b standing by, on
// the workspace ws (the same path on both hosts, so that the standby's
// claude can resume the session and the tool's input is the same), and
// returns the function that starts it.
func realCLIClusterHost(t *testing.T, name, url, claude, ws string, api *fakeapi.Server, chat killChat) func() *process {
	t.Helper()
	dir := t.TempDir()
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	platform, chatEnv := chat.platform("host = \"a\"\nstandby = [\"b\"]")
	if !strings.Contains(platform, `workspace = "ws"`) {
		t.Fatalf("no workspace to set in %s", platform)
	}
	platform = strings.Replace(platform, `workspace = "ws"`, fmt.Sprintf("workspace = %q", ws), 1)
	cfg := writeConfig(t, dir, fmt.Sprintf(`
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
[cluster]
host = %q
members = ["a", "b"]
urls = [%q]
lease_ttl = "3s"
%s`, claude, home, filepath.Join(home, ".claude"), name, url, platform))
	env := append([]string{"TMPDIR=" + tmp, "CC_CONNECT_TEST_API_URL=" + api.URL()}, chatEnv...)
	return func() *process { return startBinaryEnv(t, env, "run", "--config", cfg) }
}

// TestRealCLIClusterApprovalOutlivesTheHolder: on a cluster binding, the
// real claude on the holder asks to write a file, and the holder is
// killed -9 while the prompt waits, on Slack, Telegram (a forum topic)
// and Discord (a message's thread). The standby that takes the binding
// over tells the thread the request above still waits, and posts no
// prompt of its own; the Allow pressed on the old prompt answers it; the
// standby's claude, run again on the message, makes the same Write (the
// same tool with the same input: what the answer is kept for), which is
// allowed without asking; and the file is in the workspace with the
// words the fake API told the tool to write. Nobody is asked twice.
func TestRealCLIClusterApprovalOutlivesTheHolder(t *testing.T) {
	t.Parallel()
	for _, chat := range []struct {
		name string
		open func(t *testing.T) killChat
	}{
		{"slack", newSlackKill},
		{"telegram", newTelegramKill},
		{"discord", newDiscordKill},
	} {
		t.Run(chat.name, func(t *testing.T) {
			t.Parallel()
			claude := testenv.ClaudeBinary(t)
			api := fakeapi.Start(t)
			srv := clustertest.Single(t)
			c := chat.open(t)
			ws := filepath.Join(t.TempDir(), "ws")
			if err := os.Mkdir(ws, 0o700); err != nil {
				t.Fatal(err)
			}
			a := c.start(t, realCLIClusterHost(t, "a", srv.ClientURL(), claude, ws, api, c))
			a.waitErr(t, "Serving a cluster binding")
			b := realCLIClusterHost(t, "b", srv.ClientURL(), claude, ws, api, c)()
			b.waitErr(t, "Joined the cluster")

			const words = "the words to keep"
			c.say(t, "write it [[WRITE:made.txt:"+words+"]]")
			limit := testenv.HangLimit(t, 60*time.Second)
			prompt, press := c.waitPrompt(t, limit, "made.txt", isAllow)
			if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-a.exited

			// The notice, or a prompt asking again: either ends the wait,
			// so that asking again fails here rather than waits.
			again := false
			c.waitPost(t, limit, "the standby saying the request still waits", func(id, text string, buttons bool) bool {
				again = buttons && id != prompt
				return strings.Contains(text, "still waits for an answer") || again
			})
			if again {
				t.Fatalf("the standby asked again")
			}
			press()
			answer := ""
			c.waitPost(t, limit, "Claude's answer to the tool's result", func(id, text string, buttons bool) bool {
				again = again || buttons && id != prompt
				answer = text
				return strings.Contains(text, "tool said:") || again
			})
			if again {
				t.Errorf("the standby asked again after the press")
			}
			if !strings.Contains(answer, "File created successfully") {
				t.Errorf("Claude answered %q, want the Write done", answer)
			}
			if got, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(got) != words {
				t.Errorf("made.txt holds %q (%v), want %q", got, err, words)
			}
			if n := c.postsShowing("made.txt"); n != 1 {
				t.Errorf("%d prompts in the thread, want the holder's only", n)
			}
			if n := strings.Count(b.stderr.String(), "Adopted the requests a handed-over turn waited on"); n != 1 {
				t.Errorf("the standby adopted the request %d times, want once", n)
			}
			if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := b.exitCode(t); code != 0 {
				t.Errorf("the standby exited %d", code)
			}
		})
	}
}
