//go:build unix

package workspace

import (
	"io/fs"
	"syscall"
)

// ownerUID is the uid owning the file described by fi.
func ownerUID(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// openNoFollow refuses a symbolic link as the last element of a path, and
// keeps a FIFO from blocking the open.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
