package worktree

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/agentenv"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/launch"
	"github.com/cc-connect/cc-connect/workspace"
)

// TestRepositoryCannotRunCommands: a repository Claude (or a hostile
// clone) prepared, with a hook, an fsmonitor command, a filter driver and
// an external diff, goes through every git command cc-connect runs on a
// worktree (made, listed, its state read with a change in it, removed by
// force): none of them runs. Each would leave its marker file.
func TestRepositoryCannotRunCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := repo(t)
	marks := t.TempDir()
	mark := func(name string) string { return filepath.Join(marks, name) }
	touch := func(name string) string { return "touch '" + mark(name) + "'" }
	// The filter applies to every file from the next checkout on.
	write(t, filepath.Join(ws, ".gitattributes"), "*.go filter=evil diff=evil\n*.txt filter=proc\n")
	write(t, filepath.Join(ws, "data.txt"), "data\n")
	git(t, ws, "add", ".gitattributes", "data.txt")
	git(t, ws, "commit", "-q", "-m", "attributes")
	plants := []struct{ name, key, value string }{
		{"fsmonitor", "core.fsmonitor", touch("fsmonitor") + "; false"},
		{"smudge", "filter.evil.smudge", touch("smudge") + "; cat"},
		{"clean", "filter.evil.clean", touch("clean") + "; cat"},
		{"process", "filter.proc.process", touch("process")},
		{"textconv", "diff.evil.textconv", touch("textconv") + "; cat"},
		{"external diff", "diff.external", touch("external diff")},
		{"pager", "core.pager", touch("pager") + "; cat"},
	}
	for _, p := range plants {
		git(t, ws, "config", p.key, p.value)
	}
	git(t, ws, "config", "filter.evil.required", "true")
	hooks := []string{"post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc"}
	for _, h := range hooks {
		path := filepath.Join(ws, ".git", "hooks", h)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+touch(h)+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	m := New(ws, launch.Rule{})
	wt, err := m.Create(ctx, "slack/C1/hostile")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt.Path, "app.go"), "package app // changed\n")
	if st, err := m.State(ctx, wt); err != nil || st.Changes != 1 {
		t.Fatalf("State = %+v, %v; want one change", st, err)
	}
	if _, err := m.List(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Remove(ctx, wt, true); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(hooks, "fsmonitor", "smudge", "clean", "process", "textconv", "external diff", "pager") {
		if _, err := os.Stat(mark(name)); err == nil {
			t.Errorf("the repository's %s ran", name)
		}
	}
	// The planted commands do run under git as the repository asks: the
	// test would notice them.
	control := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", ws}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
		_ = cmd.Run() // the process filter speaks no protocol: it fails what it filters
	}
	control("-c", "filter.proc.process=", "worktree", "add", "-q", "-b", "control", filepath.Join(t.TempDir(), "control"))
	control("cat-file", "--filters", "HEAD:data.txt")
	for _, name := range []string{"post-checkout", "smudge", "process"} {
		if _, err := os.Stat(mark(name)); err != nil {
			t.Errorf("control: plain git did not run the %s: the test plants nothing", name)
		}
	}
}

