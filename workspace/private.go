package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Errors callers branch on; both are wrapped with the path and what to do.
var (
	// ErrNotPrivate: a folder cc-connect would keep state in exists but is
	// open to other users or belongs to another user. cc-connect does not
	// take such a folder over (a state.dir of "/tmp" must not be chmod-ed);
	// the admin points it elsewhere or fixes the folder.
	ErrNotPrivate = errors.New("folder is not private to this user")
	// ErrSymlink: a symbolic link sits where cc-connect keeps a file or a
	// folder of its own. It is never followed: a planted link would
	// otherwise make cc-connect write through it.
	ErrSymlink = errors.New("is a symbolic link, which cc-connect does not follow")
)

// EnsurePrivateDir makes sure dir is a folder only this user can use. A
// missing dir is created (with its missing parents) mode 0700. An existing
// one is checked, never changed: it must be a real folder (not a symbolic
// link), owned by the user cc-connect runs as, and closed to group and
// others; else the error wraps ErrNotPrivate or ErrSymlink and says how to
// fix it. Only a folder cc-connect created is made private by cc-connect.
func EnsurePrivateDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), DirPerm); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(dir), err)
	}
	err := os.Mkdir(dir, DirPerm)
	if err == nil {
		// Ours: the umask may only have narrowed 0700.
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return CheckPrivateDir(dir)
}

// CheckPrivateDir reports, without changing anything, whether the existing
// folder dir is one EnsurePrivateDir accepts.
func CheckPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking %s: %w", dir, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s %w: point cc-connect at the folder itself", dir, ErrSymlink)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	if uid, ok := ownerUID(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to uid %d that cc-connect runs as: %w; give cc-connect a folder of its own", dir, uid, os.Geteuid(), ErrNotPrivate)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s is open to other users (mode %04o), and cc-connect keeps message text and session ids there: %w; "+
			"use a folder of its own, or chmod 700 it if it is one", dir, perm, ErrNotPrivate)
	}
	return nil
}

// OpenFileNoFollow is os.OpenFile for cc-connect's own files: a symbolic
// link at path is refused (O_NOFOLLOW, wrapping ErrSymlink), and so is
// anything but a regular file (opened non-blocking, so a FIFO cannot hang
// the open; a regular file ignores the flag), so that a link planted in the
// state dir never redirects a write. The file is close-on-exec.
func OpenFileNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|openNoFollow, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s %w", path, ErrSymlink)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return f, nil
}

// ReadFileNoFollow is os.ReadFile through OpenFileNoFollow.
func ReadFileNoFollow(path string) ([]byte, error) {
	f, err := OpenFileNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
