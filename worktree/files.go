package worktree

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cc-connect/cc-connect/launch"
)

// Who owns what under <workspace>/.cc-connect when worktrees are made.
// The workspace is the agent's (Claude writes it), so everything
// cc-connect does in it goes through an os.Root of it: a folder swapped for
// a symbolic link, even between a check and a write, never leads
// cc-connect (root, with agent.user) outside.
//
//   - .cc-connect is cc-connect's: 0700, or, when the agent runs as
//     another user, 0750 of the agent's group (as artifact/ makes it), so
//     that the agent can pass through it to its worktree but change
//     nothing in it. Its .gitignore of "*" keeps it out of every commit.
//   - .cc-connect/worktrees is 0700 and belongs to the user git runs as:
//     the agent's when it runs as another user, since git, as that user,
//     makes the worktrees in it, and claude, as that user, works in them.
//   - the notes beside the worktrees are written by cc-connect, but they
//     lie where the agent may write: what is read from them is checked
//     (validRef) before it reaches git.

const maxNoteSize = 64 << 10

// access is the mode and group a folder or file of cc-connect's gets.
type access struct {
	dirMode, fileMode fs.FileMode
	gid               int // -1: leave the group
}

func accessFor(rule launch.Rule) access {
	if rule.SwitchesUser() {
		return access{dirMode: 0o750, fileMode: 0o640, gid: int(rule.User.GID)}
	}
	return access{dirMode: 0o700, fileMode: 0o600, gid: -1}
}

// ensureDirs makes .cc-connect and its worktrees folder as described
// above, refusing a symbolic link or a non-folder on the way.
func ensureDirs(ws string, rule launch.Rule) error {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	acc := accessFor(rule)
	state, err := makeDir(root, StateDirName, StateDirName)
	if err != nil {
		return err
	}
	defer state.Close()
	if err := own(state, ".", StateDirName, os.Geteuid(), -1, acc.dirMode, acc.gid); err != nil {
		return err
	}
	if err := ensureGitignore(state, acc); err != nil {
		return err
	}
	rel := StateDirName + "/" + DirName
	dir, err := makeDir(state, DirName, rel)
	if err != nil {
		return err
	}
	defer dir.Close()
	owner, gid := os.Geteuid(), -1
	if rule.SwitchesUser() {
		owner, gid = int(rule.User.UID), int(rule.User.GID)
	}
	return own(dir, ".", rel, owner, gid, 0o700, -1)
}

// makeDir opens parent/name as a root of its own, creating it (0700) when
// missing, refusing a link or a non-folder, and a folder swapped between
// the check and the open.
func makeDir(parent *os.Root, name, rel string) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		if err := parent.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("creating %s: %w", rel, err)
		}
		fi, err = parent.Lstat(name)
	}
	if err != nil {
		return nil, fmt.Errorf("checking %s: %w", rel, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a plain folder", ErrUnsafePath, rel)
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", rel, err)
	}
	now, err := sub.Stat(".")
	if err != nil || !os.SameFile(fi, now) {
		sub.Close()
		return nil, fmt.Errorf("%w: %s changed while it was being checked", ErrUnsafePath, rel)
	}
	return sub, nil
}

// own gives dir/name the owner (when the current one is cc-connect's own
// and another is wanted: a folder made before agent.user was set), mode
// and group (gid -1: left) wanted, through an open descriptor so that
// nothing lands on a link's target. An owner other than cc-connect and
// the one wanted is refused.
func own(dir *os.Root, name, rel string, owner, ownerGID int, mode fs.FileMode, gid int) error {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("checking %s: %w", rel, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	switch uid := int(st.Uid); {
	case uid == owner:
	case uid == os.Geteuid():
		if err := f.Chown(owner, ownerGID); err != nil {
			return fmt.Errorf("giving %s to uid %d: %w", rel, owner, err)
		}
	default:
		return fmt.Errorf("%w: %s belongs to uid %d, not to uid %d", ErrUnsafePath, rel, uid, owner)
	}
	if fi.Mode().Perm() != mode {
		if err := f.Chmod(mode); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", rel, err)
		}
	}
	if gid >= 0 && int(st.Gid) != gid {
		if err := f.Chown(-1, gid); err != nil {
			return fmt.Errorf("setting the group of %s: %w", rel, err)
		}
	}
	return nil
}