// TestNoteCannotBecomeAnOption: the note beside a worktree lies where the
// agent may write; a base branch in it that git would read as an option
// never reaches git.
func TestNoteCannotBecomeAnOption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := repo(t)
	m := New(ws, launch.Rule{})
	wt, err := m.Create(ctx, "t/note")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "written-by-git")
	for _, base := range []string{"--output=" + out, "-h", "main..HEAD", "main --all", "@{-1}"} {
		data, _ := json.Marshal(note{Conversation: "t/note", Branch: "--output=" + out, Base: base})
		if err := os.WriteFile(notePath(m.dir(), filepath.Base(wt.Path)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		found, err := m.Find(ctx, wt.Path)
		if err != nil {
			t.Fatal(err)
		}
		if found.Base != "" || found.Branch != wt.Branch {
			t.Errorf("note base %q: the worktree reads as %+v", base, found)
		}
		st, err := m.State(ctx, found)
		if err != nil || !st.Merged {
			t.Errorf("note base %q: State = %+v, %v; want merged into the current branch", base, st, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("note base %q reached git as an option", base)
		}
	}
	for _, ok := range []string{"main", "feature/x-1", "release-2.0", strings.Repeat("a", 40)} {
		if !validRef(ok) {
			t.Errorf("validRef(%q) = false", ok)
		}
	}
}

// TestGitGetsNoSecrets: git runs with the agent's environment, where no
// secret is (by the variable it is read from, or by its value), and none
// of cc-connect's GIT_* settings; the hardening's own settings are there.
func TestGitGetsNoSecrets(t *testing.T) {
	ws := repo(t)
	const canary, copied = "ccx-worktree-canary-1f3a", "ccx-worktree-value-9b2c"
	t.Setenv("CCX_WT_TOKEN_SOURCE", canary)
	t.Setenv("CCX_WT_INNOCENT_NAME", copied)
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='"+t.TempDir()+"'")
	secrets := agentenv.NewSecretVars("CCX_WT_TOKEN_SOURCE")
	secrets.AddValues(copied)
	envFile := filepath.Join(t.TempDir(), "env")
	wrapper := filepath.Join(t.TempDir(), "git")
	real := testenv.NeedGit(t)
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nenv >> '"+envFile+"'\nexec '"+real+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := New(ws, launch.Rule{Secrets: secrets, EnvDrop: agentenv.DefaultEnvDrop})
	m.gitBin = wrapper
	if _, err := m.Create(context.Background(), "t/env"); err != nil {
		t.Fatal(err)
	}
	env := read(t, envFile)
	for _, leak := range []string{canary, copied, "CCX_WT_TOKEN_SOURCE", "GIT_DIR=", "GIT_CONFIG_PARAMETERS="} {
		if strings.Contains(env, leak) {
			t.Errorf("git's environment holds %q", leak)
		}
	}
	for _, want := range []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/dev/null"} {
		if !strings.Contains(env, want) {
			t.Errorf("git's environment lacks %q", want)
		}
	}
}

// TestWorktreeAsAgentUser: cc-connect runs as root and the agent as
// nobody, who owns the workspace (git as root would refuse it as "dubious
// ownership"). The worktree is made by git as nobody, belongs to nobody,
// and nobody can enter it, write in it and use git there; its state is
// read and it is removed, all without git ever running as root.
func TestWorktreeAsAgentUser(t *testing.T) {
	t.Parallel()
	testenv.NeedRoot(t, "running git as another user")
	testenv.NeedGit(t)
	ctx := context.Background()
	nobody, err := agentenv.LookupUser("nobody")
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace.Normalize(t.TempDir(), nil)
	// nobody passes through t.TempDir's private parents.
	for _, d := range []string{filepath.Dir(ws), filepath.Dir(filepath.Dir(ws))} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	git(t, ws, "init", "-q", "-b", "main")
	write(t, filepath.Join(ws, "app.go"), "package app\n")
	git(t, ws, "add", "app.go")
	git(t, ws, "commit", "-q", "-m", "first")
	// A .cc-connect left by cc-connect before agent.user was set.
	if err := os.Mkdir(filepath.Join(ws, ".cc-connect"), 0o700); err != nil {
		t.Fatal(err)
	}
	chownTree(t, ws, nobody)
	if err := os.Chown(filepath.Join(ws, ".cc-connect"), 0, 0); err != nil {
		t.Fatal(err)
	}
	plain := exec.Command("git", "-C", ws, "status")
	plain.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := plain.CombinedOutput(); err == nil || !strings.Contains(string(out), "dubious ownership") {
		t.Fatalf("control: git as root in nobody's repository: %v %s; want dubious ownership", err, out)
	}

	rule := launch.Rule{User: nobody}
	m := New(ws, rule)
	wt, err := m.Create(ctx, "slack/C1/agent")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]uint32{wt.Path: nobody.UID, filepath.Dir(wt.Path): nobody.UID, filepath.Join(ws, ".cc-connect"): 0} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != want {
			t.Errorf("%s belongs to uid %d, want %d", path, uid, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(ws, ".cc-connect")); fi.Mode().Perm() != 0o750 || fi.Sys().(*syscall.Stat_t).Gid != nobody.GID {
		t.Errorf(".cc-connect mode %v group %d, want 0750 of group %d", fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Gid, nobody.GID)
	}
	// What claude, as nobody, does in its worktree.
	var out strings.Builder
	err = launch.Run(ctx, rule, launch.Spec{
		Path: "/bin/sh", Args: []string{"-c", "id -u && echo work > new.txt && git status --porcelain"},
		Dir: wt.Path, Env: []string{"GIT_CONFIG_GLOBAL=/dev/null"}, Stdout: &out, Stderr: &out,
	})
	if err != nil || !strings.Contains(out.String(), "?? new.txt") {
		t.Fatalf("nobody in its worktree: %v\n%s", err, out.String())
	}
	st, err := m.State(ctx, wt)
	if err != nil || st.Changes != 1 {
		t.Fatalf("State = %+v, %v; want one change", st, err)
	}
	if _, err := m.Remove(ctx, wt, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
}

// chownTree gives root's whole tree to u.
func chownTree(t *testing.T, root string, u *agentenv.User) {
	t.Helper()
	err := filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(u.UID), int(u.GID))
	})
	if err != nil {
		t.Fatal(err)
	}
}
