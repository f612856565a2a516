package platform

import (
	"context"
	"errors"
	"fmt"
)

// OutgoingFile is a file cc-connect posts to a conversation.
type OutgoingFile struct {
	// Name is the file name shown in the chat: a base name, no folders.
	Name string
	// Path is where the file is, relative to the workspace, for an
	// adapter that points at it rather than posting it (the terminal,
	// which runs on the same machine).
	Path string
	// Mime is the content type; "" lets the adapter guess from Name.
	Mime string
	// Data is the whole content. The caller has checked its size against
	// its own cap and the adapter's MaxFileSize.
	Data []byte
	// Comment is text posted with the file, in the Markdown of a reply,
	// "" for none. Adapters render it as they render Send's text: it
	// mentions nobody.
	Comment string
}

// ErrFileTooLarge is wrapped by a FileSender's error when the platform
// refused a file for its size (FileTooLargeError says the figures).
var ErrFileTooLarge = errors.New("file too large for the platform")

// FileTooLargeError is a file over the platform's limit.
type FileTooLargeError struct {
	Size, Limit int64
}

func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("%d bytes is over the platform's limit of %d bytes", e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrFileTooLarge) hold.
func (e *FileTooLargeError) Is(target error) bool { return target == ErrFileTooLarge }

// FileSender is implemented by adapters that can post a file into a
// conversation (a Slack upload into the thread, a Discord attachment, a
// Telegram document or photo). Without it the engine tells Claude the
// chat cannot take files.
type FileSender interface {
	// SendFile posts f into the conversation to names (its thread when
	// set) and returns the posted message.
	SendFile(ctx context.Context, to Target, f OutgoingFile) (Target, error)
	// MaxFileSize is the largest file, in bytes, the platform takes in
	// to's conversation.
	MaxFileSize(to Target) int64
}
