package conv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/workspace"
)

// threadKeep is how long a run conversation's thread is remembered after
// its last run: a schedule that continues one conversation and runs less
// often than this starts a new thread.
const threadKeep = 90 * 24 * time.Hour

// threadBook remembers the thread each run conversation started under its
// header, so that the runs of a continuing schedule go on in one thread,
// and a run handed off before a crash is not given a second header. It is
// one small JSON file, rewritten atomically (0600 in 0700) at each new
// thread.
type threadBook struct {
	path string
	now  func() time.Time // nil: time.Now

	mu     sync.Mutex
	loaded bool
	m      map[string]threadEntry
}

type threadEntry struct {
	Thread string    `json:"thread"`
	Last   time.Time `json:"last"`
}

func threadBookPath(stateDir string) string { return filepath.Join(stateDir, "runs", "threads.json") }

func threadBookKey(plat, channel, conv string) string { return plat + "/" + channel + "/" + conv }

// loadLocked reads the file once; an unreadable one is moved aside (runs
// then start new threads) rather than blocking every run.
func (t *threadBook) loadLocked() {
	if t.loaded {
		return
	}
	t.loaded, t.m = true, map[string]threadEntry{}
	b, err := os.ReadFile(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err == nil {
		err = json.Unmarshal(b, &t.m)
	}
	if err != nil {
		t.m = map[string]threadEntry{}
		_, _ = workspace.QuarantineCorrupt(t.path, time.Now())
	}
}

func (t *threadBook) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// get returns the thread of a run conversation, unless it went unused for
// threadKeep.
func (t *threadBook) get(plat, channel, conv string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loadLocked()
	e, ok := t.m[threadBookKey(plat, channel, conv)]
	if ok && t.clock().Sub(e.Last) > threadKeep {
		return "", false
	}
	return e.Thread, ok && e.Thread != ""
}

// touchEvery is how stale a thread's last use may be before a run in it
// rewrites the file: the 90 days are counted to the day, not per run.
const touchEvery = 24 * time.Hour

// used notes that a run went on in its conversation's thread, so that a
// thread in use is kept however long ago it started.
func (t *threadBook) used(plat, channel, conv string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loadLocked()
	k := threadBookKey(plat, channel, conv)
	e, ok := t.m[k]
	now := t.clock()
	if !ok || now.Sub(e.Last) < touchEvery {
		return nil
	}
	e.Last = now
	t.m[k] = e
	b, err := json.Marshal(t.m)
	if err != nil {
		return fmt.Errorf("encoding the run threads: %w", err)
	}
	return workspace.WriteFileAtomic(t.path, b)
}

// put records the thread a run conversation started, and forgets those
// unused for threadKeep.
func (t *threadBook) put(plat, channel, conv, thread string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loadLocked()
	now := t.clock()
	for k, e := range t.m {
		if now.Sub(e.Last) > threadKeep {
			delete(t.m, k)
		}
	}
	t.m[threadBookKey(plat, channel, conv)] = threadEntry{Thread: thread, Last: now}
	b, err := json.Marshal(t.m)
	if err != nil {
		return fmt.Errorf("encoding the run threads: %w", err)
	}
	return workspace.WriteFileAtomic(t.path, b)
}
