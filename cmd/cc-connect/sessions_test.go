package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/workspace"
)

const (
	idResumable = "11111111-1111-4111-8111-111111111111"
	idGone      = "22222222-2222-4222-8222-222222222222"
	idOther     = "33333333-3333-4333-8333-333333333333"
)

// sessionsFixture fills the state dir of an opsConfig with records in the
// engine's format and its Claude config dir with transcripts, and returns
// the config path and the workspace.
func sessionsFixture(t *testing.T) (path, ws string) {
	t.Helper()
	path = opsConfig(t, "")
	dir := filepath.Dir(path)
	ws = workspace.Normalize(filepath.Join(dir, "ws"), nil)
	state := filepath.Join(dir, "state", "sessions")
	now := time.Now().UTC()
	records := map[string]map[string]any{
		"a1.json": {"key": "slack/C1/1700.1", "platform": "slack", "channel": "C1", "thread": "1700.1", "workspace": ws,
			"session_id": idResumable, "last_activity": now.Add(-2 * time.Hour), "context_pct": 42, "model": "claude-sonnet"},
		"b2.json": {"key": "tty/local/", "platform": "tty", "channel": "local", "workspace": ws,
			"session_id": idGone, "last_activity": now.Add(-5 * time.Minute), "context_pct": 7},
		"c3.json": {"key": "tg/-100/", "platform": "tg", "channel": "-100", "workspace": ws,
			"last_activity": now.Add(-72 * time.Hour)},
	}
	for name, rec := range records {
		data, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := workspace.WriteFileAtomic(filepath.Join(state, name), data); err != nil {
			t.Fatal(err)
		}
	}
	// A file that does not parse, a temp file of an atomic write and a
	// quarantined file: only the first is shown.
	for name, data := range map[string]string{"d4.json": "{not json", ".e5.json.tmp-1": "{}", "f6.json.corrupt-20260101T000000Z": "x"} {
		if err := os.WriteFile(filepath.Join(state, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	claudeDir := filepath.Join(dir, "claude-config")
	project := agentproc.ProjectDir(claudeDir, ws)
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, tr := range []struct{ id, prompt string }{
		{idOther, "an older session nobody in chat uses"},
		{idResumable, "fix the flaky test in store_test.go"},
	} {
		line := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":` +
			strconv.Quote(tr.prompt) + `},"uuid":"u` + strconv.Itoa(i) + `","cwd":` + strconv.Quote(ws) +
			`,"sessionId":"` + tr.id + `","version":"2.1.328","gitBranch":"main"}` + "\n"
		p := filepath.Join(project, tr.id+".jsonl")
		if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := now.Add(time.Duration(i-3) * time.Hour)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return path, ws
}

func TestSessionsJSON(t *testing.T) {
	t.Parallel()
	path, ws := sessionsFixture(t)
	code, out, errOut := runCLI(t, "sessions", "--config", path, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep sessionsReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	type row struct{ platform, state, id string }
	var got []row
	for _, s := range rep.Sessions {
		got = append(got, row{s.Platform, s.State, s.SessionID})
	}
	want := []row{ // most recent first; the corrupt file has no time, so last
		{"tty", stateNoTranscript, idGone},
		{"slack", stateResumable, idResumable},
		{"tg", stateFresh, ""},
		{"", stateCorruptRecord, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("sessions %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("session %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	slack := rep.Sessions[1]
	if slack.Thread != "1700.1" || slack.ContextPct != 42 || slack.Workspace != ws || slack.Model != "claude-sonnet" ||
		!strings.HasSuffix(slack.Transcript, idResumable+".jsonl") || slack.LastActivity.IsZero() {
		t.Errorf("slack session: %+v", slack)
	}
	if !strings.HasSuffix(rep.Sessions[3].File, "d4.json") || !strings.Contains(rep.Sessions[3].Problem, "does not parse") {
		t.Errorf("corrupt record: %+v", rep.Sessions[3])
	}
	if rep.Instance.Running {
		t.Errorf("instance reported running: %+v", rep.Instance)
	}

	if len(rep.Workspaces) != 1 || rep.Workspaces[0].Workspace != ws {
		t.Fatalf("workspaces: %+v", rep.Workspaces)
	}
	trs := rep.Workspaces[0].Transcripts
	if len(trs) != 2 || trs[0].SessionID != idResumable || trs[1].SessionID != idOther {
		t.Fatalf("transcripts (newest first): %+v", trs)
	}
	if trs[0].FirstPrompt != "fix the flaky test in store_test.go" || trs[0].Conversation != "slack/C1/1700.1" || trs[0].GitBranch != "main" {
		t.Errorf("transcript in use: %+v", trs[0])
	}
	if trs[1].Conversation != "" {
		t.Errorf("a transcript no conversation uses names one: %+v", trs[1])
	}
}

func TestSessionsText(t *testing.T) {
	t.Parallel()
	path, ws := sessionsFixture(t)
	code, out, errOut := runCLI(t, "sessions", "--config", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{
		"cc-connect not running",
		"cc-connect sessions (4), most recent first:",
		"PLATFORM  CHANNEL  THREAD  WORKSPACE",
		"corrupt: " + filepath.Join(filepath.Dir(path), "state", "sessions", "d4.json") + ": does not parse",
		"transcript missing: Claude Code no longer has that session",
		ws + " (2)",
		`"fix the flaky test in store_test.go"  ← slack/C1/1700.1`,
		`"an older session nobody in chat uses"`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	// Table rows, whatever the column widths.
	for _, row := range [][]string{
		{"slack", "C1", "1700.1", ws, "resumable", idResumable, `\S+ \S+ \(2h ago\)`, "42%"},
		{"tty", "local", "-", ws, "transcript missing", idGone, `\S+ \S+ \(5m ago\)`, "7%"},
		{"tg", "-100", "-", ws, "fresh", "-", `\S+ \S+ \(3d ago\)`, "0%"},
		{"-", "-", "-", `\S+/d4\.json`, "corrupt", "-", "-", "-"},
	} {
		for i, cell := range row {
			if !strings.Contains(cell, `\`) {
				row[i] = regexp.QuoteMeta(cell)
			}
		}
		re := regexp.MustCompile(`(?m)^` + strings.Join(row, `\s+`) + `$`)
		if !re.MatchString(out) {
			t.Errorf("no row matches %s:\n%s", re, out)
		}
	}
}

// TestSessionsSeesARunningInstance: the pid in the instance lock file
// counts when that process is alive, without sessions taking the lock.
func TestSessionsSeesARunningInstance(t *testing.T) {
	t.Parallel()
	path, _ := sessionsFixture(t)
	locks := filepath.Join(filepath.Dir(path), "state", "locks")
	if err := os.MkdirAll(locks, 0o700); err != nil {
		t.Fatal(err)
	}
	// The parent of the test process is alive and is not this process.
	pid := os.Getppid()
	if err := os.WriteFile(filepath.Join(locks, "instance.lock"), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, _ := runCLI(t, "sessions", "--config", path)
	if !strings.Contains(out, "cc-connect running (pid "+strconv.Itoa(pid)+")") {
		t.Errorf("a live pid is not reported running:\n%s", out)
	}
}

func TestSessionsWithoutState(t *testing.T) {
	t.Parallel()
	path := opsConfig(t, "")
	code, out, errOut := runCLI(t, "sessions", "--config", path)
	if code != exitOK || !strings.Contains(out, "No cc-connect sessions yet.") || !strings.Contains(out, "(0)") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "sessions", "--config", path, "--bogus")
	if code != exitUsage || !strings.Contains(errOut, "bogus") {
		t.Errorf("unknown flag: exit %d, stderr %q", code, errOut)
	}
}
