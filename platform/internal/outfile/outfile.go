// Package outfile checks a file an adapter is about to post, the same way
// for every adapter: the name the chat shows (a base name, whatever
// folders the caller's name had) and the platform's size limit. It posts
// nothing.
package outfile

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/cc-connect/cc-connect/platform"
)

// ErrNoName is returned by Check for a file whose name is nothing once
// its folders are taken off: the caller names the file.
var ErrNoName = errors.New("the file has no name")

// Name is f's name as the chat shows it: its last element, with either
// slash taken as a folder separator (a name from Windows too); "" when
// nothing is left.
func Name(f platform.OutgoingFile) string {
	name := path.Base(strings.ReplaceAll(f.Name, "\\", "/"))
	if name == "." || name == "/" {
		return ""
	}
	return name
}

// Check returns f's name (Name), or an error: ErrNoName, or, for a file
// over limit bytes, one that names the file and wraps a
// *platform.FileTooLargeError.
func Check(f platform.OutgoingFile, limit int64) (string, error) {
	name := Name(f)
	switch {
	case name == "":
		return "", ErrNoName
	case int64(len(f.Data)) > limit:
		return name, fmt.Errorf("%s: %w", name, TooLarge(f, limit))
	}
	return name, nil
}

// TooLarge is the error for f over the platform's limit, for a platform
// that refused it for its size.
func TooLarge(f platform.OutgoingFile, limit int64) *platform.FileTooLargeError {
	return &platform.FileTooLargeError{Size: int64(len(f.Data)), Limit: limit}
}
