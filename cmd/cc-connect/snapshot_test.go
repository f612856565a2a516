package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// snapshotTime is the commit time of every snapshot: two snapshots of one
// tree are then the same commit.
var snapshotTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// needTools fails the test under CI, and skips it elsewhere, when one of
// the programs it runs is missing.
func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is needed: %v", name, err)
			}
			t.Skipf("%s not found: %v", name, err)
		}
	}
}

// snapshotRepo copies the module's working tree (the files git tracks or
// would add, uncommitted changes included: the tree under test) into a new
// git repository at dst, committed with a fixed author, time and message.
// Builds there see a real clone: Go records no commit in a linked git
// worktree (golang/go#58218), which is where development happens here.
func snapshotRepo(t *testing.T, dst string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("listing the tree: %v", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if err := copyPath(filepath.Join(root, rel), filepath.Join(dst, rel)); err != nil {
			t.Fatal(err)
		}
	}
	date := snapshotTime.Format(time.RFC3339)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "--no-verify", "-m", "snapshot"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dst
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_AUTHOR_DATE="+date,
			"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_COMMITTER_DATE="+date)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, out)
		}
	}
}

// copyPath copies one file or symbolic link; a tracked file deleted in the
// tree is left out, as a commit of the tree would.
func copyPath(src, dst string) error {
	info, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, info.Mode().Perm())
}
