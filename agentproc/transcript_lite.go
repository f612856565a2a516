package agentproc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// The lite read windows, the same as the CLI's own session picker. The CLI
// re-appends title and last-prompt lines at the end of a transcript when it
// exits or compacts, so that they stay inside the tail window.
const (
	liteHeadSize = 4 << 10
	liteTailSize = 64 << 10
)

// Lite is what a session list shows about one transcript, taken from its
// first 4 KB and last 64 KB only, so listing stays cheap however long the
// sessions grew. Fields the windows do not hold are left empty.
type Lite struct {
	SessionID string // the file name without .jsonl
	Path      string
	Size      int64
	ModTime   time.Time
	// FirstPrompt is the first text the person sent (tool results, meta
	// lines and command output skipped). A prompt cut by the head window is
	// kept as far as it goes.
	FirstPrompt string
	// LastPrompt is the latest prompt seen in the tail: from the CLI's
	// last-prompt line, or from a user line written after it (a turn that
	// never finished has no last-prompt line yet).
	LastPrompt string
	// Cwd and GitBranch are those the session started with when the head
	// holds them, else the latest in the tail.
	Cwd       string
	GitBranch string
	// Title is the latest /rename title, else the latest generated title,
	// else the latest summary line.
	Title string
}

// liteBufs recycles the read buffers: listing a thousand sessions would
// otherwise allocate 68 MB of windows.
var liteBufs = sync.Pool{New: func() any {
	b := make([]byte, liteHeadSize+liteTailSize+1)
	return &b
}}

// ReadLite reads the lite view of the transcript at path with at most two
// reads: the first 4 KB and the last 64 KB (one read when the file is
// small). It never reads the whole of a large file. Cut lines at the window
// edges, a line longer than a window and lines that are not JSON are
// tolerated; only failing to open or read the file is an error.
func ReadLite(path string) (Lite, error) {
	f, err := os.Open(path)
	if err != nil {
		return Lite{}, fmt.Errorf("reading transcript %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Lite{}, fmt.Errorf("reading transcript %s: %w", path, err)
	}
	return readLite(f, path, fi)
}

func readLite(r io.ReaderAt, path string, fi fs.FileInfo) (Lite, error) {
	l := Lite{
		SessionID: strings.TrimSuffix(filepath.Base(path), ".jsonl"),
		Path:      path,
		Size:      fi.Size(),
		ModTime:   fi.ModTime(),
	}
	size := fi.Size()
	if size <= 0 {
		return l, nil
	}

	bp := liteBufs.Get().(*[]byte)
	defer liteBufs.Put(bp)
	buf := *bp

	// The tail window starts one byte early: that byte tells whether the
	// window's first line is whole (it follows a newline) or cut.
	tailStart := max(0, size-liteTailSize)
	readFrom := max(0, tailStart-1)
	tail := buf[liteHeadSize : liteHeadSize+int(size-readFrom)]
	n, err := r.ReadAt(tail, readFrom)
	if err != nil && !errors.Is(err, io.EOF) {
		return l, fmt.Errorf("reading transcript tail %s: %w", path, err)
	}
	tail = tail[:n]

	var head []byte
	headWhole := false
	if readFrom == 0 {
		// The tail window holds the whole file: use all of it as the head
		// too, at no extra read.
		head, headWhole = tail, true
	} else {
		head = buf[:liteHeadSize]
		n, err := r.ReadAt(head, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return l, fmt.Errorf("reading transcript head %s: %w", path, err)
		}
		head = head[:n]
		if len(tail) > 0 && tail[0] == '\n' {
			tail = tail[1:]
		} else if i := bytes.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		} else {
			tail = nil // inside one line longer than the window
		}
	}

	liteHead(&l, head, headWhole)
	liteTail(&l, tail)
	return l, nil
}

// liteHead takes the first prompt, cwd and branch from the head window. The
// window's last line is cut unless the window is the whole file.
func liteHead(l *Lite, head []byte, whole bool) {
	var cut []byte
	if !whole {
		i := bytes.LastIndexByte(head, '\n')
		cut, head = head[i+1:], head[:i+1]
	}
	transcriptLinesForward(head, func(line []byte) bool {
		isUser := bytes.Contains(line, tkeyTypeUser)
		if !isUser && (l.Cwd != "" || !bytes.Contains(line, tkeyCwd)) {
			return true
		}
		r, ok := decodeTranscriptLine(line)
		if !ok {
			return true
		}
		if l.Cwd == "" && r.Cwd != "" {
			l.Cwd, l.GitBranch = r.Cwd, r.GitBranch
		}
		if l.FirstPrompt == "" && r.Type == "user" && !r.IsSidechain {
			if kind, text := classifyUser(&r); kind == userPrompt {
				l.FirstPrompt = text
			}
		}
		return l.FirstPrompt == "" || l.Cwd == ""
	})
	if l.FirstPrompt == "" && len(cut) > 0 {
		l.FirstPrompt = partialUserText(cut)
	}
}

