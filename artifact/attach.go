package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
)

// AttachmentsDirName is the folder, inside StateDirName, that holds the
// files users attach to chat messages.
const AttachmentsDirName = "attachments"

// maxNameBytes bounds the part of a stored attachment's name that comes
// from the user, so a long name cannot reach the file system's limit.
const maxNameBytes = 80

// PutAttachment stores a file a user attached to a message, whole, in
// .cc-connect/attachments/ and returns where it is. The name is the first
// 16 hex digits of the content's SHA-256, a dash, and the original name
// reduced to safe characters ("ab12…-report.log"), so the same file sent
// twice is stored once and two files with one name never clobber each
// other. It applies the checks of Put (no symbolic links, no entries of
// another owner, folders 0700 and files 0600, the .gitignore) and the
// Store's quota, which bounds this folder on its own.
func (s *Store) PutAttachment(name string, content []byte) (Artifact, error) {
	sum := sha256.Sum256(content)
	return s.store(AttachmentsDirName, hex.EncodeToString(sum[:])[:16]+"-"+SafeName(name), sum, content)
}

// SafeName reduces a user-supplied file name to its last path element made
// of ASCII letters, digits, '.', '-' and '_' (anything else becomes '_'),
// without leading dots and at most 80 bytes; "file" when nothing is left.
// The result can be joined to a folder without escaping it.
func SafeName(name string) string {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "/" {
		return "file"
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if len(out) > maxNameBytes {
		out = out[len(out)-maxNameBytes:] // keep the extension
		out = strings.TrimLeft(out, ".")
	}
	if out == "" {
		return "file"
	}
	return out
}
