package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/workspace"
)

// TestRunRefusesSharedStateDir: state.dir pointing at an existing shared
// folder (a 1777 dir, as /tmp) is refused with a clear error and left as
// it was; it used to be chmod-ed 0700 under everyone using it.
func TestRunRefusesSharedStateDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, dir, fmt.Sprintf("[state]\ndir = %q\n[agent]\ncommand = %q\n", shared, fakeclaude.Build(t))+localChatTOML)
	code, _, stderr := runCLI(t, "run", "--config", path)
	if code != exitFailure {
		t.Errorf("exit code %d, want %d", code, exitFailure)
	}
	for _, want := range []string{"Preparing the state dir failed", "state.dir: " + shared + " is open to other users (mode 0777)", "chmod 700"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	fi, err := os.Stat(shared)
	if err != nil || fi.Mode()&(os.ModePerm|os.ModeSticky) != os.ModeSticky|0o777 {
		t.Errorf("shared folder is now %v (%v), want it left 1777", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(shared); len(entries) != 0 {
		t.Errorf("cc-connect wrote into the shared folder: %v", entries)
	}
}

func TestPrepareStateDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	private := filepath.Join(root, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(root, "loose")
	if err := os.Mkdir(loose, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o750); err != nil {
		t.Fatal(err)
	}
	looseLink := filepath.Join(root, "loose-link")
	if err := os.Symlink(loose, looseLink); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		dir  string
		want error
	}{
		{"missing: created 0700", filepath.Join(root, "new", "state"), nil},
		{"existing private", private, nil},
		{"a link to a private folder", link, nil},
		{"open to the group", loose, workspace.ErrNotPrivate},
		{"a link to a folder open to the group", looseLink, workspace.ErrNotPrivate},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := prepareStateDir(tt.dir)
			if !errors.Is(err, tt.want) {
				t.Fatalf("prepareStateDir = %v, want %v", err, tt.want)
			}
			if err != nil {
				return
			}
			fi, err := os.Stat(tt.dir)
			if err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("state dir is %v (%v), want 0700", fi.Mode(), err)
			}
		})
	}
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o750 {
		t.Errorf("a refused folder was changed to %v", fi.Mode().Perm())
	}
}
