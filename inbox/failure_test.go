package inbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// faultyFile fails writes and syncs the way a full disk does: a write
// puts down the first partial bytes of what it was given and then reports
// ENOSPC. Truncate fails too while truncFails is set.
type faultyFile struct {
	file
	mu         sync.Mutex
	writeFails int // how many writes fail from now on
	syncFails  int // how many syncs fail from now on
	partial    int // bytes a failing write still puts down
	truncFails bool
	beforeSync func() // run once at the next sync, before it fails or not
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	fail, partial := f.writeFails > 0, f.partial
	if fail {
		f.writeFails--
	}
	f.mu.Unlock()
	if !fail {
		return f.file.WriteAt(p, off)
	}
	n, _ := f.file.WriteAt(p[:min(partial, len(p))], off)
	return n, fmt.Errorf("write: %w", syscall.ENOSPC)
}

func (f *faultyFile) Sync() error {
	f.mu.Lock()
	before := f.beforeSync
	f.beforeSync = nil
	f.mu.Unlock()
	if before != nil {
		before()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.syncFails > 0 {
		f.syncFails--
		return fmt.Errorf("fsync: %w", syscall.EIO)
	}
	return f.file.Sync()
}

func (f *faultyFile) Truncate(n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.truncFails {
		return fmt.Errorf("truncate: %w", syscall.EIO)
	}
	return f.file.Truncate(n)
}

func (f *faultyFile) set(fn func(f *faultyFile)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func openFaulty(t *testing.T, path string) (*Inbox, *faultyFile) {
	t.Helper()
	var ff *faultyFile
	in, err := open(path, Limits{}, nil, func(f *os.File) file { ff = &faultyFile{file: f}; return ff })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in, ff
}

// TestInboxFailedAppendLeavesJournalAsItWas: on a full disk an append
// used to leave its torn record in the journal, and the next append glued
// itself to it, so that after a restart the journal did not parse and the
// conversation refused everything. A failed write (part written, or a
// failed fsync) is now cut off: the journal holds exactly what it held,
// the failed message is not pending, and everything accepted before and
// after it is there after a reopen.
func TestInboxFailedAppendLeavesJournalAsItWas(t *testing.T) {
	tests := []struct {
		name  string
		fault func(f *faultyFile)
		want  error
	}{
		{"partial write, disk full", func(f *faultyFile) { f.writeFails, f.partial = 1, 37 }, syscall.ENOSPC},
		{"nothing written, disk full", func(f *faultyFile) { f.writeFails, f.partial = 1, 0 }, syscall.ENOSPC},
		{"fsync fails", func(f *faultyFile) { f.syncFails = 1 }, syscall.EIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := journalPath(t)
			in, ff := openFaulty(t, path)
			for _, id := range []string{"a", "b"} {
				if err := in.Append(entry(id)); err != nil {
					t.Fatal(err)
				}
			}
			if err := in.MarkStarted("a", ""); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			ff.set(tt.fault)
			if err := in.Append(entry("c")); !errors.Is(err, tt.want) {
				t.Fatalf("append on a failing disk = %v, want %v", err, tt.want)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Fatalf("the journal changed:\n%q\nwant\n%q", after, before)
			}
			if got := ids(in.Pending()); strings.Join(got, ",") != "a,b" {
				t.Errorf("pending = %v, want [a b]", got)
			}
			if err := in.Append(entry("d")); err != nil {
				t.Fatalf("append once the disk has room: %v", err)
			}
			in.Close()
			again := openT(t, path, Limits{})
			got := again.Pending()
			if strings.Join(ids(got), ",") != "a,b,d" || !got[0].Started {
				t.Errorf("after reopen: %+v, want a (started), b, d", got)
			}
			if r := again.Repairs(); len(r) != 0 {
				t.Errorf("a journal kept whole needed repairs: %q", r)
			}
		})
	}
}

// TestInboxFailedSyncAfterAnotherWrite: an add's fsync runs outside the
// journal's lock, so another record can follow the add before the fsync
// fails. The add cannot be cut off then; it is withdrawn by a record of its
// own, and after a reopen it is neither pending nor seen (the user was told
// it was not accepted, so a redelivery is a new message), while the record
// written meanwhile is kept.
func TestInboxFailedSyncAfterAnotherWrite(t *testing.T) {
	dir := privateDir(t)
	path := filepath.Join(dir, "s.jsonl")
	in, ff := openFaulty(t, path)
	if err := in.Append(entry("a")); err != nil {
		t.Fatal(err)
	}
	ff.set(func(f *faultyFile) {
		f.syncFails = 1
		f.beforeSync = func() {
			if err := in.MarkStarted("a", ""); err != nil {
				t.Errorf("MarkStarted while the add syncs: %v", err)
			}
		}
	})
	if err := in.Append(entry("c")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with a failing fsync = %v, want EIO", err)
	}
	if got := ids(in.Pending()); strings.Join(got, ",") != "a" {
		t.Errorf("pending = %v, want [a]", got)
	}
	in.Close()
	seen, err := OpenSeen(filepath.Join(dir, "seen.jsonl"), time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer seen.Close()
	again, err := Open(path, Limits{}, seen)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer again.Close()
	got := again.Pending()
	if strings.Join(ids(got), ",") != "a" || !got[0].Started {
		t.Errorf("after reopen: %+v, want a, started", got)
	}
	if seen.Has(entry("c").SeenKey()) {
		t.Error("the withdrawn message's id is seen: its redelivery would be dropped")
	}
	if !seen.Has(entry("a").SeenKey()) {
		t.Error("the accepted message's id is not seen")
	}
}

// TestInboxFailedStartAndAckKeepState: a start or an acknowledgement that
// cannot be written leaves the message as it was, in memory and on disk.
func TestInboxFailedStartAndAckKeepState(t *testing.T) {
	path := journalPath(t)
	in, ff := openFaulty(t, path)
	for _, id := range []string{"a", "b"} {
		if err := in.Append(entry(id)); err != nil {
			t.Fatal(err)
		}
	}
	ff.set(func(f *faultyFile) { f.writeFails, f.partial = 1, 10 })
	if err := in.MarkStarted("a", ""); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("MarkStarted = %v, want ENOSPC", err)
	}
	if in.Pending()[0].Started {
		t.Error("a failed start marked the message started")
	}
	ff.set(func(f *faultyFile) { f.writeFails, f.partial = 1, 10 })
	if err := in.Ack("b", AckResult); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Ack = %v, want ENOSPC", err)
	}
	if in.Len() != 2 {
		t.Errorf("a failed ack removed the message: %v", ids(in.Pending()))
	}
	in.Close()
	again := openT(t, path, Limits{})
	if got := again.Pending(); strings.Join(ids(got), ",") != "a,b" || got[0].Started {
		t.Errorf("after reopen: %+v, want a (not started), b", got)
	}
}

