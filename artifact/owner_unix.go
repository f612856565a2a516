//go:build unix

package artifact

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedBySelf reports whether fi (from Lstat) belongs to the user
// cc-connect runs as. Without owner data it says no: refusing is the safe
// side.
func ownedBySelf(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// groupOf is fi's group id.
func groupOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Gid), true
}
