package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

var consoleLinkRE = regexp.MustCompile(`https?://127\.0\.0\.1:\d+/signin\?t=[A-Za-z0-9_-]+`)

// TestRealCLIConsole drives the console in a real browser (Debian's
// chromium, through chromedp) against the built binary, the fake Slack and
// the real CLI against the fake Messages API: sign in with the link the
// fake Slack received by direct message; a reused link is refused; a reply
// streams into the page live and chat text with HTML shows as text; an
// approver's Allow on the page lets the tool write its file; a
// non-approver's page has no button and their forged POST is refused; Stop
// from the page stops the turn.
func TestRealCLIConsole(t *testing.T) {
	t.Parallel()
	chromium := testenv.Chromium(t)
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	f := fakeslack.New(t)
	path, ws, env := teamConfig(t, claude, fmt.Sprintf(`
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
allow_users = ["U0ALICE", "U0BOB"]
approvers = ["U0ALICE"]
[console]
enabled = true
listen = "127.0.0.1:0"
`, f.APIURL()))
	env = append(env, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken, "CC_CONNECT_TEST_API_URL="+api.URL())
	began := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(began).Seconds(), what) }
	p := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 1)
	step("connected")

	limit := testenv.HangLimit(t, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")))
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	// Alice and Bob browse with cookies of their own.
	alice, cancelAlice := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer cancelAlice()
	bob, cancelBob := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer cancelBob()

	step("browser up")
	// !console in a thread: the link comes by direct message.
	link := consoleLink(t, f, "1700000300.000100", "U0ALICE")
	browse(t, alice, "signing in", chromedp.Navigate(link))
	if h := browse(t, alice, "the first page", chromedp.Text(chromedp.CSS("h1"))); h != "Conversations" {
		t.Fatalf("after the link: page %q, want Conversations", h)
	}
	browse(t, bob, "using Alice's link again", chromedp.Navigate(link))
	if reused := browse(t, bob, "the page", chromedp.Text(chromedp.CSS("main"))); !strings.Contains(reused, "used already, has expired") {
		t.Fatalf("a reused link: page %q, want it refused", reused)
	}
	step("signed in")
	base := link[:strings.Index(link, "/signin")]
	page := func(ts string) string { return base + "/c?k=" + url.QueryEscape("slack/C1/"+ts) }

	// A reply streams into the open page, and the chat's HTML is text.
	const streamTS = "1700000301.000100"
	browse(t, alice, "opening the conversation", chromedp.Steps(chromedp.Navigate(page(streamTS)), chromedp.WaitVisible(chromedp.ID("reply"))))
	browse(t, alice, "watching the reply", chromedp.Evaluate[chromedp.Void](`window.changes = 0; new MutationObserver(() => window.changes++).observe(document.getElementById("reply"), {childList: true, characterData: true, subtree: true})`))
	f.DeliverMention(t, fakeslack.MsgEvent("C1", streamTS, "U0ALICE",
		"<@UBOT> &lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img src=x onerror=window.pwned=2&gt; [[STREAM:8:3s]]", nil))
	browse(t, alice, "the whole reply", chromedp.Poll[chromedp.Void](`document.getElementById("reply").textContent.includes(`+
		fmt.Sprintf("%q", strings.TrimSpace(fakeapi.StreamChunk(8, 8)))+`)`, chromedp.WithPollingTimeout(limit)))
	if n := browse(t, alice, "counting changes", chromedp.Evaluate[int](`window.changes`)); n < 2 {
		t.Errorf("the reply changed %d times in the open page, want it to stream in", n)
	}
	if browse(t, alice, "looking for script", chromedp.Evaluate[bool](`window.pwned !== undefined || document.querySelector("#live img, #live script") !== null`)) {
		t.Error("chat text became HTML in the page")
	}

	step("streamed")
	// Alice allows a Write from the page, by keyboard: the file is created.
	const writeTS = "1700000302.000100"
	browse(t, alice, "opening the next conversation", chromedp.Steps(chromedp.Navigate(page(writeTS)), chromedp.WaitVisible(chromedp.ID("reply"))))
	f.DeliverMention(t, fakeslack.MsgEvent("C1", writeTS, "U0ALICE", "<@UBOT> [[WRITE:from-console.txt:made in the browser]]", nil))
	allow := chromedp.CSS(`button[value="allow"]`)
	browse(t, alice, "the Allow button", chromedp.WaitVisible(allow))
	if label := browse(t, alice, "its label", chromedp.AttributeValue(allow, "aria-label")); !strings.Contains(label.Value, "Write") {
		t.Errorf("the Allow button's label %q does not say what it allows", label.Value)
	}
	browse(t, alice, "allowing", chromedp.Steps(chromedp.Focus(allow), chromedp.KeyEvent("\r")))
	slackPostWithin(t, f, limit, "the reply after the write", func(m fakeslack.Message) bool {
		return m.ThreadTS == writeTS && strings.Contains(m.Text, "tool said:")
	})
	if got, err := os.ReadFile(filepath.Join(ws, "from-console.txt")); err != nil || string(got) != "made in the browser" {
		t.Fatalf("the file the page allowed: %q, %v", got, err)
	}

	step("allowed")
	// Bob may see but not approve: no button, and a forged POST is refused.
	bobLink := consoleLink(t, f, "1700000303.000100", "U0BOB")
	const waitTS = "1700000304.000100"
	browse(t, bob, "Bob signs in and opens a conversation", chromedp.Steps(chromedp.Navigate(bobLink), chromedp.Navigate(page(waitTS)),
		chromedp.WaitVisible(chromedp.ID("reply"))))
	f.DeliverMention(t, fakeslack.MsgEvent("C1", waitTS, "U0ALICE", "<@UBOT> [[WRITE:&lt;b&gt;bob&lt;/b&gt;.txt:never]]", nil))
	browse(t, bob, "the request waiting", chromedp.WaitVisible(chromedp.CSS(`#asks li[data-request]`)))
	if n := browse(t, bob, "counting buttons", chromedp.Evaluate[int](`document.querySelectorAll('button[value="allow"], button[value="deny"]').length`)); n != 0 {
		t.Errorf("a non-approver's page shows %d answer buttons", n)
	}
	if shown := browse(t, bob, "the tool input", chromedp.Text(chromedp.CSS(`#asks li[data-request] code`))); !strings.Contains(shown, "<b>bob</b>.txt") {
		t.Errorf("the tool input shows as %q, want its HTML as text", shown)
	}
	status := browse(t, bob, "a forged POST", chromedp.Evaluate[int](`(async () => {
		const li = document.querySelector("#asks li[data-request]");
		const body = new URLSearchParams({csrf: document.querySelector('input[name="csrf"]').value,
			k: document.getElementById("live").dataset.key, request: li.dataset.request, choice: "allow"});
		return (await fetch("/answer", {method: "POST", body, redirect: "manual"})).status;
	})()`, chromedp.EvalAwaitPromise))
	if status != 403 {
		t.Errorf("a non-approver's forged POST got %d, want 403", status)
	}
	step("refused")
	// Stop from the page, by keyboard: the turn ends, the file is not made.
	browse(t, bob, "stopping from the page", chromedp.Steps(chromedp.Focus(chromedp.ID("stop")), chromedp.KeyEvent("\r")))
	slackPostWithin(t, f, limit, "the stop's notice in the thread", func(m fakeslack.Message) bool {
		return m.ThreadTS == waitTS && strings.Contains(m.Text, "Stopping the current turn")
	})
	if _, err := os.Stat(filepath.Join(ws, "<b>bob</b>.txt")); err == nil {
		t.Error("the request Bob could not approve ran anyway")
	}
	_ = p
}

// browse runs a on the browser tab of ctx and returns its value.
func browse[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("in the browser, %s: %v", what, err)
	}
	return v
}

// consoleLink sends !console in a thread of C1 as user and returns the
// link the bot sent them by direct message.
func consoleLink(t *testing.T, f *fakeslack.Server, ts, user string) string {
	t.Helper()
	f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, user, "<@UBOT> !console", nil))
	dm := f.WaitPost(t, "the sign-in link by direct message", func(m fakeslack.Message) bool {
		return m.Channel == fakeslack.DMChannel(user) && consoleLinkRE.MatchString(m.Text)
	})
	f.WaitPost(t, "the note in the thread", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "by direct message")
	})
	for _, m := range f.Posts() {
		if m.Channel == "C1" && consoleLinkRE.MatchString(m.Text) {
			t.Fatalf("the link was posted in the channel: %q", m.Text)
		}
	}
	return consoleLinkRE.FindString(dm.Text)
}
