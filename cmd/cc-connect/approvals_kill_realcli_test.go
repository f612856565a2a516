package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// waitParked waits until a conversation's record under state keeps a
// request that waits on people, naming sub (its prompt's message).
func waitParked(t *testing.T, state, sub string) {
	t.Helper()
	waitFile(t, "the request in the conversation's record", func() bool {
		records, _ := filepath.Glob(filepath.Join(state, "sessions", "*.json"))
		for _, r := range records {
			if b, err := os.ReadFile(r); err == nil && strings.Contains(string(b), sub) && strings.Contains(string(b), `"parked":`) {
				return true
			}
		}
		return false
	})
}

// apiToolResultHas reports whether a tool result the fake Messages API got
// holds sub.
func apiToolResultHas(api *fakeapi.Server, sub string) bool {
	for _, r := range api.Requests() {
		for _, tr := range r.ToolResults {
			if strings.Contains(tr.Content, sub) {
				return true
			}
		}
	}
	return false
}

// TestRealCLIQuestionAndPlanOutliveKill: the real claude asks a question
// (AskUserQuestion), or proposes a plan in plan mode (ExitPlanMode);
// cc-connect is SIGKILLed while the prompt waits in the Slack thread. The
// restarted binary says the request still waits, a press on the old
// prompt's button answers it, and Claude gets that answer (the choice, the
// approval) as the tool's result, with no second prompt posted.
func TestRealCLIQuestionAndPlanOutliveKill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, binding, prompt string
		isPrompt              func(m fakeslack.Message) bool
		button                func(m fakeslack.Message) (block, action string)
		told                  string // in a tool result Claude gets
		shows                 string // in the prompt's blocks
	}{
		{
			name: "question", prompt: "pick one [[ASK]]",
			isPrompt: func(m fakeslack.Message) bool {
				return strings.Contains(m.Blocks, "Which color should the button be?") && len(m.Buttons()) > 0
			},
			button: func(m fakeslack.Message) (string, string) {
				for _, b := range m.Buttons() {
					if b.Text == "Blue" {
						return b.BlockID, b.ActionID
					}
				}
				return "", ""
			},
			told:  `"Which color should the button be?"="Blue"`,
			shows: "Which color should the button be?",
		},
		{
			name: "plan", binding: `permission_mode = "plan"`, prompt: "plan it [[PLAN]]",
			isPrompt: func(m fakeslack.Message) bool {
				return len(m.Buttons()) == 3 && strings.Contains(m.Blocks, "Write the fix.")
			},
			button: func(m fakeslack.Message) (string, string) {
				for _, b := range m.Buttons() {
					if b.ActionID == "cc_plan_accept_edits" {
						return b.BlockID, b.ActionID
					}
				}
				return "", ""
			},
			told:  "User has approved your plan",
			shows: "Write the fix.",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			claude := testenv.ClaudeBinary(t)
			api := fakeapi.Start(t)
			f := fakeslack.New(t)
			path, _, env := teamConfig(t, claude, fmt.Sprintf(`
[[platforms]]
name = "slack"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
[[bindings]]
platform = "slack"
channel = "C1"
workspace = "ws"
allow_users = ["U0ALICE"]
%s
`, f.APIURL(), tc.binding))
			env = append(env, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken, "CC_CONNECT_TEST_API_URL="+api.URL())
			state := filepath.Join(filepath.Dir(path), "state")
			p := startBinaryEnv(t, env, "run", "--config", path)
			f.WaitConn(t, 1)

			const ts = "1700000600.000100"
			f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U0ALICE", "<@UBOT> "+tc.prompt, nil))
			limit := testenv.HangLimit(t, 60*time.Second)
			prompt := slackPostWithin(t, f, limit, "the prompt", func(m fakeslack.Message) bool { return m.ThreadTS == ts && tc.isPrompt(m) })
			block, action := tc.button(prompt)
			if action == "" {
				t.Fatalf("no button to press on the prompt: %+v", prompt.Buttons())
			}
			waitParked(t, state, prompt.TS)
			if !kill(t, p, 0) {
				t.Fatalf("cc-connect exited by itself:\n%s", p.stderr.String())
			}

			last := startBinaryEnv(t, env, "run", "--config", path)
			f.WaitConn(t, 2)
			slackPostWithin(t, f, limit, "the notice that the request still waits", func(m fakeslack.Message) bool {
				return m.ThreadTS == ts && strings.Contains(m.Text, "still waits for an answer")
			})
			f.WaitAck(t, f.PressIn(t, prompt, block, action, "U0ALICE"))
			reply := slackPostWithin(t, f, limit, "the resumed turn's reply", func(m fakeslack.Message) bool {
				return m.ThreadTS == ts && ctxFigure.MatchString(m.Text) || m.ThreadTS == ts && len(m.Buttons()) > 0 && m.TS != prompt.TS
			})
			if len(reply.Buttons()) > 0 {
				t.Errorf("asked again after the restart: %q", reply.Text)
			}
			if !apiToolResultHas(api, tc.told) {
				for _, r := range api.Requests() {
					t.Logf("API request: last user text %q, tool results %+v", r.LastUserText, r.ToolResults)
				}
				for _, m := range f.Posts() {
					t.Logf("post in %s: %q", m.ThreadTS, m.Text)
				}
				t.Errorf("Claude was not told %q", tc.told)
			}
			n := 0
			for _, c := range f.Succeeded("chat.postMessage") {
				// The prompt as posted (a press edits it).
				if strings.Contains(c.Form["blocks"], tc.shows) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d prompts in the thread, want the first one only", n)
			}
			if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := last.exitCode(t); code != 0 {
				t.Errorf("the last instance exited %d", code)
			}
		})
	}
}

