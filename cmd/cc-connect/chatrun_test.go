package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
)

// This file runs the built cc-connect against a fake chat platform
// (internal/fakeslack, fakediscord, faketelegram) and the fake claude: the
// real adapter, engine and agent driver together, as a user would see them.

// ctxFigure is the context indicator every reply ends with.
var ctxFigure = regexp.MustCompile(`\[ctx: \d+%\]\s*$`)

// chatRun is one cc-connect process serving one platform.
type chatRun struct {
	p      *process
	dir    string // the config's folder
	ws     string // the bound workspace
	state  string // the state dir
	record string // the fake claude's FAKECLAUDE_RECORD file
}

// startChat writes a config with platformTOML (one [[platforms]] entry
// named "chat") bound, for the users in allowUsers (a TOML list's
// items), to the workspace "ws", and runs
// `cc-connect run` with env added (tokens, say). Lease files go to a
// private TMPDIR, so that tests using the same fake token do not meet.
func startChat(t *testing.T, platformTOML, allowUsers string, env ...string) *chatRun {
	t.Helper()
	dir := t.TempDir()
	r := &chatRun{dir: dir, ws: filepath.Join(dir, "ws"), state: filepath.Join(dir, "state"), record: filepath.Join(dir, "record.jsonl")}
	path := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q, FAKECLAUDE_RECORD = %q }
shutdown_grace = "5s"
%s
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = [%s]
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"), r.record, platformTOML, allowUsers))
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	r.p = startBinaryEnv(t, append([]string{"TMPDIR=" + tmp}, env...), "run", "--config", path)
	return r
}

// stop ends cc-connect with SIGTERM and checks that it shut down cleanly.
func (r *chatRun) stop(t *testing.T) {
	t.Helper()
	if err := r.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.p.exitCode(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if s := r.p.stderr.String(); !strings.Contains(s, "Shutdown complete") {
		t.Errorf("stderr lacks the end of the shutdown")
	}
}

// prompts returns the texts the fake claude received, in order.
func (r *chatRun) prompts(t *testing.T) []string {
	t.Helper()
	return fakeclaude.Texts(fakeclaude.ReadRecord(t, r.record))
}

// promptWith returns the first prompt the fake claude received that
// contains want, or fails t.
func (r *chatRun) promptWith(t *testing.T, want string) string {
	t.Helper()
	for _, p := range r.prompts(t) {
		if strings.Contains(p, want) {
			return p
		}
	}
	t.Fatalf("no prompt contains %q; prompts: %q", want, r.prompts(t))
	return ""
}

// attachmentPath finds the workspace path the prompt names for the file
// sent as name, and checks that the stored file holds content.
func (r *chatRun) attachmentPath(t *testing.T, prompt, name, content string) string {
	t.Helper()
	m := regexp.MustCompile(`- (\.cc-connect/attachments/\S+) \(sent as "` + regexp.QuoteMeta(name) + `"`).FindStringSubmatch(prompt)
	if m == nil {
		t.Fatalf("the prompt does not name %s by a path in the workspace:\n%s", name, prompt)
	}
	got, err := os.ReadFile(filepath.Join(r.ws, m[1]))
	if err != nil || string(got) != content {
		t.Fatalf("stored attachment %s = %q, %v; want %q", m[1], got, err, content)
	}
	if !strings.Contains(prompt, content) {
		t.Errorf("the text attachment is not included in the prompt:\n%s", prompt)
	}
	return m[1]
}

// journaled reports whether the message with id (the platform's message
// identity) is in a session's inbox journal right now. It may run on any
// goroutine.
func (r *chatRun) journaled(id string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(r.state, "inbox", "*.jsonl"))
	if err != nil {
		return false, err
	}
	for _, f := range files {
		if filepath.Base(f) == "seen.jsonl" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			var rec struct {
				Op    string `json:"op"`
				Entry struct {
					ID string `json:"id"`
				} `json:"entry"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Op == "add" && rec.Entry.ID == id {
				return true, nil
			}
		}
	}
	return false, nil
}

// isAllow reports whether a button label is the plain "allow once" one.
func isAllow(label string) bool {
	l := strings.ToLower(label)
	return strings.Contains(l, "allow") && !strings.Contains(l, "always")
}
