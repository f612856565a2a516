package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRealCLIConsoleRevert drives a turn's changes in the console in a real
// browser (chromium through chromedp) against the built binary, the fake
// Slack and the real CLI: Claude writes a file; the conversation page shows
// the turn's files, lines and diff to Bob, who may not approve, with no
// Revert button, and his forged POST is refused; Alice's Revert on the page
// deletes the file and the thread says she reverted it, as the chat's
// button would; her second press is refused by the engine and the page
// shows the chat's reason. Bob's page, open all along, shows the revert.
func TestRealCLIConsoleRevert(t *testing.T) {
	t.Parallel()
	chromium := testenv.Chromium(t)
	f := fakeslack.New(t)
	f.SetWaitLimit(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	r, _ := startRealChatWith(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
`, f.APIURL()), `"U0ALICE", "U0BOB"`, `approvers = ["U0ALICE"]
[console]
enabled = true
listen = "127.0.0.1:0"`, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken)
	defer r.stop(t)
	f.WaitConn(t, 1)

	const ts = "1700000401.000100"
	f.Deliver(t, fakeslack.MsgEvent("C1", ts, "U0ALICE", "<@UBOT> "+writeTurn, nil))
	f.WaitPost(t, "the turn's summary", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "This turn changed 1 file (+3 −0)")
	})
	file := filepath.Join(r.ws, "new.txt")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("new.txt after the turn: %v", err)
	}

	limit := testenv.HangLimit(t, 2*time.Minute)
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
	alice, cancelAlice := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer cancelAlice()
	bob, cancelBob := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer cancelBob()

	aliceLink := consoleLink(t, f, "1700000402.000100", "U0ALICE")
	bobLink := consoleLink(t, f, "1700000403.000100", "U0BOB")
	page := aliceLink[:strings.Index(aliceLink, "/signin")] + "/c?k=" + url.QueryEscape("chat/C1/"+ts)

	// Bob sees the changes and the diff, and no button; his forged POST
	// is refused and the file stays.
	browse(t, bob, "Bob opens the conversation", chromedp.Steps(chromedp.Navigate(bobLink), chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.ID("changes"))))
	if sum := browse(t, bob, "the changes", chromedp.Text(chromedp.ID("changes-sum"))); sum != "1 file (+3 −0)" {
		t.Errorf("the changes read %q, want 1 file (+3 −0)", sum)
	}
	if diff := browse(t, bob, "the diff", chromedp.Evaluate[string](`document.getElementById("diff-text").textContent`)); diff !=
		"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n" {
		t.Errorf("the diff on the page %q", diff)
	}
	if n := browse(t, bob, "counting Revert buttons", chromedp.Evaluate[int](`document.querySelectorAll("#revert, form[action='/revert']").length`)); n != 0 {
		t.Errorf("a non-approver's page has %d Revert buttons", n)
	}
	status := browse(t, bob, "a forged POST", chromedp.Evaluate[int](`(async () => {
		const body = new URLSearchParams({csrf: document.querySelector('input[name="csrf"]').value,
			k: document.getElementById("live").dataset.key, turn: "any"});
		return (await fetch("/revert", {method: "POST", body, redirect: "manual"})).status;
	})()`, chromedp.EvalAwaitPromise))
	if status != 403 {
		t.Errorf("a non-approver's forged POST got %d, want 403", status)
	}

	// Alice reverts from the page, by keyboard: the engine reverts, the
	// thread says so, and the page shows how it ended.
	browse(t, alice, "Alice opens the conversation", chromedp.Steps(chromedp.Navigate(aliceLink), chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.ID("revert"))))
	turn := browse(t, alice, "the turn the button names", chromedp.Evaluate[string](`document.querySelector('input[name="turn"]').value`))
	browse(t, alice, "reverting", chromedp.Steps(chromedp.Focus(chromedp.ID("revert")), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.ID("notice"))))
	if notice := browse(t, alice, "the notice", chromedp.Text(chromedp.ID("notice"))); notice != "Reverted: new.txt." {
		t.Errorf("the page after the revert says %q, want Reverted: new.txt.", notice)
	}
	f.WaitPost(t, "the revert told in the thread", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "reverted the last turn: `new.txt`")
	})
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("new.txt after the revert from the page: %v, want it gone", err)
	}
	if why := browse(t, alice, "the refusal now", chromedp.Text(chromedp.ID("revert-refusal"))); !strings.Contains(why, "already reverted") {
		t.Errorf("the page after the revert says %q, want a second revert refused", why)
	}

	// Bob's open page loads itself again: the revert is on it.
	browse(t, bob, "Bob's page after the revert", chromedp.WaitVisible(chromedp.ID("revert-refusal")))
	if why := browse(t, bob, "its refusal", chromedp.Text(chromedp.ID("revert-refusal"))); !strings.Contains(why, "already reverted") {
		t.Errorf("Bob's page after the revert says %q", why)
	}

	// The same press again (a page shown before the revert): the engine
	// refuses it and the page shows its reason, as the thread does.
	browse(t, alice, "the page again", chromedp.Steps(chromedp.Navigate(page), chromedp.WaitVisible(chromedp.ID("revert-refusal"))))
	browse(t, alice, "pressing again", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const f = document.createElement("form");
		f.method = "post"; f.action = "/revert";
		for (const [k, v] of Object.entries({csrf: document.querySelector('input[name="csrf"]').value,
			k: document.getElementById("live").dataset.key, turn: %q})) {
			const i = document.createElement("input"); i.type = "hidden"; i.name = k; i.value = v; f.appendChild(i);
		}
		document.body.appendChild(f); f.requestSubmit();
	})()`, turn)))
	browse(t, alice, "the page after", chromedp.WaitVisible(chromedp.ID("notice")))
	if notice := browse(t, alice, "the refusal", chromedp.Text(chromedp.ID("notice"))); !strings.Contains(notice, "cannot be reverted twice") {
		t.Errorf("the second press's page says %q, want the refusal of a second revert", notice)
	}
	f.WaitPost(t, "the refusal in the thread", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "cannot be reverted twice")
	})
}
