package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/launch"
	"github.com/cc-connect/cc-connect/workspace"
)

// git runs git in dir for a test and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// repo makes a git repository with one commit on main and returns its
// normalized path.
func repo(t *testing.T) string {
	t.Helper()
	testenv.NeedGit(t)
	dir := workspace.Normalize(t.TempDir(), nil)
	git(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "app.go"), "package app\n")
	git(t, dir, "add", "app.go")
	git(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTwoThreadsEditTheSameFile: two conversations each get a worktree,
// edit and commit the same file, and neither sees the other's edit nor
// touches the main checkout.
func TestTwoThreadsEditTheSameFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := repo(t)
	m := New(ws, launch.Rule{})
	a, err := m.Create(ctx, "slack/C1/1712345678.000100")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Create(ctx, "slack/C1/1712345678.000200")
	if err != nil {
		t.Fatal(err)
	}
	if a.Path == b.Path || a.Branch == b.Branch {
		t.Fatalf("two conversations share %s / %s", a.Path, a.Branch)
	}
	for _, wt := range []Worktree{a, b} {
		if filepath.Dir(wt.Path) != filepath.Join(ws, ".cc-connect", "worktrees") || wt.Base != "main" {
			t.Errorf("worktree %+v", wt)
		}
	}
	write(t, filepath.Join(a.Path, "app.go"), "package app\n\nfunc A() {}\n")
	write(t, filepath.Join(b.Path, "app.go"), "package app\n\nfunc B() {}\n")
	git(t, a.Path, "commit", "-q", "-am", "A")
	git(t, b.Path, "commit", "-q", "-am", "B")
	if got := read(t, filepath.Join(a.Path, "app.go")); !strings.Contains(got, "func A") || strings.Contains(got, "func B") {
		t.Errorf("worktree A has %q", got)
	}
	if got := read(t, filepath.Join(b.Path, "app.go")); !strings.Contains(got, "func B") || strings.Contains(got, "func A") {
		t.Errorf("worktree B has %q", got)
	}
	if got := read(t, filepath.Join(ws, "app.go")); got != "package app\n" {
		t.Errorf("the main checkout changed: %q", got)
	}
	if st := git(t, ws, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("the main checkout is not clean (.cc-connect must be ignored):\n%s", st)
	}
	if got := git(t, ws, "log", "--format=%s", a.Branch); got != "A\nfirst" {
		t.Errorf("branch A log %q", got)
	}
	list, err := m.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Conversation == "" || list[1].Conversation == "" {
		t.Errorf("List = %+v", list)
	}
	for _, dir := range []string{filepath.Join(ws, ".cc-connect"), filepath.Join(ws, ".cc-connect", "worktrees")} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s mode %v, want 0700", dir, fi.Mode().Perm())
		}
	}
}

func TestCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := New(repo(t), launch.Rule{})
	a, err := m.Create(ctx, "discord/123/456")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(a.Path, "wip.txt"), "work in progress")
	again, err := m.Create(ctx, "discord/123/456")
	if err != nil {
		t.Fatal(err)
	}
	if again != a {
		t.Errorf("second Create = %+v, want %+v", again, a)
	}
	if read(t, filepath.Join(a.Path, "wip.txt")) != "work in progress" {
		t.Error("a second Create lost work")
	}
}

// TestHostileConversationIDs: whatever a platform sends as a thread id,
// the branch is a valid ref, the folder stays in the worktrees folder, and
// distinct ids never share a worktree.
func TestHostileConversationIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := repo(t)
	m := New(ws, launch.Rule{})
	ids := []string{
		"../../../etc/passwd", "..", ".", "", "-rf", "--help", "a b", "a/b", "a-b", "A/B", "refs/heads/main",
		"x.lock", "@{-1}", "a..b", "a~1^2:c?*[d\\", "trailing/", "tab\there", "new\nline", "nul\x00byte",
		"émoji 🚀 ünïcode", strings.Repeat("long", 100), "HEAD", "main",
	}
	seen := map[string]string{}
	for _, id := range ids {
		name := Name(id)
		if prev, dup := seen[name]; dup {
			t.Errorf("%q and %q share the name %s", prev, id, name)
		}
		seen[name] = id
		if len(name) > 60 {
			t.Errorf("Name(%q) is %d bytes long", id, len(name))
		}
		git(t, ws, "check-ref-format", "--branch", BranchPrefix+name)
		wt, err := m.Create(ctx, id)
		if err != nil {
			t.Fatalf("Create(%q): %v", id, err)
		}
		if filepath.Dir(wt.Path) != filepath.Join(ws, ".cc-connect", "worktrees") {
			t.Errorf("Create(%q) made %s, outside the worktrees folder", id, wt.Path)
		}
		if wt.Conversation != id {
			t.Errorf("Create(%q) remembers %q", id, wt.Conversation)
		}
	}
	if got := git(t, ws, "rev-parse", "--abbrev-ref", "HEAD"); got != "main" {
		t.Errorf("the main checkout moved to %s", got)
	}
}

func TestRemoveNeverLosesWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := repo(t)
	m := New(ws, launch.Rule{})

	// Dirty: a modified tracked file, then an untracked file only.
	wt, err := m.Create(ctx, "t/1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt.Path, "app.go"), "package app // edited\n")
	if _, err := m.Remove(ctx, wt, false); !errors.Is(err, ErrDirty) {
		t.Fatalf("Remove of a modified worktree = %v, want ErrDirty", err)
	}
	git(t, wt.Path, "checkout", "--", "app.go")
	write(t, filepath.Join(wt.Path, "notes.md"), "untracked but precious")
	st, err := m.State(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if st.Changes != 1 || !st.Merged || st.String() != "dirty (1 uncommitted), merged" {
		t.Errorf("State = %+v (%s)", st, st)
	}
	if _, err := m.Remove(ctx, wt, false); !errors.Is(err, ErrDirty) {
		t.Fatalf("Remove of a worktree with an untracked file = %v, want ErrDirty", err)
	}
	if read(t, filepath.Join(wt.Path, "notes.md")) != "untracked but precious" {
		t.Fatal("a refused Remove lost the file")
	}

	// Committed but not merged.
	git(t, wt.Path, "add", "notes.md")
	git(t, wt.Path, "commit", "-q", "-m", "notes")
	if _, err := m.Remove(ctx, wt, false); !errors.Is(err, ErrUnmerged) {
		t.Fatalf("Remove of an unmerged worktree = %v, want ErrUnmerged", err)
	}

	// Merged into main: removed, with its branch.
	git(t, ws, "merge", "-q", "--ff-only", wt.Branch)
	rm, err := m.Remove(ctx, wt, false)
	if err != nil {
		t.Fatal(err)
	}
	if rm.BranchKept {
		t.Error("a merged branch was kept")
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree folder is still there: %v", err)
	}
	if out := git(t, ws, "branch", "--list", wt.Branch); out != "" {
		t.Errorf("the merged branch is still there: %q", out)
	}
	if list, _ := m.List(ctx); len(list) != 0 {
		t.Errorf("List after Remove = %+v", list)
	}
}

// TestForceKeepsCommits: an admin's force discards uncommitted changes but
// never a commit: the branch stays, and a new Create continues on it.
func TestForceKeepsCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := repo(t)
	m := New(ws, launch.Rule{})
	wt, err := m.Create(ctx, "t/2")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt.Path, "done.txt"), "committed")
	git(t, wt.Path, "add", "done.txt")
	git(t, wt.Path, "commit", "-q", "-m", "done")
	write(t, filepath.Join(wt.Path, "scratch.txt"), "uncommitted")
	rm, err := m.Remove(ctx, wt, true)
	if err != nil {
		t.Fatal(err)
	}
	if !rm.BranchKept || rm.Discarded != 1 {
		t.Errorf("Removal = %+v, want the branch kept and 1 change discarded", rm)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree folder is still there: %v", err)
	}
	if got := git(t, ws, "log", "--format=%s", "-1", wt.Branch); got != "done" {
		t.Errorf("the branch lost its commit: %q", got)
	}
	again, err := m.Create(ctx, "t/2")
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(again.Path, "done.txt")) != "committed" {
		t.Error("Create did not continue on the kept branch")
	}
}

func TestMissingFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := New(repo(t), launch.Rule{})
	wt, err := m.Create(ctx, "t/3")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wt.Path); err != nil {
		t.Fatal(err)
	}
	list, err := m.List(ctx)
	if err != nil || len(list) != 1 || !list[0].Missing {
		t.Fatalf("List = %+v, %v; want one missing worktree", list, err)
	}
	if _, err := m.Remove(ctx, list[0], false); err != nil {
		t.Fatalf("Remove of a missing, merged worktree: %v", err)
	}
	if list, _ := m.List(ctx); len(list) != 0 {
		t.Errorf("List after Remove = %+v", list)
	}
}

func TestNotARepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := New(workspace.Normalize(t.TempDir(), nil), launch.Rule{}).Create(ctx, "x"); !errors.Is(err, ErrNotRepo) {
		t.Errorf("Create outside a repository = %v, want ErrNotRepo", err)
	}
	ws := repo(t)
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := New(sub, launch.Rule{}).Create(ctx, "x"); !errors.Is(err, ErrNotRepo) {
		t.Errorf("Create in a repository's subfolder = %v, want ErrNotRepo", err)
	}
}

func TestSymlinkedStateDirIsRefused(t *testing.T) {
	t.Parallel()
	ws := repo(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(ws, ".cc-connect")); err != nil {
		t.Fatal(err)
	}
	if _, err := New(ws, launch.Rule{}).Create(context.Background(), "x"); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("Create through a symlinked .cc-connect = %v, want ErrUnsafePath", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("something was written through the link: %v", entries)
	}
}

// TestConcurrentCreates: conversations of one workspace starting at once
// each get their worktree (git would refuse two commands that meet).
func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := repo(t)
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := New(ws, launch.Rule{}).Create(ctx, fmt.Sprintf("slack/C1/%d", i))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	list, err := New(ws, launch.Rule{}).List(ctx)
	if err != nil || len(list) != n {
		t.Errorf("List = %d worktrees, %v; want %d", len(list), err, n)
	}
}

// FuzzName: whatever the id, the name is a safe folder name and a valid
// branch component: lower-case letters, digits and single dashes, never
// leading, and short.
func FuzzName(f *testing.F) {
	for _, seed := range []string{"", "..", "slack/C1/1712345678.000100", "-x", "a--b", "émoji 🚀", strings.Repeat("ab/", 50)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		name := Name(id)
		if name == "" || len(name) > 60 || name[0] == '-' || strings.Contains(name, "--") || strings.HasSuffix(name, "-") {
			t.Fatalf("Name(%q) = %q", id, name)
		}
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				t.Fatalf("Name(%q) = %q has %q", id, name, r)
			}
		}
		if Name(id) != name {
			t.Fatalf("Name(%q) is not stable", id)
		}
	})
}
