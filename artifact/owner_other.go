//go:build !unix

package artifact

import "io/fs"

// ownedBySelf cannot check owners without Unix uids; folder permissions
// are the only guard there.
func ownedBySelf(fs.FileInfo) bool { return true }

// groupOf has no group ids to report without Unix.
func groupOf(fs.FileInfo) (int, bool) { return 0, false }