// liteTail takes the title, the last prompt, and cwd and branch when the
// head had none, from whole lines of the tail window.
func liteTail(l *Lite, tail []byte) {
	for _, t := range []struct {
		key []byte
		typ string
		get func(*transcriptLine) string
	}{
		{tkeyCustomTitle, "custom-title", func(r *transcriptLine) string { return r.CustomTitle }},
		{tkeyAITitle, "ai-title", func(r *transcriptLine) string { return r.AITitle }},
		{tkeySummary, "summary", func(r *transcriptLine) string { return r.Summary }},
	} {
		lastLineWith(tail, t.key, func(line []byte, _ int) bool {
			r, ok := decodeTranscriptLine(line)
			if ok && r.Type == t.typ {
				l.Title = strings.TrimSpace(t.get(&r))
			}
			return l.Title == ""
		})
		if l.Title != "" {
			break
		}
	}

	// The newer of the last last-prompt line and the last user prompt: a
	// turn cut short leaves its prompt after the previous last-prompt line.
	after := tail
	lastLineWith(tail, tkeyLastPrompt, func(line []byte, next int) bool {
		r, ok := decodeTranscriptLine(line)
		if !ok || r.Type != "last-prompt" || r.LastPrompt == "" {
			return true
		}
		l.LastPrompt = strings.TrimSpace(r.LastPrompt)
		after = tail[next:]
		return false
	})
	lastLineWith(after, tkeyTypeUser, func(line []byte, _ int) bool {
		if bytes.Contains(line, []byte(`"type":"tool_result"`)) {
			return true // skip big tool output without decoding it
		}
		r, ok := decodeTranscriptLine(line)
		if !ok || r.Type != "user" || r.IsSidechain {
			return true
		}
		kind, text := classifyUser(&r)
		if kind != userPrompt {
			return true
		}
		l.LastPrompt = text
		return false
	})

	if l.Cwd == "" || l.GitBranch == "" {
		lastLineWith(tail, tkeyCwd, func(line []byte, _ int) bool {
			r, ok := decodeTranscriptLine(line)
			if !ok || r.Cwd == "" {
				return true
			}
			if l.Cwd == "" {
				l.Cwd = r.Cwd
			}
			if l.GitBranch == "" {
				l.GitBranch = r.GitBranch
			}
			return false
		})
	}
}

// lastLineWith calls fn on each line of buf that contains key, from the
// last one back, until fn returns false; next is the offset in buf just
// past the line and its newline. Candidates are found with a byte search,
// so lines without key cost nothing.
func lastLineWith(buf, key []byte, fn func(line []byte, next int) bool) {
	for end := len(buf); end > 0; {
		i := bytes.LastIndex(buf[:end], key)
		if i < 0 {
			return
		}
		start := bytes.LastIndexByte(buf[:i], '\n') + 1
		stop, next := len(buf), len(buf)
		if j := bytes.IndexByte(buf[i:], '\n'); j >= 0 {
			stop, next = i+j, i+j+1
		}
		if !fn(bytes.TrimRight(buf[start:stop], "\r"), next) {
			return
		}
		end = start
	}
}

// ListSessions returns the lite view of every transcript in cwd's project
// folder, newest first (by modification time). Only lite reads are done.
// A workspace with no project folder has no sessions (nil, nil). Files
// that vanish or cannot be read while listing are left out.
func ListSessions(configDir, cwd string) ([]Lite, error) {
	dir := ProjectDir(configDir, cwd)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing sessions in %s: %w", dir, err)
	}
	type file struct {
		path string
		info fs.FileInfo
	}
	files := make([]file, 0, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, file{filepath.Join(dir, e.Name()), info})
	}
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i].info.ModTime(), files[j].info.ModTime()
		if !a.Equal(b) {
			return a.After(b)
		}
		return files[i].path < files[j].path
	})

	out := make([]Lite, 0, len(files))
	for _, f := range files {
		l, err := liteFile(f.path, f.info)
		if err != nil {
			continue
		}
		out = append(out, l)
	}
	return out, nil
}

// liteFile is ReadLite with the directory's file info, which saves a stat
// per file when listing.
func liteFile(path string, info fs.FileInfo) (Lite, error) {
	f, err := os.Open(path)
	if err != nil {
		return Lite{}, err
	}
	defer f.Close()
	return readLite(f, path, info)
}
