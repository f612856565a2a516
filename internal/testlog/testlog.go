// Package testlog collects a logger's JSON records (slog.NewJSONHandler
// writing to a Buffer) so tests can wait for a record and inspect it. It
// is for tests only.
package testlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is an io.Writer for a JSON log handler. The zero value is ready;
// it is safe for concurrent use.
type Buffer struct {
	mu      sync.Mutex // guards buf and changed
	buf     bytes.Buffer
	changed chan struct{} // closed on the next write; nil when nobody waits
}

// Write appends log output and wakes the waiters.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return l.buf.Write(p)
}

// String returns everything logged so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Records returns the decoded records whose msg is msg, in order.
func (l *Buffer) Records(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// WaitRecords waits up to limit until msg was logged at least n times and
// returns those records; it wakes on every write and fails t at the limit.
func (l *Buffer) WaitRecords(t testing.TB, limit time.Duration, msg string, n int) []map[string]any {
	t.Helper()
	var recs []map[string]any
	l.waitFor(t, limit, func() bool {
		recs = l.Records(msg)
		return len(recs) >= n
	}, func() { t.Fatalf("timed out waiting for %d log records %q", n, msg) })
	return recs
}

// WaitRecord waits up to limit for a record msg whose attribute key is val.
func (l *Buffer) WaitRecord(t testing.TB, limit time.Duration, msg, key, val string) {
	t.Helper()
	l.waitFor(t, limit, func() bool {
		for _, r := range l.Records(msg) {
			if r[key] == val {
				return true
			}
		}
		return false
	}, func() { t.Fatalf("no log record %q with %s=%s", msg, key, val) })
}

func (l *Buffer) waitFor(t testing.TB, limit time.Duration, done func() bool, fail func()) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		if done() {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			fail()
			return
		}
	}
}
