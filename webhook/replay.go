package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/workspace"
)

// MaxReplays bounds the signed bodies Replays remembers: about 5 MB of
// file. Past it the oldest are forgotten, and the server logs it.
const MaxReplays = 100_000

// ReplaysPath is where a state dir keeps the webhook replay record.
func ReplaysPath(stateDir string) string {
	return filepath.Join(stateDir, "webhooks", "replays.jsonl")
}

// Replays is the durable record of the signed bodies that ran, per hook,
// so that a body runs at most once however late it is sent again. The
// engine's seen ids refuse a run id for state.seen_window only, and a
// GitHub body carries no signed time: a captured delivery replayed a day
// later would run again. A body is remembered until a replay of it could
// no longer pass the signature check (a generic hook's timestamp is out of
// the allowed skew), or, for a GitHub hook whose signature never expires,
// until MaxReplays newer bodies pushed it out.
//
// The file (0600 in a 0700 folder) is one JSON line per body, appended and
// fsynced before the sender is answered, and compacted atomically when it
// holds many more lines than bodies. It holds hashes, never a body.
type Replays struct {
	path string
	now  func() time.Time
	max  int

	mu    sync.Mutex // guards everything below
	f     *os.File
	keys  map[string]replayEntry
	order []replayRef // the keys oldest first; a ref whose seq is not its key's any more is stale
	seq   uint64
	lines int // records in the file, live or not
}

type replayEntry struct {
	until time.Time // zero: until pushed out
	seq   uint64
}

type replayRef struct {
	key string
	seq uint64
}

type replayRecord struct {
	Key   string `json:"k"`
	Until int64  `json:"u,omitempty"` // unix seconds; 0: until pushed out
}

// OpenReplays reads (or creates) the record at path. Lines that do not
// parse, and a last line cut by a crash, are dropped: a forgotten body can
// only let one replay through, where refusing the file would stop every
// webhook. now may be nil.
func OpenReplays(path string, now func() time.Time) (*Replays, error) {
	return openReplays(path, now, MaxReplays)
}

func openReplays(path string, now func() time.Time, limit int) (*Replays, error) {
	if now == nil {
		now = time.Now
	}
	if err := workspace.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("opening the webhook replay record: %w", err)
	}
	data, err := workspace.ReadFileNoFollow(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("opening the webhook replay record: %w", err)
	}
	r := &Replays{path: path, now: now, max: limit, keys: map[string]replayEntry{}}
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		data = data[:i+1] // a torn last line
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		var rec replayRecord
		if len(l) == 0 || json.Unmarshal(l, &rec) != nil || rec.Key == "" {
			continue
		}
		var until time.Time
		if rec.Until != 0 {
			until = time.Unix(rec.Until, 0)
		}
		r.insertLocked(rec.Key, until)
	}
	if err := r.rewriteLocked(); err != nil {
		return nil, err
	}
	return r, nil
}

// replayKey names a hook's body without keeping it.
func replayKey(hook string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(hook))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Seen reports whether hook's body ran before and is still remembered.
func (r *Replays) Seen(hook string, body []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.keys[replayKey(hook, body)]
	return ok && r.liveLocked(e)
}

func (r *Replays) liveLocked(e replayEntry) bool {
	return e.until.IsZero() || r.now().Before(e.until)
}

// Add remembers that hook's body ran, until until (zero: until pushed out
// by newer bodies), durably: it returns once the record is fsynced. It
// returns how many older bodies were forgotten to stay under MaxReplays.
func (r *Replays) Add(hook string, body []byte, until time.Time) (forgotten int, err error) {
	key := replayKey(hook, body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.keys[key]; ok && r.liveLocked(e) && (e.until.IsZero() || (!until.IsZero() && !until.After(e.until))) {
		return 0, nil
	}
	if r.f == nil {
		return 0, fmt.Errorf("remembering a webhook body: %w", os.ErrClosed)
	}
	rec := replayRecord{Key: key}
	if !until.IsZero() {
		rec.Until = until.Unix()
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("remembering a webhook body: %w", err)
	}
	off, err := r.f.Seek(0, 2)
	if err == nil {
		_, err = r.f.Write(append(line, '\n'))
	}
	if err == nil {
		err = r.f.Sync()
	}
	if err != nil {
		// Cut what may have been written, so that no torn line sits
		// before the next one.
		_ = r.f.Truncate(off)
		return 0, fmt.Errorf("remembering a webhook body in %s: %w", r.path, err)
	}
	r.lines++
	forgotten = r.insertLocked(key, until)
	if r.lines > 2*len(r.keys)+1024 {
		if err := r.rewriteLocked(); err != nil {
			// The body is on disk; the file stays uncompacted for now.
			return forgotten, nil
		}
	}
	return forgotten, nil
}

// insertLocked adds key to memory and forgets the oldest bodies past the
// bound; it returns how many it forgot.
func (r *Replays) insertLocked(key string, until time.Time) int {
	r.seq++
	r.keys[key] = replayEntry{until: until, seq: r.seq}
	r.order = append(r.order, replayRef{key: key, seq: r.seq})
	n := 0
	for len(r.keys) > r.max && len(r.order) > 0 {
		ref := r.order[0]
		r.order = r.order[1:]
		if e, ok := r.keys[ref.key]; ok && e.seq == ref.seq {
			delete(r.keys, ref.key)
			n++
		}
	}
	return n
}

// rewriteLocked drops what expired or was forgotten and rewrites the file
// atomically, then reopens it for appending.
func (r *Replays) rewriteLocked() error {
	var buf bytes.Buffer
	live := r.order[:0:0]
	for _, ref := range r.order {
		e, ok := r.keys[ref.key]
		if !ok || e.seq != ref.seq {
			continue
		}
		if !r.liveLocked(e) {
			delete(r.keys, ref.key)
			continue
		}
		rec := replayRecord{Key: ref.key}
		if !e.until.IsZero() {
			rec.Until = e.until.Unix()
		}
		b, _ := json.Marshal(rec)
		buf.Write(b)
		buf.WriteByte('\n')
		live = append(live, ref)
	}
	if err := workspace.WriteFileAtomic(r.path, buf.Bytes()); err != nil {
		return fmt.Errorf("compacting the webhook replay record: %w", err)
	}
	f, err := workspace.OpenFileNoFollow(r.path, os.O_RDWR|os.O_CREATE, workspace.FilePerm)
	if err != nil {
		return fmt.Errorf("opening the webhook replay record: %w", err)
	}
	if r.f != nil {
		_ = r.f.Close()
	}
	r.f, r.order, r.lines = f, live, len(live)
	return nil
}

// Close closes the file.
func (r *Replays) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
