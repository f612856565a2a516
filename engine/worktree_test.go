package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/workspace"
)

// gitRepo makes a git repository with one commit on main and returns its
// normalized path.
func gitRepo(t *testing.T) string {
	t.Helper()
	testenv.NeedGit(t)
	dir := workspace.Normalize(t.TempDir(), nil)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "app.go"}, {"commit", "-q", "-m", "first"}} {
		if args[0] == "add" {
			if err := os.WriteFile(filepath.Join(dir, "app.go"), []byte("package app\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// On a worktree binding each conversation's claude starts in a worktree of
// its own, recorded as its workspace; !status names the branch; !new moves
// the conversation to a new worktree and keeps the old one.
func TestEachConversationWorksInItsWorktree(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.Bindings[0].Workspace, o.Bindings[0].Worktree = repo, true
	})
	h.say("alice", "T1", "hello one")
	h.rec.waitSend(t, "echo: hello one")
	h.say("bob", "T2", "hello two")
	h.rec.waitSend(t, "echo: hello two")
	h.waitIdle()
	spawns := h.fa.spawnsSnapshot()
	if len(spawns) != 2 {
		t.Fatalf("%d spawns, want 2", len(spawns))
	}
	under := filepath.Join(repo, ".cc-connect", "worktrees") + string(filepath.Separator)
	d1, d2 := spawns[0].Dir, spawns[1].Dir
	if !strings.HasPrefix(d1, under) || !strings.HasPrefix(d2, under) || d1 == d2 {
		t.Fatalf("claude started in %q and %q, want two worktrees under %s", d1, d2, under)
	}
	for _, d := range []string{d1, d2} {
		if _, err := os.Stat(filepath.Join(d, "app.go")); err != nil {
			t.Errorf("worktree %s has no checkout: %v", d, err)
		}
	}
	// The log names where each process runs, beside the binding's folder.
	var logged []string
	for _, r := range h.logs.Records("Starting agent process") {
		if b, _ := r["branch"].(string); !strings.HasPrefix(b, "cc-connect/") {
			t.Errorf("Starting agent process logged branch %q, want the worktree's", b)
		}
		wt, _ := r["worktree"].(string)
		logged = append(logged, wt)
	}
	if got := strings.Join(logged, " "); len(logged) != 2 || !strings.Contains(got, d1) || !strings.Contains(got, d2) {
		t.Errorf("Starting agent process logged worktrees %q, want %s and %s", logged, d1, d2)
	}
	recs, err := ReadRecords(h.opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	var used []string
	for _, r := range recs {
		used = append(used, r.Workspace)
	}
	if !strings.Contains(strings.Join(used, "\n"), d1) || !strings.Contains(strings.Join(used, "\n"), d2) {
		t.Errorf("records' workspaces %q, want the worktrees", used)
	}

	h.say("alice", "T1", "!status")
	st := h.rec.waitSend(t, "Worktree: ")
	if !strings.Contains(st.Text, "Worktree: branch cc-connect/") || !strings.Contains(st.Text, " of main, clean") {
		t.Errorf("!status:\n%s", st.Text)
	}
	h.say("alice", "T1", "!new")
	h.rec.waitSend(t, "is kept")
	h.say("alice", "T1", "after new")
	h.rec.waitSend(t, "echo: after new")
	h.waitIdle()
	spawns = h.fa.spawnsSnapshot()
	d3 := spawns[len(spawns)-1].Dir
	if d3 == d1 || !strings.HasPrefix(d3, under) {
		t.Errorf("after !new claude started in %q, want a new worktree (the old was %q)", d3, d1)
	}
	if _, err := os.Stat(filepath.Join(d1, "app.go")); err != nil {
		t.Errorf("the old worktree is gone: %v", err)
	}
}

// A turn a kill left is recovered in the conversation's worktree, where
// its Claude session lives, not in the workspace.
func TestRecoveryResumesInTheWorktree(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	kp := newKillPoint(conv.PointStarted, 2)
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		o.Bindings[0].Workspace, o.Bindings[0].Worktree = repo, true
		c.stopAt = kp.hook
	})
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	h.waitIdle()
	dir := h.fa.spawnsSnapshot()[0].Dir
	h.say("alice", "T1", "second")
	kp.wait(t)
	h = h.kill(t, kp)
	h.rec.waitSend(t, "echo: second")
	h.waitIdle()
	spawns := h.fa.spawnsSnapshot()
	if got := spawns[len(spawns)-1]; got.Dir != dir || got.ResumeID == "" {
		t.Errorf("recovery started claude in %q (resume %q), want the worktree %q", got.Dir, got.ResumeID, dir)
	}
}

// A worktree that cannot be made is told in the thread without a host
// path: the workspace is named for what it is (the log keeps the path).
func TestWorktreeFailureNoticeNamesNoHostPath(t *testing.T) {
	t.Parallel()
	notRepo := workspace.Normalize(t.TempDir(), nil)
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.Bindings[0].Workspace, o.Bindings[0].Worktree = notRepo, true
	})
	h.say("alice", "T1", "hello")
	m := h.rec.waitSend(t, "could not be made")
	if strings.Contains(m.Text, notRepo) || strings.Contains(m.Text, os.TempDir()+"/") {
		t.Errorf("the notice names a host path:\n%s", m.Text)
	}
	if !strings.Contains(m.Text, "workspace is not a git repository: <workspace>") {
		t.Errorf("the notice does not say why:\n%s", m.Text)
	}
}
