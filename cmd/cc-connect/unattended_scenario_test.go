package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testbin"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/webhook"
	"github.com/cc-connect/cc-connect/workspace"
)

// These scenarios run the binary built with the cctestclock tag (its
// schedules, webhooks and spending windows on a clock the test sets
// through a file, clock_testhook.go), the real claude CLI and the fake
// Messages API: work that starts without a person, end to end.

// buildClockBinary compiles cc-connect with the test clock, once per test
// process.
func buildClockBinary(tb testing.TB) string {
	tb.Helper()
	return testbin.Build(tb, "./cmd/cc-connect", "cc-connect-clock", "-tags", "cctestclock", "-ldflags", "-X main.version="+testVersion)
}

// testClock is the file the binary's clock reads.
type testClock struct{ path string }

func newTestClock(t *testing.T, at time.Time) *testClock {
	t.Helper()
	c := &testClock{path: filepath.Join(t.TempDir(), "clock")}
	c.set(t, at)
	return c
}

// set moves the binary's clock to at: written aside and renamed, so that
// the binary never reads half a time.
func (c *testClock) set(t *testing.T, at time.Time) {
	t.Helper()
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(at.UTC().Format(time.RFC3339)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		t.Fatal(err)
	}
}

// setAndWait moves the clock and waits until the binary logged it.
func (c *testClock) setAndWait(t *testing.T, p *process, at time.Time) {
	t.Helper()
	c.set(t, at)
	p.waitErr(t, `msg="Test clock set" at=`+at.UTC().Format(time.RFC3339))
}

// unattendedSetup writes a config running the terminal chat against the
// real claude (as writeRealConfig does), with bindingTOML added to the
// binding and extraTOML after it, and returns the config's folder and
// path.
func unattendedSetup(t *testing.T, claude, bindingTOML, extraTOML string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, writeConfig(t, dir, fmt.Sprintf(`
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
[[platforms]]
name = "tty"
type = "local"
[[bindings]]
platform = "tty"
workspace = "ws"
allow_users = ["tester"]
%s
%s`, claude, home, filepath.Join(home, ".claude"), bindingTOML, extraTOML))
}

func startClockBinary(t *testing.T, clock *testClock, api *fakeapi.Server, env []string, args ...string) *process {
	t.Helper()
	env = append(env, "CC_CONNECT_TEST_API_URL="+api.URL(), "CC_CONNECT_TEST_CLOCK="+clock.path)
	return startBinaryPath(t, buildClockBinary(t), env, args...)
}

