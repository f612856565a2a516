package inbox

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// syncWatch records the fdatasync calls of the package: the file each
// was for, and what that file held at the moment of the call.
type syncWatch struct {
	mu    sync.Mutex
	calls []syncCall
}

type syncCall struct {
	path string
	data string // the file's content when it was synced
}

// watchSyncs routes the package's fdatasync through w for the test (the
// real call is still made); not for parallel tests.
func watchSyncs(t *testing.T) *syncWatch {
	w := &syncWatch{}
	real := fdatasync
	fdatasync = func(fd int) error {
		path, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		data, _ := os.ReadFile(path)
		w.mu.Lock()
		w.calls = append(w.calls, syncCall{path: path, data: string(data)})
		w.mu.Unlock()
		return real(fd)
	}
	t.Cleanup(func() { fdatasync = real })
	return w
}

// of returns the calls made for path.
func (w *syncWatch) of(path string) []syncCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []syncCall
	for _, c := range w.calls {
		if c.path == path {
			out = append(out, c)
		}
	}
	return out
}

// TestJournalWritesAreDataSynced: a message is accepted, and a turn's end
// is acknowledged, only once its record is on the disk (docs/architecture.md:
// the accept is "one record, one fsync"). The journal's file gets
// an fdatasync that sees the record, before Append and Ack return: a
// power cut after the platform was told "accepted" cannot lose it, nor
// bring back a message that was answered.
func TestJournalWritesAreDataSynced(t *testing.T) {
	w := watchSyncs(t)
	path := journalPath(t)
	in := openT(t, path, Limits{})
	real, err := os.Readlink(path)
	if err != nil {
		real = path
	}
	for i, id := range []string{"a", "b"} {
		if err := in.Append(entry(id)); err != nil {
			t.Fatal(err)
		}
		calls := w.of(real)
		if len(calls) != i+1 {
			t.Fatalf("after Append(%s): %d fdatasyncs of the journal, want %d", id, len(calls), i+1)
		}
		if c := calls[i]; !strings.Contains(c.data, `"id":"`+id+`"`) {
			t.Errorf("Append(%s) synced the journal before its record was written:\n%s", id, c.data)
		}
	}
	if err := in.Ack("a", AckResult); err != nil {
		t.Fatal(err)
	}
	calls := w.of(real)
	if len(calls) != 3 {
		t.Fatalf("after Ack(a): %d fdatasyncs of the journal, want 3", len(calls))
	}
	if c := calls[2]; strings.Count(c.data, `"a"`) < 2 {
		t.Errorf("Ack(a) synced the journal before its record was written:\n%s", c.data)
	}
}
