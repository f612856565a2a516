package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRealCLIConsoleQuestionsAndPlans answers Claude's questions and
// approves its plan from the page, in a real browser, against the built
// binary, the fake Slack and the real CLI: the options chosen by keyboard
// reach Claude as the chat's buttons would send them, the question's
// prompt in the thread says who answered, and the plan approved on the
// page lets Claude go on (the binding plans: in plan mode the CLI asks for
// the plan's approval).
func TestRealCLIConsoleQuestionsAndPlans(t *testing.T) {
	t.Parallel()
	chromium := testenv.Chromium(t)
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
permission_mode = "plan"
[console]
enabled = true
listen = "127.0.0.1:0"
`, f.APIURL()))
	env = append(env, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken, "CC_CONNECT_TEST_API_URL="+api.URL())
	startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 1)

	limit := testenv.HangLimit(t, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")))
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	alice, cancelAlice := chromedp.NewContext(alloc)
	defer cancelAlice()
	link := consoleLink(t, f, "1700000500.000100", "U0ALICE")
	browse(t, alice, "signing in", chromedp.Navigate(link))
	base := link[:strings.Index(link, "/signin")]
	page := func(ts string) string { return base + "/c?k=" + url.QueryEscape("slack/C1/"+ts) }

	// Two questions, one of one answer and one of several.
	const askTS = "1700000501.000100"
	browse(t, alice, "opening the conversation", chromedp.Steps(chromedp.Navigate(page(askTS)), chromedp.WaitVisible(chromedp.ID("reply"))))
	f.DeliverMention(t, fakeslack.MsgEvent("C1", askTS, "U0ALICE", `<@UBOT> pick [[ASK:[{"question":"Which database?","header":"DB",`+
		`"options":[{"label":"Postgres","description":"SQL server"},{"label":"SQLite","description":"One file"}],"multiSelect":false},`+
		`{"question":"Which features?","header":"Features","options":[{"label":"Auth","description":"Login"},`+
		`{"label":"Search","description":"Full text"},{"label":"Export","description":"CSV files"}],"multiSelect":true}]]]`, nil))
	sqlite, export := chromedp.CSS(`input[name="q0"][value="1"]`), chromedp.CSS(`input[name="q1"][value="2"]`)
	browse(t, alice, "the questions on the page", chromedp.WaitVisible(sqlite))
	if legend := browse(t, alice, "the first question", chromedp.Text(chromedp.CSS("fieldset legend"))); legend != "DB: Which database?" {
		t.Errorf("the first question reads %q", legend)
	}
	browse(t, alice, "choosing by keyboard", chromedp.Steps(
		chromedp.Focus(sqlite), chromedp.KeyEvent(" "),
		chromedp.Focus(chromedp.CSS(`input[name="q1"][value="0"]`)), chromedp.KeyEvent(" "),
		chromedp.Focus(export), chromedp.KeyEvent(" "),
		chromedp.Focus(chromedp.CSS(`button[value="answer"]`)), chromedp.KeyEvent("\r")))
	reply := slackPostWithin(t, f, limit, "the reply after the answers", func(m fakeslack.Message) bool {
		return m.ThreadTS == askTS && strings.Contains(m.Text, "tool said:")
	})
	if !strings.Contains(reply.Text, `"Which database?"="SQLite"`) || !strings.Contains(reply.Text, `"Which features?"="Auth,Export"`) {
		t.Errorf("Claude did not get the answers given on the page: %q", reply.Text)
	}
	var prompt fakeslack.Message
	for _, m := range f.Posts() {
		if m.ThreadTS == askTS && m.BotID != "" && strings.Contains(m.Text+m.Blocks, "Which database?") && !strings.Contains(m.Text, "tool said:") {
			prompt = m
		}
	}
	if prompt.TS == "" {
		t.Fatal("no question prompt was posted in the thread")
	}
	f.WaitMessage(t, "C1", prompt.TS, "the prompt saying who answered", func(m fakeslack.Message) bool {
		return strings.Contains(m.Text+m.Blocks, "Answered by")
	})

	// A plan, approved on the page.
	const planTS = "1700000502.000100"
	browse(t, alice, "opening the next conversation", chromedp.Steps(chromedp.Navigate(page(planTS)), chromedp.WaitVisible(chromedp.ID("reply"))))
	f.DeliverMention(t, fakeslack.MsgEvent("C1", planTS, "U0ALICE", "<@UBOT> [[PLAN]]", nil))
	approve := chromedp.CSS(`button[value="plan_default"]`)
	browse(t, alice, "the plan's Approve button", chromedp.WaitVisible(approve))
	browse(t, alice, "approving", chromedp.Steps(chromedp.Focus(approve), chromedp.KeyEvent("\r")))
	planReply := slackPostWithin(t, f, limit, "the reply after the plan", func(m fakeslack.Message) bool {
		return m.ThreadTS == planTS && strings.Contains(m.Text, "tool said:")
	})
	if !strings.Contains(planReply.Text, "User has approved your plan") {
		t.Errorf("Claude was not told the plan was approved: %q", planReply.Text)
	}
	approved := false
	for _, m := range f.Posts() {
		if m.ThreadTS == planTS && strings.Contains(m.Text+m.Blocks, "Approved by") {
			approved = true
		}
	}
	if !approved {
		t.Errorf("the thread does not say the plan was approved: %+v", f.Posts())
	}
}
