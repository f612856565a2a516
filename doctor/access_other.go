//go:build !unix

package doctor

import "io/fs"

// writable cannot be asked without unix access(2); the state dir probe
// file still tests the state dir for real.
func writable(string) bool { return true }

// ownerUID is not known without unix file ownership.
func ownerUID(fs.FileInfo) (int, bool) { return 0, false }

// access cannot be asked without unix access(2).
func access(string, string) bool { return false }
