package artifact

import (
	"errors"
	"fmt"
	"strings"
)

// ErrQuotaExceeded means storing the content would take the workspace's
// artifacts folder past its quota. Nothing was written and nothing was
// deleted: the caller tells the user (UserMessage) and does not send the
// prompt, since a truncated one would silently lose part of the message.
var ErrQuotaExceeded = errors.New("artifact quota exceeded")

// ErrUnsafePath means a folder or file on the artifact path inside the
// workspace is a symbolic link, is not the expected kind of file, or
// belongs to another user. cc-connect refuses to write through it; the
// caller reports it and an admin has to look.
var ErrUnsafePath = errors.New("unsafe artifact path")

// Error is what Store returns. Error() is for logs and may name host paths
// through the underlying error; UserMessage() is for chat and names only
// paths relative to the workspace.
type Error struct {
	// Kind is ErrQuotaExceeded, ErrUnsafePath, or nil for an I/O failure.
	Kind error
	// RelPath is the path inside the workspace the error is about.
	RelPath string
	// Reason is a short user-safe explanation, e.g. "is a symbolic link".
	Reason string
	// Used, Need and Quota are set for ErrQuotaExceeded (bytes).
	Used, Need, Quota int64
	// Err is the underlying error, if any; it may contain host paths.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("storing artifact")
	if e.RelPath != "" {
		b.WriteString(" " + e.RelPath)
	}
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	if e.Kind == ErrQuotaExceeded {
		fmt.Fprintf(&b, " (%d bytes used + %d new > quota %d)", e.Used, e.Need, e.Quota)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap lets errors.Is match both the kind and the underlying error.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// UserMessage explains the failure to the chat user without host paths.
func (e *Error) UserMessage() string {
	switch e.Kind {
	case ErrQuotaExceeded:
		return fmt.Sprintf("Your message is too large to pass on whole, and the workspace's folder for large messages "+
			"(%s) is full: %s used of %s, and this one needs %s more. Nothing was sent to Claude. "+
			"Ask an admin to clear old files there or raise the quota.",
			relArtifactsDir, humanBytes(e.Used), humanBytes(e.Quota), humanBytes(e.Need))
	case ErrUnsafePath:
		return fmt.Sprintf("Your message is too large to pass on whole, and cc-connect refused to store it: %s %s. "+
			"Nothing was sent to Claude. Ask an admin to check that path in the workspace.", e.RelPath, e.Reason)
	}
	return "Your message is too large to pass on whole, and storing it in the workspace failed. " +
		"Nothing was sent to Claude. The cc-connect log has the details."
}

// UserMessage returns the user-safe message of an error from this package,
// or a generic sentence for any other error, so that a host path in an
// unexpected error never reaches the chat.
func UserMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.UserMessage()
	}
	return (&Error{}).UserMessage()
}

// humanBytes formats n for people: 512 B, 16.0 KiB, 64.0 MiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