// linesWith counts stdout lines seen so far (in lines) containing s.
func linesWith(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// A daily schedule fires when the test's clock reaches its instant: the
// header, then the real claude's answer to its prompt, once; a restart
// later that day does not run it again; a run missed while cc-connect was
// down runs once at start-up; the next instant runs on the clock.
func TestRealCLIScheduleFiresOnTheTestClock(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	_, path := unattendedSetup(t, claude, "", `
[[schedules]]
name = "noon"
platform = "tty"
channel = "local"
cron = "0 12 * * *"
timezone = "UTC"
prompt = "Say the noon word."
`)
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	clock := newTestClock(t, day.Add(11*time.Hour+59*time.Minute))
	p := startClockBinary(t, clock, api, nil, "run", "--config", path)
	p.waitErr(t, `msg="Schedule added" component=schedule schedule=noon`)
	clock.setAndWait(t, p, day.Add(12*time.Hour+30*time.Second))
	lines := p.waitOut(t, "Scheduled: noon")
	lines = append(lines, p.waitOut(t, "Say the noon word.")...)
	if linesWith(lines, "Scheduled: noon") != 1 {
		t.Errorf("header posted %d times: %q", linesWith(lines, "Scheduled: noon"), lines)
	}
	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	requests := len(api.Requests())

	// Later the same day: the noon run is settled, nothing runs at start.
	// A message typed now is answered; the run is not repeated before it.
	clock.set(t, day.Add(12*time.Hour+30*time.Minute))
	p = startClockBinary(t, clock, api, nil, "run", "--config", path)
	p.waitErr(t, "Running schedules")
	p.write(t, "anything due?\n")
	lines = p.waitOut(t, "echo: anything due?")
	if n := linesWith(lines, "Scheduled: noon"); n != 0 {
		t.Errorf("the noon run ran again after a restart: %q", lines)
	}
	// !schedules lists it with its next run on the test's clock; pausing
	// is for the binding's admins, which the terminal's user is not.
	p.write(t, "!schedules\n")
	lines = p.waitOut(t, "• noon: ")
	if l := lines[len(lines)-1]; !strings.Contains(l, "next run 2026-03-11 12:00 UTC (in 23h 30m)") {
		t.Errorf("!schedules line %q", l)
	}
	p.write(t, "!schedules pause noon\n")
	p.waitOut(t, "Only this binding's admins can pause a schedule.")
	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	// Down over the next day's noon, back 20 minutes later (catch_up is
	// an hour): the missed run runs once at start-up.
	clock.set(t, day.Add(36*time.Hour+20*time.Minute))
	p = startClockBinary(t, clock, api, nil, "run", "--config", path)
	lines = p.waitOut(t, "Scheduled: noon")
	lines = append(lines, p.waitOut(t, "Say the noon word.")...)
	// Once it is done (a run still working makes the next one skip).
	p.waitErr(t, `msg="Run finished" platform=tty channel=local thread="" run_id=schedule:noon@2026-03-11T12:00Z`)
	// And the day after, on the clock again.
	clock.setAndWait(t, p, day.Add(60*time.Hour+10*time.Second))
	lines = append(lines, p.waitOut(t, "Scheduled: noon")...)
	lines = append(lines, p.waitOut(t, "Say the noon word.")...)
	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if n := linesWith(lines, "Scheduled: noon"); n != 2 {
		t.Errorf("%d headers after the outage, want 2 (the missed run, the next day's): %q", n, lines)
	}
	if len(api.Requests()) <= requests {
		t.Error("the later runs made no API request")
	}
}

// webhookAddr reads the webhook listener's address from the log.
func webhookAddr(t *testing.T, p *process) string {
	t.Helper()
	p.waitErr(t, `msg="Serving webhooks"`)
	m := regexp.MustCompile(`msg="Serving webhooks" addr=(\S+)`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no webhook address in the log:\n%s", p.stderr.String())
	}
	return m[1]
}

// A signed GitHub workflow_run delivery is answered 202 only once the run
// is in the journal, then runs once with its header; unsigned or wrongly
// signed ones are refused, a replay and a run the filter leaves out run
// nothing.
func TestRealCLISignedWorkflowRunWebhook(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	const secret = "hook-secret-0123456789"
	dir, path := unattendedSetup(t, claude, "", `
[webhooks]
addr = "127.0.0.1:0"
[[webhooks.hooks]]
name = "ci-failed"
secret = "${HOOK_SECRET}"
platform = "tty"
channel = "local"
filter = '{{and (eq .action "completed") (eq .workflow_run.conclusion "failure")}}'
prompt = "CI failed on main: look at it."
template = "Workflow {{.workflow.name}} run #{{.workflow_run.run_number}} on {{.workflow_run.head_branch}}: {{.workflow_run.conclusion}}"
`)
	clock := newTestClock(t, time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC))
	p := startClockBinary(t, clock, api, []string{"HOOK_SECRET=" + secret}, "run", "--config", path)
	url := "http://" + webhookAddr(t, p) + "/hooks/ci-failed"
	body := `{"action":"completed","workflow":{"name":"CI"},"workflow_run":{"run_number":812,"head_branch":"main",` +
		`"conclusion":"failure","html_url":"https://github.com/o/r/actions/runs/1"}}`

	if code, _ := signedPost(t, url, "", "workflow_run", body); code != http.StatusUnauthorized {
		t.Errorf("unsigned: %d, want 401", code)
	}
	if code, _ := signedPost(t, url, "not-the-secret-at-all", "workflow_run", body); code != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d, want 401", code)
	}
	code, ans := signedPost(t, url, secret, "workflow_run", body)
	if code != http.StatusAccepted || ans["status"] != "accepted" {
		t.Fatalf("signed delivery: %d %v, want 202 accepted", code, ans)
	}
	// The journal holds the run now: it was written before the answer.
	r := &chatRun{state: filepath.Join(dir, "state")}
	id := webhook.RunID("ci-failed", []byte(body))
	if in, err := r.journaled(id); err != nil || !in {
		t.Fatalf("run %s not in the journal when 202 arrived (%v)", id, err)
	}
	p.waitOut(t, "Webhook: ci-failed")
	p.waitOut(t, "echo: ")
	if last := lastRequest(t, api); !last.Contains("CI failed on main: look at it.") || !last.Contains("Workflow CI run #812 on main: failure") {
		t.Error("claude was not given the hook's prompt and the rendered payload")
	}
	if code, ans := signedPost(t, url, secret, "workflow_run", body); code != http.StatusOK || ans["status"] != "duplicate" {
		t.Errorf("replay: %d %v, want 200 duplicate", code, ans)
	}
	green := strings.Replace(body, `"failure"`, `"success"`, 1)
	if code, ans := signedPost(t, url, secret, "workflow_run", green); code != http.StatusAccepted || ans["status"] != "ignored" {
		t.Errorf("a green run: %d %v, want 202 ignored", code, ans)
	}
	p.write(t, "after the hook\n")
	lines := p.waitOut(t, "echo: after the hook")
	if n := linesWith(lines, "Webhook: ci-failed"); n != 0 {
		t.Errorf("the hook ran again: %q", lines)
	}
	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if strings.Contains(p.stderr.String(), secret) {
		t.Error("the webhook secret reached the log")
	}
}

