package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cc-connect/cc-connect/workspace"
)

// prepareStateDir creates state.dir (0700) when it is missing, and checks
// an existing one without changing it: it must be a folder of the user
// cc-connect runs as, closed to everyone else. A state.dir pointed at a
// shared folder (/tmp, a team's 1777 dir) is refused rather than chmod-ed
// to 0700 under everyone who uses it. The admin may make state.dir a
// symbolic link to the real folder; the folder it names is checked.
func prepareStateDir(dir string) error {
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return fmt.Errorf("state.dir: %s is a link that cannot be followed: %w", dir, err)
		}
		dir = real
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state.dir: checking %s: %w", dir, err)
	}
	if err := workspace.EnsurePrivateDir(dir); err != nil {
		return fmt.Errorf("state.dir: %w", err)
	}
	return nil
}
