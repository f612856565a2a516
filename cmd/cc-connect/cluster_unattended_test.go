package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestClusterSchedulesAndWebhooks: two cc-connect binaries (built with
// the test clock, one clock file for both) on one Telegram bot and one
// NATS server, the same [[schedules]] and [webhooks] in both configs.
// Host a owns the binding of chat 42 and b stands by. The schedule fires
// once, on a; a webhook posted to b runs on a; after kill -9 of a, b takes
// the binding, does not run again the run a made (the stream drops its
// id), and fires the next one.
func TestClusterSchedulesAndWebhooks(t *testing.T) {
	t.Parallel()
	srv := clustertest.Single(t)
	f := faketelegram.New(t)
	claude := fakeclaude.Build(t)
	const secret = unattendedSecret
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	clock := newTestClock(t, day.Add(11*time.Hour+59*time.Minute))
	start := func(name string) *process { return startUnattendedHost(t, srv.ClientURL(), f, claude, clock, name) }
	a := start("a")
	a.waitErr(t, "Serving a cluster binding")
	b := start("b")
	b.waitErr(t, `msg="Schedule added" component=schedule schedule=noon`)
	b.waitErr(t, "Joined the cluster")
	sent := func(s string) int { return sentIn42(f, s) }
	at := func(d time.Duration) {
		clock.set(t, day.Add(d))
		for _, p := range []*process{a, b} {
			select {
			case <-p.exited: // killed: it reads no clock (ProcessState is written by the waiting goroutine)
			default:
				p.waitErr(t, `msg="Test clock set" at=`+day.Add(d).UTC().Format(time.RFC3339))
			}
		}
	}

	// The chat exists for the fake once someone wrote in it.
	f.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": faketelegram.User(7, "alice", false), "text": "hello"})
	f.Wait(t, "the answer to hello", func() bool { return sent("echo: hello") == 1 })

	// The schedule fires on the owner only: on the holder, that is, which
	// is a unless a starved renewal moved the binding to b (see
	// tenureStart); b's tenure is logged before anything it runs.
	at(12*time.Hour + 30*time.Second)
	f.Wait(t, "the noon run's answer", func() bool { return sent("echo: Say the noon word.") == 1 })
	movedBeforeNoon := b.latestTenure() > a.latestTenure()
	fired, idle := a, b
	if movedBeforeNoon {
		t.Log("b held the binding at noon (a starved renewal moved it)")
		fired, idle = b, a
	}
	fired.waitErr(t, `run_id=schedule:noon@2026-03-10T12:00Z`)
	if n := sent("Scheduled: noon"); n != 1 {
		t.Errorf("%d noon headers, want 1", n)
	}
	if !movedBeforeNoon && strings.Contains(idle.stderr.String(), "Scheduled run submitted") {
		t.Error("the standby fired the schedule")
	}

	// A webhook posted to the standby runs on the owner (the holder).
	url := "http://" + webhookAddr(t, b) + "/hooks/ci-failed"
	code, ans := signedPost(t, url, secret, "workflow_run", `{"run": 812}`)
	if code != http.StatusAccepted || ans["status"] != "accepted" {
		t.Fatalf("webhook to the standby: %d %v, want 202 accepted", code, ans)
	}
	f.Wait(t, "the webhook run's answer", func() bool { return sent("run #812") == 1 })
	if n := sent("Webhook: ci-failed"); n != 1 {
		t.Errorf("%d webhook headers, want 1", n)
	}
	const journaled = `msg="Run journaled" platform=chat channel=42 run_id=webhook:ci-failed`
	if b.latestTenure() > a.latestTenure() {
		t.Log("b holds the binding (a starved renewal moved it)")
		b.waitErr(t, journaled)
	} else {
		a.waitErr(t, journaled)
		if strings.Contains(b.stderr.String(), `msg="Run journaled"`) && b.latestTenure() == 0 {
			t.Error("the standby journaled a run without serving the binding")
		}
	}
	// The same delivery again, to the owner this time: the stream has it.
	if code, ans := signedPost(t, "http://"+webhookAddr(t, a)+"/hooks/ci-failed", secret, "workflow_run", `{"run": 812}`); code != http.StatusOK || ans["status"] != "duplicate" {
		t.Errorf("the delivery again, to the owner: %d %v, want 200 duplicate", code, ans)
	}
	waitErrEither(t, `msg="Run finished" platform=chat channel=42 thread="" run_id=webhook:ci-failed`, a, b)

	// kill -9 of the owner: b takes the binding. Its own ledger never saw
	// today's noon run, so it fires it, and the stream drops it: a ran it.
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	b.waitErr(t, "Serving a cluster binding")
	b.waitErr(t, `msg="Scheduled run submitted" component=schedule schedule=noon platform=chat channel=42 run_id=schedule:noon@2026-03-10T12:00Z`)
	if !movedBeforeNoon && !strings.Contains(b.stderr.String(), "run_id=schedule:noon@2026-03-10T12:00Z scheduled_at=2026-03-10T12:00:00.000Z duplicate=true") {
		t.Errorf("the standby's takeover did not find today's run in the stream:\n%s", grepLines(b.stderr.String(), "Scheduled run"))
	}
	// The next day's run fires on b.
	at(36*time.Hour + 30*time.Second)
	f.Wait(t, "the next noon run's answer", func() bool { return sent("echo: Say the noon word.") == 2 })
	if n := sent("Scheduled: noon"); n != 2 {
		t.Errorf("%d noon headers after two days, want 2", n)
	}
}

// TestClusterPauseHoldsAcrossFailover: an admin pauses the schedule in
// chat on the owner, a; after kill -9 of a, b takes the binding and does
// not fire the run that came due while it was paused, though it is within
// catch_up and b's own ledger knows no pause (the pause is in the
// cluster's bucket); resumed in chat on b, it fires the next day, on b.
func TestClusterPauseHoldsAcrossFailover(t *testing.T) {
	t.Parallel()
	srv := clustertest.Single(t)
	f := faketelegram.New(t)
	claude := fakeclaude.Build(t)
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	clock := newTestClock(t, day.Add(11*time.Hour+59*time.Minute))
	a := startUnattendedHost(t, srv.ClientURL(), f, claude, clock, "a")
	a.waitErr(t, "Serving a cluster binding")
	b := startUnattendedHost(t, srv.ClientURL(), f, claude, clock, "b")
	b.waitErr(t, `msg="Schedule added" component=schedule schedule=noon`)
	b.waitErr(t, "Joined the cluster")
	sent := func(s string) int { return sentIn42(f, s) }
	say := func(text string) {
		f.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": faketelegram.User(7, "alice", false), "text": text})
	}

	say("!schedules pause noon")
	f.Wait(t, "the pause's answer", func() bool { return sent("Paused noon") == 1 })
	// On a, the owner; or on b, if a starved renewal moved the binding
	// there (see tenureStart): the holder runs the chat's commands and
	// its schedules.
	waitErrEither(t, `msg="Schedule paused" component=schedule schedule=noon user_id=7`, a, b)
	clock.set(t, day.Add(12*time.Hour+30*time.Second))
	waitErrEither(t, `msg="Not running a paused schedule" component=schedule schedule=noon scheduled_at=2026-03-10T12:00:00.000Z`, a, b)

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	b.waitErr(t, "Serving a cluster binding")
	b.waitErr(t, `msg="Not running a paused schedule" component=schedule schedule=noon scheduled_at=2026-03-10T12:00:00.000Z`)
	say("!schedules")
	f.Wait(t, "the listing on b", func() bool { return sent("paused by 7") == 1 })
	say("!schedules resume noon")
	f.Wait(t, "the resume's answer", func() bool { return sent("Resumed noon; next run 2026-03-11 12:00 UTC") == 1 })

	clock.set(t, day.Add(36*time.Hour+30*time.Second))
	f.Wait(t, "the next day's run, on b", func() bool { return sent("echo: Say the noon word.") == 1 })
	b.waitErr(t, `run_id=schedule:noon@2026-03-11T12:00Z`)
	if strings.Contains(a.stderr.String()+b.stderr.String(), "run_id=schedule:noon@2026-03-10T12:00Z") {
		t.Errorf("the paused day's run was submitted:\n%s", grepLines(a.stderr.String()+b.stderr.String(), "Scheduled run"))
	}
}

// grepLines returns the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// sentIn42 counts the bot's posts in chat 42 containing s.
func sentIn42(f *faketelegram.Server, s string) int {
	n := 0
	for _, m := range f.Sent() {
		if m.ChatID == 42 && strings.Contains(m.Text, s) {
			n++
		}
	}
	return n
}

// unattendedSecret is the webhook secret of startUnattendedHost's hosts.
const unattendedSecret = "hook-secret-0123456789"

// startUnattendedHost starts host name of a two-host cluster ("a" owns
// chat 42's binding, "b" stands by; user 7 is allowed and an admin) on
// NATS at natsURL and the fake Telegram f, with the schedule "noon" at
// 12:00 UTC in chat 42 and the webhook "ci-failed", on the test clock.
func startUnattendedHost(t *testing.T, natsURL string, f *faketelegram.Server, claude string, clock *testClock, name string) *process {
	t.Helper()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q, FAKECLAUDE_RECORD = %q }
[cluster]
host = %q
members = ["a", "b"]
urls = [%q]
lease_ttl = "3s"
[[platforms]]
name = "chat"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["7"]
admins = ["7"]
host = "a"
standby = ["b"]
progress = "quiet"
sender_header = false
[[schedules]]
name = "noon"
platform = "chat"
channel = "42"
cron = "0 12 * * *"
timezone = "UTC"
prompt = "Say the noon word."
[webhooks]
addr = "127.0.0.1:0"
[[webhooks.hooks]]
name = "ci-failed"
secret = "${HOOK_SECRET}"
platform = "chat"
channel = "42"
prompt = "CI failed on main: look at it."
template = "run #{{.run}}"
`, claude, filepath.Join(dir, "cc"), filepath.Join(dir, "record.jsonl"), name, natsURL, f.URL()))
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	return startBinaryPath(t, buildClockBinary(t), []string{"TMPDIR=" + tmp, "TELEGRAM_BOT_TOKEN=" + faketelegram.Token,
		"HOOK_SECRET=" + unattendedSecret, "CC_CONNECT_TEST_CLOCK=" + clock.path}, "run", "--config", cfg)
}

// waitErrEither waits until the stderr of p or q holds want: the run of a
// binding logs on whichever host holds it.
func waitErrEither(t *testing.T, want string, p, q *process) {
	t.Helper()
	deadline := time.After(testenv.HangLimit(t, 30*time.Second))
	for !strings.Contains(p.stderr.String(), want) && !strings.Contains(q.stderr.String(), want) {
		select {
		case <-p.errLn:
		case <-q.errLn:
		case <-deadline:
			t.Fatalf("no %q on either host's stderr", want)
		}
	}
}