// TestRealCLIApprovalOutlivesKillOnTelegram is TestRealCLIApprovalOutlivesKill
// in a Telegram forum topic: the old prompt's Allow button, pressed after
// the restart, lets the command run, and nobody is asked twice.
func TestRealCLIApprovalOutlivesKillOnTelegram(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	f := faketelegram.New(t)
	path, ws, env := teamConfig(t, claude, fmt.Sprintf(`
[[platforms]]
name = "tg"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
[[bindings]]
platform = "tg"
channel = "*"
workspace = "ws"
allow_users = ["7"]
`, f.URL()))
	env = append(env, "TELEGRAM_BOT_TOKEN="+faketelegram.Token, "CC_CONNECT_TEST_API_URL="+api.URL())
	state := filepath.Join(filepath.Dir(path), "state")
	p := startBinaryEnv(t, env, "run", "--config", path)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })
	limit := testenv.HangLimit(t, 60*time.Second)
	f.SetWaitLimit(limit)

	alice := faketelegram.User(7, "alice", false)
	const forumID, topic = -1002, 90
	f.Send(map[string]any{
		"chat": map[string]any{"id": forumID, "type": "supergroup", "is_forum": true, "title": "dev"},
		"from": alice, "text": "@" + faketelegram.BotUsername + " make it [[TOOL:touch made.txt]]",
		"entities":          []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}},
		"message_thread_id": topic, "is_topic_message": true,
	})
	isPrompt := func(m faketelegram.Message) bool {
		for _, b := range m.Buttons() {
			if isAllow(b.Text) {
				return m.ThreadID == topic
			}
		}
		return false
	}
	prompt := f.WaitSent(t, "the permission prompt", isPrompt)
	allow := ""
	for _, b := range prompt.Buttons() {
		if isAllow(b.Text) {
			allow = b.Text
		}
	}
	if allow == "" {
		t.Fatalf("no Allow button on the prompt: %+v", prompt.Buttons())
	}
	waitParked(t, state, `"parked":`)
	if !kill(t, p, 0) {
		t.Fatalf("cc-connect exited by itself:\n%s", p.stderr.String())
	}
	polls := len(f.Calls("getUpdates"))

	last := startBinaryEnv(t, env, "run", "--config", path)
	f.Wait(t, "the restarted instance's poll", func() bool { return len(f.Calls("getUpdates")) > polls })
	f.WaitSent(t, "the notice that the request still waits", func(m faketelegram.Message) bool {
		return m.ThreadID == topic && strings.Contains(m.Text, "still waits for an answer")
	})
	f.Press(t, prompt, allow, alice)
	f.WaitSent(t, "the resumed turn's reply", func(m faketelegram.Message) bool {
		return m.ThreadID == topic && strings.Contains(m.Text, "tool said:")
	})
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err != nil {
		t.Fatalf("made.txt was not made: %v", err)
	}
	n := 0
	for _, c := range f.Calls("sendMessage") {
		if strings.Contains(c.Form.Get("reply_markup"), allow) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d prompts sent, want the first one only", n)
	}
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := last.exitCode(t); code != 0 {
		t.Errorf("the last instance exited %d", code)
	}
}