// TestInboxBrokenUntilTheCutSucceeds: when even cutting off a failed
// write fails, the journal takes no further change (which would follow a
// torn record) until a later write manages the cut.
func TestInboxBrokenUntilTheCutSucceeds(t *testing.T) {
	path := journalPath(t)
	in, ff := openFaulty(t, path)
	if err := in.Append(entry("a")); err != nil {
		t.Fatal(err)
	}
	ff.set(func(f *faultyFile) { f.writeFails, f.partial, f.truncFails = 1, 25, true })
	if err := in.Append(entry("b")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append = %v, want ENOSPC", err)
	}
	if err := in.Append(entry("c")); !errors.Is(err, ErrBroken) {
		t.Fatalf("append while the torn record cannot be cut = %v, want ErrBroken", err)
	}
	ff.set(func(f *faultyFile) { f.truncFails = false })
	if err := in.Append(entry("d")); err != nil {
		t.Fatalf("append once the cut works: %v", err)
	}
	in.Close()
	if got := ids(openT(t, path, Limits{}).Pending()); strings.Join(got, ",") != "a,d" {
		t.Errorf("after reopen: %v, want [a d]", got)
	}
}

// TestInboxRecoversWhatOldFailedWritesLeft: journals written before failed
// writes were cut off hold a record cut short and glued to the next one.
// What can be told safely is recovered and reported; what could run a
// message twice or out of order still fails closed, leaving the file as
// it is.
func TestInboxRecoversWhatOldFailedWritesLeft(t *testing.T) {
	add := func(id string) string {
		rec, err := encode(diskRecord{Op: opAdd, Entry: toDisk(Entry{ID: id, Text: "text of " + id, UserID: "u"})})
		if err != nil {
			t.Fatal(err)
		}
		return string(rec)
	}
	cut := func(rec string, n int) string { return rec[:n] }
	start := `{"op":"start","id":"a","uuid":"uuid-a"}` + "\n"
	ack := func(id string) string { return `{"op":"ack","id":"` + id + `","reason":"result"}` + "\n" }
	tests := []struct {
		name    string
		content string
		want    string // pending ids after open; "" with wantErr
		repairs int
		wantErr error
	}{
		{"cut add glued to the next add", add("a") + cut(add("b"), 30) + add("c"), "a,c", 1, nil},
		{"two cut adds", add("a") + cut(add("b"), 30) + cut(add("x"), 12) + add("c"), "a,c", 2, nil},
		{"cut start glued to an ack", add("a") + cut(start, 20) + ack("a") + add("b"), "b", 1, nil},
		{"cut ack with its id is applied", add("a") + add("b") + cut(ack("a"), 22) + add("c"), "b,c", 1, nil},
		{"torn last line", add("a") + cut(add("b"), 40), "a", 1, nil},
		{"cut ack without its whole id", add("a") + cut(ack("a"), 19) + add("b"), "", 0, ErrCorrupt},
		{"cut record of unknown kind", add("a") + `{"op":"shred","id` + add("b"), "", 0, ErrCorrupt},
		{"garbage in the middle", add("a") + "garbage\n" + add("b"), "", 0, ErrCorrupt},
		{"a record cut short, then junk", add("a") + cut(add("b"), 30) + "\n" + add("c"), "", 0, ErrCorrupt},
		{"cut ack of a message not pending", add("a") + cut(ack("zz"), 23) + add("b"), "", 0, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := journalPath(t)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			in, err := Open(path, Limits{}, nil)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Open = %v, want %v", err, tt.wantErr)
				}
				if b, _ := os.ReadFile(path); string(b) != tt.content {
					t.Error("a journal that fails closed was changed")
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer in.Close()
			if got := strings.Join(ids(in.Pending()), ","); got != tt.want {
				t.Errorf("pending = %s, want %s", got, tt.want)
			}
			if r := in.Repairs(); len(r) != tt.repairs {
				t.Errorf("repairs = %q, want %d", r, tt.repairs)
			}
			// The recovered journal takes new records and reads the same.
			if err := in.Append(entry("new")); err != nil {
				t.Fatal(err)
			}
			in.Close()
			again := openT(t, path, Limits{})
			if got, want := strings.Join(ids(again.Pending()), ","), strings.TrimPrefix(tt.want+",new", ","); got != want {
				t.Errorf("after reopen: %s, want %s", got, want)
			}
		})
	}
}

