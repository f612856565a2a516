package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/launch"
	"github.com/cc-connect/cc-connect/workspace"
	"github.com/cc-connect/cc-connect/worktree"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// worktreesFixture makes a config whose binding has worktree = true on a
// git workspace with three conversation worktrees: one clean and retired,
// one dirty and retired, one a session record still uses.
func worktreesFixture(t *testing.T) (path string, clean, dirty, used worktree.Worktree) {
	t.Helper()
	testenv.NeedGit(t)
	dir := t.TempDir()
	path = writeConfig(t, dir, `
[state]
dir = "state"
[[platforms]]
name = "tty"
type = "local"
[[bindings]]
platform = "tty"
workspace = "ws"
allow_users = ["*"]
worktree = true
`)
	ws := workspace.Normalize(filepath.Join(dir, "ws"), nil)
	gitIn(t, ws, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, ws, "add", "a.txt")
	gitIn(t, ws, "commit", "-q", "-m", "first")
	m := worktree.New(ws, launch.Rule{})
	ctx := context.Background()
	var err error
	for _, c := range []struct {
		wt   *worktree.Worktree
		conv string
	}{{&clean, "tty/local/1"}, {&dirty, "tty/local/2"}, {&used, "tty/local/3"}} {
		if *c.wt, err = m.Create(ctx, c.conv); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dirty.Path, "wip.txt"), []byte("unsaved work"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(map[string]any{"key": "tty/local/3", "platform": "tty", "channel": "local", "workspace": used.Path})
	if err := workspace.WriteFileAtomic(filepath.Join(dir, "state", "sessions", "x.json"), rec); err != nil {
		t.Fatal(err)
	}
	return path, clean, dirty, used
}

func TestWorktreesCommand(t *testing.T) {
	t.Parallel()
	path, clean, dirty, used := worktreesFixture(t)

	code, out, errOut := runCLI(t, "--config", path, "worktrees", "--json")
	if code != exitOK {
		t.Fatalf("worktrees --json: %d %s", code, errOut)
	}
	var rows []worktreeRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	byPath := map[string]worktreeRow{}
	for _, r := range rows {
		byPath[r.Path] = r
	}
	if r := byPath[clean.Path]; r.InUse || !r.Removable || r.Conversation != "tty/local/1" || r.Base != "main" {
		t.Errorf("clean row %+v", r)
	}
	if r := byPath[dirty.Path]; r.InUse || r.Removable || r.Changes != 1 {
		t.Errorf("dirty row %+v", r)
	}
	if r := byPath[used.Path]; !r.InUse || !r.Removable {
		t.Errorf("used row %+v", r)
	}

	code, out, _ = runCLI(t, "--config", path, "worktrees")
	if code != exitOK || !strings.Contains(out, "dirty (1 uncommitted), merged") || !strings.Contains(out, "in use") || !strings.Contains(out, "retired") {
		t.Errorf("worktrees: %d\n%s", code, out)
	}

	// A dirty worktree is refused, and so is one a conversation uses.
	code, _, errOut = runCLI(t, "--config", path, "worktrees", "remove", dirty.Branch, used.Branch)
	if code != exitFailure || !strings.Contains(errOut, "refused: 1 uncommitted changes") || !strings.Contains(errOut, "refused: a conversation still uses it") {
		t.Errorf("remove dirty and used: %d\n%s", code, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dirty.Path, "wip.txt")); err != nil || string(b) != "unsaved work" {
		t.Fatalf("the refused removal lost work: %q %v", b, err)
	}

	// prune takes the retired, clean and merged one only.
	code, out, errOut = runCLI(t, "--config", path, "worktrees", "prune")
	if code != exitOK || !strings.Contains(out, "removed "+clean.Path+" and its branch "+clean.Branch) {
		t.Errorf("prune: %d\n%s%s", code, out, errOut)
	}
	for _, wt := range []worktree.Worktree{dirty, used} {
		if _, err := os.Stat(wt.Path); err != nil {
			t.Errorf("prune removed %s: %v", wt.Path, err)
		}
	}
	if _, err := os.Stat(clean.Path); !os.IsNotExist(err) {
		t.Errorf("prune left %s", clean.Path)
	}

	// An admin's --force discards the changes.
	code, out, errOut = runCLI(t, "--config", path, "worktrees", "remove", "--force", filepath.Base(dirty.Path))
	if code != exitOK || !strings.Contains(out, "(1 uncommitted changes discarded)") {
		t.Errorf("remove --force: %d\n%s%s", code, out, errOut)
	}

	for _, args := range [][]string{{"worktrees", "remove"}, {"worktrees", "frobnicate"}, {"worktrees", "list", "extra"}} {
		if code, _, _ := runCLI(t, append([]string{"--config", path}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	if code, _, errOut := runCLI(t, "--config", path, "worktrees", "remove", "no-such"); code != exitFailure || !strings.Contains(errOut, "no worktree of cc-connect") {
		t.Errorf("remove of an unknown worktree: %d %s", code, errOut)
	}
}

// `cc-connect sessions` lists the worktrees no conversation uses any more,
// and not the one a session record still works in.
func TestSessionsListsRetiredWorktrees(t *testing.T) {
	t.Parallel()
	path, clean, dirty, used := worktreesFixture(t)
	code, out, errOut := runCLI(t, "--config", path, "sessions")
	if code != exitOK {
		t.Fatalf("sessions: %d %s", code, errOut)
	}
	_, retired, _ := strings.Cut(out, "Worktrees of retired conversations (2)")
	if retired == "" || !strings.Contains(retired, clean.Branch) || !strings.Contains(retired, dirty.Branch) || strings.Contains(retired, used.Branch) {
		t.Errorf("sessions output lacks the retired worktrees (or lists the used one):\n%s", out)
	}
	if !strings.Contains(retired, "1 uncommitted, merged") {
		t.Errorf("the dirty worktree's state is not shown:\n%s", retired)
	}
	code, out, _ = runCLI(t, "--config", path, "sessions", "--json")
	var rep sessionsReport
	if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil || len(rep.RetiredWorktrees) != 2 {
		t.Errorf("sessions --json: %d %v, %d retired worktrees, want 2", code, err, len(rep.RetiredWorktrees))
	}
}