// A user cap reached mid-day refuses the next turn with the cap, what was
// spent and when it resets, on the test's clock; after midnight turns run
// again. The real CLI reports the costs.
func TestRealCLISpendingCapReachedMidDay(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	// Enough tokens that one turn costs more than the $0.50 cap.
	api := fakeapi.Start(t, fakeapi.WithUsage(fakeapi.Usage{InputTokens: 400_000, OutputTokens: 5}))
	_, path := unattendedSetup(t, claude, "cap_user_daily_usd = 0.5", `
[spend]
timezone = "UTC"
`)
	noon := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	clock := newTestClock(t, noon)
	p := startClockBinary(t, clock, api, nil, "run", "--config", path)
	p.write(t, "first turn\n")
	p.waitOut(t, "echo: first turn")
	requests := len(api.Requests())
	p.write(t, "second turn\n")
	lines := p.waitOut(t, "spending cap")
	refusal := lines[len(lines)-1]
	if !strings.Contains(refusal, "You have reached your daily spending cap of $0.50 ($") ||
		!strings.Contains(refusal, "The cap resets at 2026-03-11 00:00 UTC (in 12h 0m)") {
		t.Errorf("refusal %q", refusal)
	}
	p.write(t, "!status\n")
	lines = p.waitOut(t, "Spend: ")
	if !regexp.MustCompile(`you \$\d+\.\d\d of \$0\.50 today`).MatchString(lines[len(lines)-1]) {
		t.Errorf("!status spend line %q", lines[len(lines)-1])
	}
	if got := len(api.Requests()); got != requests {
		t.Errorf("the refused turn reached the API (%d requests, %d before)", got, requests)
	}
	clock.setAndWait(t, p, noon.Add(12*time.Hour+time.Minute))
	p.write(t, "after midnight\n")
	p.waitOut(t, "echo: after midnight")
	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// gitWorkspace makes ws a git repository with app.go committed on main.
func gitWorkspace(t *testing.T, ws string) {
	t.Helper()
	testenv.NeedGit(t)
	gitIn(t, ws, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(ws, "app.go"), []byte("package app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, ws, "add", "app.go")
	gitIn(t, ws, "commit", "-q", "-m", "first")
}

// Two Slack threads of a worktree binding have the real claude write the
// same file at once: each edit lands in its own worktree on its own
// branch, the workspace's checkout is untouched, and !status names the
// branch.
func TestRealCLITwoThreadsEditOneFileInTwoWorktrees(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	f := fakeslack.New(t)
	f.SetWaitLimit(testenv.HangLimit(t, 30*time.Second)) // the real claude takes seconds per turn on a loaded machine
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
permission_mode = "acceptEdits"
[agent.env]
HOME = %q
CLAUDE_CONFIG_DIR = %q
ANTHROPIC_BASE_URL = %q
ANTHROPIC_API_KEY = "sk-cc-connect-test-key"
DISABLE_TELEMETRY = "1"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
DISABLE_AUTOUPDATER = "1"
[[platforms]]
name = "chat"
type = "slack"
bot_token = %q
app_token = %q
api_url = %q
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["U1", "U2"]
worktree = true
`, claude, home, filepath.Join(home, ".claude"), api.URL(), fakeslack.BotToken, fakeslack.AppToken, f.APIURL()))
	ws := workspace.Normalize(filepath.Join(dir, "ws"), nil)
	gitWorkspace(t, ws)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	// The tokens are in the file, so that `cc-connect worktrees` below
	// reads the same config without this process's environment.
	p := startBinaryEnv(t, []string{"TMPDIR=" + tmp}, "run", "--config", path)
	f.WaitConn(t, 1)

	threads := []struct{ ts, user, text string }{
		{"1700000101.000100", "U1", "thread one was here"},
		{"1700000102.000100", "U2", "thread two was here"},
	}
	for _, th := range threads {
		f.Deliver(t, fakeslack.MsgEvent("C1", th.ts, th.user, "<@UBOT> [[WRITE:app.go:"+th.text+"]]", nil))
	}
	for _, th := range threads {
		f.WaitPost(t, "the reply in "+th.ts, func(m fakeslack.Message) bool {
			return m.ThreadTS == th.ts && strings.Contains(m.Text, "tool said")
		})
	}
	if b, err := os.ReadFile(filepath.Join(ws, "app.go")); err != nil || string(b) != "package app\n" {
		t.Errorf("the workspace's own checkout changed: %q %v", b, err)
	}
	dirs, err := filepath.Glob(filepath.Join(ws, ".cc-connect", "worktrees", "*", "app.go"))
	if err != nil || len(dirs) != 2 {
		t.Fatalf("worktrees with app.go: %q %v, want 2", dirs, err)
	}
	got := map[string]bool{}
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		got[strings.TrimSpace(string(b))] = true
	}
	for _, th := range threads {
		if !got[th.text] {
			t.Errorf("no worktree holds %q: %v", th.text, got)
		}
	}

	f.Deliver(t, fakeslack.MsgEvent("C1", "1700000101.000200", "U1", "!status", map[string]any{"thread_ts": threads[0].ts}))
	st := f.WaitPost(t, "the status", func(m fakeslack.Message) bool {
		return m.ThreadTS == threads[0].ts && strings.Contains(m.Text, "Worktree: ")
	})
	if !regexp.MustCompile(`Worktree: branch cc-connect/\S+ of main, dirty \(1 uncommitted\)`).MatchString(st.Text) {
		t.Errorf("!status:\n%s", st.Text)
	}
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
	code, out, errOut := runCLI(t, "--config", path, "worktrees")
	if code != exitOK || strings.Count(out, "in use") != 2 {
		t.Errorf("cc-connect worktrees: %d\n%s%s", code, out, errOut)
	}
}

// On Slack a scheduled run posts its header in the channel and replies in
// the thread under it; a person answering in that thread, without a
// mention, continues the same conversation.
func TestScheduledRunOnSlackThreadsUnderItsHeader(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	dir := t.TempDir()
	record := filepath.Join(dir, "record.jsonl")
	path := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q, FAKECLAUDE_RECORD = %q }
[[platforms]]
name = "chat"
type = "slack"
bot_token = %q
app_token = %q
api_url = %q
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["U1"]
[[schedules]]
name = "standup"
platform = "chat"
channel = "C1"
cron = "0 9 * * 1-5"
timezone = "UTC"
prompt = "Summarize yesterday's commits."
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"), record, fakeslack.BotToken, fakeslack.AppToken, f.APIURL()))
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	monday := time.Date(2026, 3, 9, 8, 59, 0, 0, time.UTC)
	clock := newTestClock(t, monday)
	p := startBinaryPath(t, buildClockBinary(t), []string{"TMPDIR=" + tmp, "CC_CONNECT_TEST_CLOCK=" + clock.path}, "run", "--config", path)
	f.WaitConn(t, 1)
	p.waitErr(t, `msg="Schedule added" component=schedule schedule=standup`)
	clock.setAndWait(t, p, monday.Add(90*time.Second))

	header := f.WaitPost(t, "the header in the channel", func(m fakeslack.Message) bool {
		return m.Channel == "C1" && m.Text == "Scheduled: standup"
	})
	if header.ThreadTS != "" {
		t.Errorf("header posted in thread %q, want the channel", header.ThreadTS)
	}
	f.WaitPost(t, "the reply under the header", func(m fakeslack.Message) bool {
		return m.ThreadTS == header.TS && strings.Contains(m.Text, "Summarize yesterday's commits.")
	})
	f.Deliver(t, fakeslack.MsgEvent("C1", "1773046900.000100", "U1", "and the open pull requests?",
		map[string]any{"thread_ts": header.TS, "parent_user_id": "UBOT"}))
	f.WaitPost(t, "the answer in the thread", func(m fakeslack.Message) bool {
		return m.ThreadTS == header.TS && strings.Contains(m.Text, "and the open pull requests?")
	})
	recs := fakeclaude.ReadRecord(t, record)
	sessions := map[string]bool{}
	for _, r := range recs {
		sessions[r.SessionID] = true
	}
	if len(recs) != 2 || len(sessions) != 1 {
		t.Errorf("the run and the answer in its thread went to %d Claude sessions, want 2 lines in 1: %+v", len(sessions), recs)
	}
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
