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

// get returns the thread of a run conversation.
func (t *threadBook) get(plat, channel, conv string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loadLocked()
	e, ok := t.m[threadBookKey(plat, channel, conv)]
	return e.Thread, ok && e.Thread != ""
}

// put records the thread a run conversation started, and forgets those
// unused for threadKeep.
func (t *threadBook) put(plat, channel, conv, thread string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loadLocked()
	now := time.Now()
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
