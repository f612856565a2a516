//go:build unix

package doctor

import (
	"io/fs"
	"syscall"
)

// writable asks the kernel whether this user may create files in dir, so
// that ACLs, read-only mounts and root are all judged as open(2) would.
func writable(dir string) bool {
	return syscall.Access(dir, 0x2 /* W_OK */) == nil
}

// ownerUID is the uid owning the file described by info.
func ownerUID(info fs.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// access asks the kernel whether this user may read ("r") or write ("w")
// path.
func access(path, mode string) bool {
	bit := uint32(0x4) // R_OK
	if mode == "w" {
		bit = 0x2 // W_OK
	}
	return syscall.Access(path, bit) == nil
}
