package worktree

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cc-connect/cc-connect/workspace"
)

// ensurePrivateDirs makes <workspace>/.cc-connect (0700, with a .gitignore
// of "*" so that nothing in it is ever committed, as artifact/ does) and
// its worktrees folder, refusing a symbolic link or a non-folder on the
// way: cc-connect must not be led to write outside the workspace.
func ensurePrivateDirs(ws string) error {
	state := filepath.Join(ws, StateDirName)
	for _, dir := range []string{state, filepath.Join(state, DirName)} {
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(dir, workspace.DirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("creating %s: %w", dir, err)
			}
			fi, err = os.Lstat(dir)
		}
		if err != nil {
			return fmt.Errorf("checking %s: %w", dir, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
			return fmt.Errorf("%w: %s is not a plain folder", ErrUnsafePath, dir)
		}
		if err := workspace.EnsurePrivateDir(dir); err != nil {
			return err
		}
	}
	ignore := filepath.Join(state, ".gitignore")
	f, err := os.OpenFile(ignore, os.O_WRONLY|os.O_CREATE|os.O_EXCL, workspace.FilePerm)
	if errors.Is(err, fs.ErrExist) {
		return nil // artifact/ or an earlier Create wrote it
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", ignore, err)
	}
	if _, err := f.WriteString("*\n"); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", ignore, err)
	}
	return f.Close()
}

// note is what cc-connect remembers about a worktree beside it: git knows
// the path and the branch, not the conversation or the base.
type note struct {
	Conversation string `json:"conversation"`
	Branch       string `json:"branch"`
	Base         string `json:"base"`
}

func notePath(dir, name string) string { return filepath.Join(dir, "."+name+".json") }

func writeNote(dir, name string, n note) error {
	data, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return workspace.WriteFileAtomic(notePath(dir, name), data)
}

func readNote(dir, name string) (note, error) {
	var n note
	data, err := os.ReadFile(notePath(dir, name))
	if err != nil {
		return n, err
	}
	err = json.Unmarshal(data, &n)
	return n, err
}