// ensureGitignore writes .cc-connect/.gitignore ("*", as artifact/ does)
// when it is missing, and lets the agent's git read an existing one.
func ensureGitignore(state *os.Root, acc access) error {
	const name, rel = ".gitignore", StateDirName + "/.gitignore"
	f, err := state.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, acc.fileMode)
	if errors.Is(err, fs.ErrExist) {
		fi, err := state.Lstat(name)
		if err != nil {
			return fmt.Errorf("checking %s: %w", rel, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: %s is not a regular file", ErrUnsafePath, rel)
		}
		return own(state, name, rel, os.Geteuid(), -1, acc.fileMode, acc.gid)
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", rel, err)
	}
	if _, err := f.WriteString("*\n"); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", rel, err)
	}
	return own(state, name, rel, os.Geteuid(), -1, acc.fileMode, acc.gid)
}

// note is what cc-connect remembers about a worktree beside it: git knows
// the path and the branch, not the conversation or the base.
type note struct {
	Conversation string `json:"conversation"`
	Branch       string `json:"branch"`
	Base         string `json:"base"`
}

func noteName(name string) string { return "." + name + ".json" }

// openWorktreesDir opens .cc-connect/worktrees of ws, refusing links on
// the way.
func openWorktreesDir(ws string) (*os.Root, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	state, err := openDir(root, StateDirName, StateDirName)
	if err != nil {
		return nil, err
	}
	defer state.Close()
	return openDir(state, DirName, StateDirName+"/"+DirName)
}

// openDir is makeDir for a folder that must exist.
func openDir(parent *os.Root, name, rel string) (*os.Root, error) {
	if _, err := parent.Lstat(name); err != nil {
		return nil, fmt.Errorf("checking %s: %w", rel, err)
	}
	return makeDir(parent, name, rel)
}

// writeNote writes the note of the worktree name atomically: a new file
// renamed over the old one (a link there is replaced, not followed).
func writeNote(ws, name string, n note) (err error) {
	data, err := json.Marshal(n)
	if err != nil {
		return err
	}
	dir, err := openWorktreesDir(ws)
	if err != nil {
		return err
	}
	defer dir.Close()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := noteName(name) + ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("writing the note of %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = dir.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the note of %s: %w", name, err)
	}
	if err := dir.Rename(tmp, noteName(name)); err != nil {
		return fmt.Errorf("writing the note of %s: %w", name, err)
	}
	return nil
}

// readNote reads the note of the worktree name: a regular file of the
// worktrees folder (os.Root follows no link out of it), bounded in size. Its fields are the agent's
// to write: callers check what they pass on.
func readNote(ws, name string) (note, error) {
	var n note
	dir, err := openWorktreesDir(ws)
	if err != nil {
		return n, err
	}
	defer dir.Close()
	f, err := dir.OpenFile(noteName(name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return n, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return n, fmt.Errorf("the note of %s is not a regular file", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxNoteSize+1))
	if err != nil {
		return n, err
	}
	if len(data) > maxNoteSize {
		return n, fmt.Errorf("the note of %s is over %d bytes", name, maxNoteSize)
	}
	err = json.Unmarshal(data, &n)
	return n, err
}

// removeNote removes the note of the worktree name; a missing one is fine.
func removeNote(ws, name string) error {
	dir, err := openWorktreesDir(ws)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := dir.Remove(noteName(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// notePath is where the note of the worktree name lies, for tests and
// messages.
func notePath(dir, name string) string { return filepath.Join(dir, noteName(name)) }
