package inbox

import (
	"io"
	"os"
)

// file is what a journal needs of its file (*os.File provides it). Tests
// wrap it to fail writes and syncs the way a full disk does.
type file interface {
	io.Reader
	io.WriterAt
	Truncate(size int64) error
	Sync() error
	Stat() (os.FileInfo, error)
	Close() error
}

var _ file = (*os.File)(nil)
