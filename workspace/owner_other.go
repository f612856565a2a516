//go:build !unix

package workspace

import "io/fs"

// ownerUID has no Unix uid to report here; folder permissions are the
// only guard.
func ownerUID(fs.FileInfo) (int, bool) { return 0, false }

// openNoFollow: links are not refused where the flag does not exist.
const openNoFollow = 0
