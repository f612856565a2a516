package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Private permissions for everything cc-connect writes: state can hold
// session ids and message text.
const (
	DirPerm  os.FileMode = 0o700
	FilePerm os.FileMode = 0o600
)

// WriteFileAtomic replaces path with data so that a reader (or a crash)
// sees either the old content or the new, never a mix: it writes a temp file
// in the same folder, fsyncs it, renames it over path and fsyncs the folder.
// The file is 0600 and its folder 0700.
func WriteFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := EnsurePrivateDir(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(FilePerm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// QuarantineCorrupt moves a file that failed to parse aside, next to where
// it was, as <name>.corrupt-<UTC time>, so that it is kept for inspection
// and never silently replaced. It returns the new path.
func QuarantineCorrupt(path string, now time.Time) (string, error) {
	dst := fmt.Sprintf("%s.corrupt-%s", path, now.UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("moving corrupt %s aside: %w", path, err)
	}
	return dst, nil
}
