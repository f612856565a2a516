package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestConsoleClusterPage: host a (the binary, with the console) and host
// b (a node in this process, serving nothing) on one in-process JetStream
// server; Alice's binding is b's, with a standing by, so a holds it. Alice,
// signed in through the link a's bot sent her, reads on the cluster page
// both hosts with their version, b drained once a drain of b is asked
// for, the lease of her binding held by a, and the conversation she
// started served by a, and on the spend page what her turn cost today;
// the binding that does not allow her is not shown.
// Plain HTTP: the page has no script the browser would run.
func TestConsoleClusterPage(t *testing.T) {
	t.Parallel()
	url := clustertest.Single(t).ClientURL()
	f := fakeslack.New(t)
	dir := t.TempDir()
	bindings := `
[[bindings]]
platform = "chat"
channel = "C1"
workspace = "ws"
allow_users = ["U0ALICE"]
host = "b"
standby = ["a"]
[[bindings]]
platform = "chat"
channel = "C2"
workspace = "ws2"
allow_users = ["U0BOB"]
host = "a"
`
	agent := fmt.Sprintf("[agent]\ncommand = %q\nenv = { CLAUDE_CONFIG_DIR = %q }\n", fakeclaude.Build(t), filepath.Join(dir, "claude-config"))
	a := newClusterMemberWith(t, filepath.Join(dir, "a"), "a", []string{url}, f, agent, 1,
		bindings+"[console]\nenabled = true\nlisten = \"127.0.0.1:0\"\n")
	mkdirs(t, filepath.Join(dir, "a", "ws2"), filepath.Join(dir, "b", "ws2"))
	a.start(t)
	f.WaitConn(t, 1)

	// b runs in this process, from a config of its own.
	bPath := writeConfig(t, filepath.Join(dir, "b"), fmt.Sprintf(`[state]
dir = "state"
[cluster]
host = "b"
members = ["a", "b", "c"]
urls = [%q]
lease_ttl = "3s"
replicas = 1
[[platforms]]
name = "chat"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
`, url)+bindings)
	cfgB, err := config.Load(bPath)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := clusterSettings(cfgB)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := cluster.Start(ctx, sb, cluster.Options{Version: "v9.9.9-b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)

	// Alice asks in C1 and gets an answer from a, then her link.
	const ts = "1700000400.000100"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U0ALICE", "<@UBOT> hello cluster", nil))
	f.WaitPost(t, "the answer", func(m fakeslack.Message) bool { return m.ThreadTS == ts && strings.Contains(m.Text, "echo:") })
	f.DeliverMention(t, fakeslack.MsgEvent("C1", "1700000401.000100", "U0ALICE", "<@UBOT> !console", nil))
	dm := f.WaitPost(t, "the sign-in link by direct message", func(m fakeslack.Message) bool {
		return m.Channel == fakeslack.DMChannel("U0ALICE") && consoleLinkRE.MatchString(m.Text)
	})
	link := consoleLinkRE.FindString(dm.Text)
	base := link[:strings.Index(link, "/signin")]
	cookie := consoleSignIn(t, link)

	if _, err := b.RequestDrain(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	// The served record and the drain are read from the bucket, which
	// tells nobody when they are written: read the page until both show.
	var page string
	for deadline := time.Now().Add(30 * time.Second); ; {
		page = consoleGet(t, base+"/cluster", cookie)
		if strings.Contains(page, ts) && strings.Contains(page, "draining") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster page never showed b draining and the conversation:\n%s", page)
		}
		time.Sleep(50 * time.Millisecond) // polling the bucket, as status does
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<tr data-host="a">\s*<td>a</td>\s*<td class="host-state">up, heartbeat`),
		regexp.MustCompile(`<tr data-host="b">\s*<td>b</td>\s*<td class="host-state">up, heartbeat[^<]*</td>\s*<td>v9.9.9-b</td>\s*<td>\d+</td>\s*<td>draining`),
		regexp.MustCompile(`<tr data-host="c">\s*<td>c</td>\s*<td class="host-state">never seen`),
		regexp.MustCompile(`<tr data-binding="chat/C1">\s*<td>chat/C1</td><td>b</td><td>a</td>\s*<td class="holder">a</td>`),
		regexp.MustCompile(`<a href="/c\?k=chat%2fC1%2f` + regexp.QuoteMeta(ts) + `">C1 / ` + regexp.QuoteMeta(ts) + `</a></td>\s*<td>chat/C1</td>\s*<td class="served-by">a</td>`),
	} {
		if !want.MatchString(page) {
			t.Errorf("the cluster page lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "chat/C2") {
		t.Errorf("the cluster page shows a binding that does not allow Alice:\n%s", page)
	}
	// The turn's cost shows under today on the spend page, for her
	// binding only.
	today := time.Now().Format("2006-01-02")
	spend := consoleGet(t, base+"/spend", cookie)
	if !regexp.MustCompile(`<time datetime="`+today+`">`+today+`</time></td><td>chat/C1</td><td>U0ALICE</td><td>\$0\.01</td>`).MatchString(spend) ||
		strings.Contains(spend, "chat/C2") {
		t.Errorf("the spend page lacks today's spend of Alice in chat/C1, or shows chat/C2:\n%s", spend)
	}
	// The conversations page names the host serving each conversation:
	// the holder, a, not the binding's owner, b.
	if index := consoleGet(t, base+"/", cookie); !regexp.MustCompile(`<td>a</td>\s*</tr>`).MatchString(index) {
		t.Errorf("the conversations page does not say a serves the conversation:\n%s", index)
	}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
}

// consoleSignIn redeems a sign-in link and returns the session cookie.
// Go's cookie jar keeps a Secure cookie off plain HTTP (a browser sends
// it to 127.0.0.1), so the test carries it itself.
func consoleSignIn(t *testing.T, link string) *http.Cookie {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "cc_console" {
			return ck
		}
	}
	t.Fatalf("signing in: %d, no session cookie", resp.StatusCode)
	return nil
}

// consoleGet reads a console page as the session of cookie.
func consoleGet(t *testing.T, url string, cookie *http.Cookie) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}
