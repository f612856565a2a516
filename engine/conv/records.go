package conv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// RecordInfo is what one session record on disk says about a conversation,
// for tools that list them while the engine may be running (`cc-connect
// sessions`). It is a copy: the engine's own record stays private, and this
// reader decodes into it, so the two cannot drift.
type RecordInfo struct {
	// File is the record's path.
	File string
	// Err is set when the file could not be read or does not parse; the
	// other fields are then empty. The engine moves such a file aside the
	// next time that conversation is used.
	Err error

	Key          string
	Platform     string
	Channel      string
	Thread       string
	Workspace    string
	SessionID    string // empty until a Claude session was started
	Model        string
	LastActivity time.Time
	ContextPct   int
	TotalCostUSD float64
}

// ReadRecords reads every session record under stateDir, in file-name
// order, without locking, moving or rewriting any of them: a running engine
// may be writing them. Temp files of an atomic write and files already
// moved aside as corrupt are skipped. A missing folder is no records; an
// error is returned only when the folder cannot be listed, and a record
// that cannot be read is returned with Err set.
func ReadRecords(stateDir string) ([]RecordInfo, error) { return readRecords(stateDir, nil) }

// RecordCache is ReadRecords for a reader that lists often (the console's
// conversations page): a record file read before is not read again while
// it is the same file, of the same size and time. The engine writes a
// record by renaming a new file over it, so a change is another file
// (os.SameFile), whatever the clock's granularity. The zero value is
// ready; it is safe for concurrent use and holds the files of the last
// listing only.
type RecordCache struct {
	mu   sync.Mutex
	seen map[string]cachedRecord
}

type cachedRecord struct {
	fi   fs.FileInfo
	info RecordInfo
}

// Read is ReadRecords through the cache.
func (c *RecordCache) Read(stateDir string) ([]RecordInfo, error) { return readRecords(stateDir, c) }

func readRecords(stateDir string, c *RecordCache) ([]RecordInfo, error) {
	// The folder store.path writes into, whatever key.
	dir := filepath.Dir((&Store{dir: stateDir}).Path(""))
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("listing session records: %w", err)
	}
	var seen map[string]cachedRecord
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		seen = make(map[string]cachedRecord, len(entries))
	}
	var out []RecordInfo
	for _, e := range entries {
		// Temp files of an atomic write start with "."; files moved aside
		// as corrupt end in .corrupt-<time> and are no longer in use.
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || filepath.Ext(e.Name()) != ".json" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if c == nil {
			out = append(out, readRecordFile(path))
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone since the listing
		}
		if old, ok := c.seen[path]; ok && os.SameFile(old.fi, fi) && old.fi.Size() == fi.Size() && old.fi.ModTime().Equal(fi.ModTime()) {
			seen[path] = old
			out = append(out, old.info)
			continue
		}
		info := readRecordFile(path)
		if info.Err == nil {
			seen[path] = cachedRecord{fi: fi, info: info}
		}
		out = append(out, info)
	}
	if c != nil {
		c.seen = seen
	}
	return out, nil
}

func readRecordFile(path string) RecordInfo {
	info := RecordInfo{File: path}
	data, err := os.ReadFile(path)
	if err != nil {
		info.Err = err
		return info
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		info.Err = fmt.Errorf("does not parse: %w", err)
		return info
	}
	info.Key, info.Platform, info.Channel, info.Thread = rec.Key, rec.Platform, rec.Channel, rec.Thread
	info.Workspace, info.SessionID, info.Model = rec.Workspace, rec.SessionID, rec.Model
	info.LastActivity, info.ContextPct, info.TotalCostUSD = rec.LastActivity, rec.ContextPct, rec.TotalCostUSD
	return info
}
