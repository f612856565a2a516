package inbox

import (
	"os"
	"syscall"
)

// fdatasync is the system call syncData makes; a test watches it.
var fdatasync = syscall.Fdatasync

// syncData makes what was written to f durable: its data and what reading
// it back needs (its size), not its other metadata (times), which a
// journal does not read. It saves a part of an fsync's cost on ext4. A
// file that is not an *os.File (a test's, failing as a full disk does)
// syncs its own way.
func syncData(ff file) error {
	f, ok := ff.(*os.File)
	if !ok {
		return ff.Sync()
	}
	for {
		err := fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
