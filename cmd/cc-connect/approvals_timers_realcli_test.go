package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// withAgentKeys adds lines to the [agent] table of the config teamConfig
// wrote at path (the table is followed by [agent.env], so the keys go
// right after its idle_timeout).
func withAgentKeys(t *testing.T, path, lines string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const at = "idle_timeout = \"5m\"\n"
	if !strings.Contains(string(b), at) {
		t.Fatalf("no %q in the config to add the keys after", at)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), at, at+lines+"\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRealCLIApprovalReminderAndTimeout: the real claude asks to write a
// file and nobody answers, on Slack, Telegram (a forum topic) and Discord
// (a message's thread). After agent.approval_reminder the person who
// asked (the binding names no approvers) is mentioned in the thread, once:
// not again while the request waits on until agent.permission_timeout,
// nor after. At the timeout the documented default applies: the request is
// denied, the thread is told, Claude gets the denial as the tool's result
// (and answers it), and the file the tool would have written does not
// exist. Nobody is asked twice.
func TestRealCLIApprovalReminderAndTimeout(t *testing.T) {
	t.Parallel()
	// The reminder repeating (every reminder, as a timer re-armed for a
	// request already reminded of would) would post three more times
	// before the timeout.
	const reminder, timeout = "1s", "5s"
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
			c := chat.open(t)
			platform, chatEnv := c.platform("")
			path, ws, env := teamConfig(t, claude, platform)
			withAgentKeys(t, path, "approval_reminder = \""+reminder+"\"\npermission_timeout = \""+timeout+"\"")
			env = append(append(env, chatEnv...), "CC_CONNECT_TEST_API_URL="+api.URL())
			p := c.start(t, func() *process { return startBinaryEnv(t, env, "run", "--config", path) })

			c.say(t, "write it [[WRITE:made.txt:the words]]")
			limit := testenv.HangLimit(t, 60*time.Second)
			prompt, _ := c.waitPrompt(t, limit, "made.txt", isAllow)
			const reminded = "a permission request above has waited " + reminder + " for an answer."
			c.waitPost(t, limit, "the reminder", func(_, text string, _ bool) bool {
				return strings.Contains(text, reminded)
			})
			// Waiting on what any outcome shows, so that a wrong one fails
			// below rather than waits.
			shown := ""
			c.waitPost(t, limit, "the prompt showing the timeout", func(id, text string, _ bool) bool {
				shown = text
				return id == prompt && strings.Contains(strings.ToLower(text), "no answer within "+timeout)
			})
			if !strings.Contains(strings.ToLower(shown), "denied: no answer within "+timeout) {
				t.Errorf("the prompt shows %q, want the request denied at the timeout", shown)
			}
			answer := ""
			c.waitPost(t, limit, "Claude's answer to the tool's result", func(_, text string, _ bool) bool {
				answer = text
				return strings.Contains(text, "tool said:")
			})
			denial := "No answer in chat within " + timeout + "; the request was denied."
			if !strings.Contains(answer, denial) {
				t.Errorf("Claude answered %q, want it to quote the denial %q", answer, denial)
			}
			if !apiToolResultHas(api, denial) {
				for _, r := range api.Requests() {
					t.Logf("API request: last user text %q, tool results %+v", r.LastUserText, r.ToolResults)
				}
				t.Errorf("Claude was not told %q", denial)
			}
			if _, err := os.Stat(filepath.Join(ws, "made.txt")); !os.IsNotExist(err) {
				t.Errorf("the denied Write made its file (stat: %v)", err)
			}
			if n := c.mentioning(reminded); n != 1 {
				t.Errorf("the asker was mentioned %d times about the waiting request, want once", n)
			}
			if n := c.postsShowing("made.txt"); n != 1 {
				t.Errorf("%d prompts in the thread, want 1", n)
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := p.exitCode(t); code != 0 {
				t.Errorf("cc-connect exited %d", code)
			}
		})
	}
}