// TestInboxTooLargeMessage: a message alone over the size limit is refused
// with its size and the limit, apart from a journal filled by others.
func TestInboxTooLargeMessage(t *testing.T) {
	in := openT(t, journalPath(t), Limits{MaxBytes: 4096})
	big := entry("big")
	big.Text = strings.Repeat("<&>", 2000) // 6,000 bytes, not 36,000 once escaped
	err := in.Append(big)
	var se *SizeError
	if !errors.Is(err, ErrMessageTooLarge) || !errors.As(err, &se) || se.Limit != 4096 || se.Size < 6000 || se.Size > 6400 {
		t.Fatalf("Append = %v (%+v), want ErrMessageTooLarge with the record's size", err, se)
	}
	half := entry("half")
	half.Text = strings.Repeat("x", 2500)
	if err := in.Append(half); err != nil {
		t.Fatal(err)
	}
	half.ID = "half2"
	err = in.Append(half)
	if !errors.Is(err, ErrFull) || errors.Is(err, ErrMessageTooLarge) || !errors.As(err, &se) || se.Used == 0 {
		t.Fatalf("Append into a journal filled by others = %v, want ErrFull with what is used", err)
	}
}

// TestSeenFailedKeepIsCutOff: a compaction's write of ids into the seen
// file that fails is cut off again, and its ids are not taken as seen.
func TestSeenFailedKeepIsCutOff(t *testing.T) {
	path := filepath.Join(privateDir(t), "seen.jsonl")
	var ff *faultyFile
	s, err := openSeen(path, time.Hour, nil, func(f *os.File) file { ff = &faultyFile{file: f}; return ff })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := keepOne(s, "a"); err != nil {
		t.Fatal(err)
	}
	ff.set(func(f *faultyFile) { f.writeFails, f.partial = 1, 7 })
	if err := keepOne(s, "b"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("keep = %v, want ENOSPC", err)
	}
	if s.Has("b") {
		t.Error("an id that was not saved is remembered")
	}
	if err := keepOne(s, "c"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	again, err := OpenSeen(path, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !again.Has("a") || !again.Has("c") || again.Has("b") || len(again.Repairs()) != 0 {
		t.Errorf("after reopen: a %v, b %v, c %v, repairs %q; want a and c, whole", again.Has("a"), again.Has("b"), again.Has("c"), again.Repairs())
	}
}

// TestSeenRepairsCorruptLines: a seen-ids file with lines that do not
// parse used to fail to open, and stayed so: every later restart forgot
// every id. The readable ids are kept, the rest dropped and reported, and
// the file is rewritten whole.
func TestSeenRepairsCorruptLines(t *testing.T) {
	path := filepath.Join(privateDir(t), "seen.jsonl")
	now := time.Now()
	at := fmt.Sprint(now.Unix())
	content := `{"id":"a","at":` + at + "}\nnonsense\n" + `{"id":"b","at":` + at + `}{"id":"c","at":` + at + "}\n" +
		`{"id":"d","at":` + at + "}\n" + `{"id":"e","at`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSeen(path, time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatalf("OpenSeen: %v", err)
	}
	defer s.Close()
	if !s.Has("a") || !s.Has("d") {
		t.Error("readable ids were lost")
	}
	if r := s.Repairs(); len(r) != 2 || !strings.Contains(r[1], "dropped 2 lines") {
		t.Errorf("repairs = %q, want the torn tail and 2 lines reported", r)
	}
	if err := keepOne(s, "f"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	again, err := OpenSeen(path, time.Hour, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if len(again.Repairs()) != 0 || !again.Has("a") || !again.Has("d") || !again.Has("f") {
		t.Errorf("the repaired file is not whole: repairs %q", again.Repairs())
	}
}
