package inbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJournalOfTheLandedVersionReplays: a journal written by the version
// before this format (its entries carry platform.Target under Go field
// names, the uuid comes with the start record, attachments were stored at
// acceptance) opens with every pending message intact, in order, and its
// ids are seen.
func TestJournalOfTheLandedVersionReplays(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "journal-landed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := privateDir(t)
	path := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// An hour after the fixture's messages: within the seen window.
	clock := func() time.Time { return time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC) }
	seen, err := OpenSeen(filepath.Join(dir, "seen.jsonl"), 0, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer seen.Close()
	in, err := Open(path, Limits{}, seen)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer in.Close()
	got := in.Pending()
	if strings.Join(ids(got), ",") != "C0123:1764504000.000100,C0123:1764504020.000300,C0123:1764504030.000400" {
		t.Fatalf("pending = %v", ids(got))
	}
	first := got[0]
	if first.Platform != "slack-main" || first.Channel != "C0123" || first.Thread != "1764504000.000100" ||
		first.MessageID != "1764504000.000100" || first.UserID != "U1" || first.UserName != "alice" || first.Text != "build it" {
		t.Errorf("first entry = %+v", first)
	}
	if !first.Started || first.UUID != "6f1c2a6e-8a51-4b9e-9d0e-2f4b7b8f1a11" || got[1].Started {
		t.Errorf("start marks: %+v, %+v", first, got[1])
	}
	// That version wrote no accepted time: the id is remembered a whole
	// window from the upgrade.
	if want := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC); !first.Received.Equal(want) || !first.Accepted.Equal(clock()) {
		t.Errorf("received %v, accepted %v; want %v and the time it was read", first.Received, first.Accepted, want)
	}
	atts := got[1].Attachments
	if len(atts) != 2 || !atts[0].Stored() || atts[0].Path != ".cc-connect/attachments/ab/build.log" || !atts[0].Text ||
		atts[0].Size != 12 || atts[1].Refusal == "" {
		t.Errorf("attachments = %+v", atts)
	}
	if got[2].Kind != "new" {
		t.Errorf("kind = %q, want new", got[2].Kind)
	}
	for _, id := range []string{"C0123:1764504000.000100", "C0123:1764504010.000200", "C0123:1764504030.000400"} {
		if !seen.Has(SeenKey("slack-main", id)) {
			t.Errorf("%s not seen", id)
		}
	}
	// It keeps working in the new format from there: a message accepted
	// without a uuid gets one, which its start records.
	if got[1].UUID == "" {
		t.Fatal("a pending message has no uuid to be sent with")
	}
	if err := in.Ack("C0123:1764504000.000100", AckResult); err != nil {
		t.Fatal(err)
	}
	if err := in.MarkStarted("C0123:1764504020.000300", ""); err != nil {
		t.Fatal(err)
	}
	in.Close()
	again, err := Open(path, Limits{}, seen)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if p := again.Pending(); len(p) != 2 || !p[0].Started || p[0].UUID != got[1].UUID {
		t.Errorf("after reopening: %+v, want the second message started with uuid %s", p, got[1].UUID)
	}
}

// openState opens the seen set and one journal of a state dir, as a
// starting cc-connect does.
func openState(t *testing.T, dir string, now func() time.Time) (*Seen, *Inbox) {
	t.Helper()
	seen, err := OpenSeen(filepath.Join(dir, "seen.jsonl"), time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Open(filepath.Join(dir, "s.jsonl"), Limits{CompactBytes: 1}, seen)
	if err != nil {
		t.Fatal(err)
	}
	return seen, in
}

// TestSeenIsAsDurableAsTheEntry: an id is seen from the moment Append
// returns, with no write of its own, and stays seen for the window through
// every stop after that: a kill before the ack, before compaction moves
// the ids, before the journal is emptied, and after a clean close. Each
// kill is simulated by leaving the objects unclosed and opening the files
// afresh, which is what a SIGKILL leaves (every write is in the kernel).
func TestSeenIsAsDurableAsTheEntry(t *testing.T) {
	key := SeenKey("local", "m1")
	tests := []struct {
		name  string
		point string // where the first instance stops; "" = it acks and closes cleanly
		ack   bool
	}{
		{"killed after the accept", "", false},
		{"killed before the seen file", "compact: before the seen file", true},
		{"killed before emptying the journal", "compact: before emptying the journal", true},
		{"acked, compacted and closed", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := privateDir(t)
			now := time.Unix(1_800_000_000, 0)
			clock := func() time.Time { return now }
			seen, in := openState(t, dir, clock)
			e := entry("m1")
			e.Accepted = now
			if err := in.Append(e); err != nil {
				t.Fatal(err)
			}
			if !seen.Has(key) {
				t.Fatal("not seen once accepted")
			}
			if tt.ack {
				if tt.point != "" {
					killedAt = func(p string) bool { return p == tt.point }
					t.Cleanup(func() { killedAt = func(string) bool { return false } })
				}
				err := in.Ack("m1", AckResult)
				if tt.point != "" && !errors.Is(err, errKilled) {
					t.Fatalf("Ack = %v, want it stopped at %q", err, tt.point)
				}
				if tt.point == "" {
					if err != nil {
						t.Fatal(err)
					}
					in.Close()
					seen.Close()
					if fi, _ := os.Stat(filepath.Join(dir, "s.jsonl")); fi.Size() != 0 {
						t.Errorf("journal holds %d bytes after the compaction", fi.Size())
					}
				}
				killedAt = func(string) bool { return false }
			}

			now = now.Add(30 * time.Minute)
			seen2, in2 := openState(t, dir, clock)
			defer seen2.Close()
			defer in2.Close()
			if !seen2.Has(key) {
				t.Error("the accepted id is not seen after the restart")
			}
			if n := in2.Len(); n != map[bool]int{false: 1, true: 0}[tt.ack] {
				t.Errorf("pending after the restart = %d", n)
			}
			now = now.Add(31 * time.Minute)
			if seen2.Has(key) {
				t.Error("the id is still seen after the window")
			}
		})
	}
}

// TestClaimIsTheOneDuplicateCheck: a second copy of a message waits while
// the first is being accepted and is a duplicate once it is journaled; a
// copy of a message that was not accepted (ignored, refused) is not.
func TestClaimIsTheOneDuplicateCheck(t *testing.T) {
	seen, in := openState(t, privateDir(t), nil)
	defer seen.Close()
	defer in.Close()
	ctx := context.Background()
	key := SeenKey("local", "m1")

	first, err := seen.Claim(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		c, err := seen.Claim(ctx, key)
		if c != nil {
			c.Release()
		}
		second <- err
	}()
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	if _, err := seen.Claim(short, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a third copy while the first is being accepted: %v, want it to wait (here: until its ctx ends)", err)
	}
	cancel()
	select {
	case err := <-second:
		t.Fatalf("the second copy did not wait for the first: %v", err)
	default:
	}
	if err := in.Append(entry("m1")); err != nil {
		t.Fatal(err)
	}
	first.Release()
	if err := <-second; !errors.Is(err, ErrDuplicate) {
		t.Errorf("second copy after the first was journaled: %v, want ErrDuplicate", err)
	}

	other := SeenKey("local", "m2")
	c, err := seen.Claim(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	c.Release() // not journaled: ignored, say
	c, err = seen.Claim(ctx, other)
	if err != nil {
		t.Errorf("a copy of a message that was not accepted: %v, want a claim", err)
	} else {
		c.Release()
	}
}

// TestMarkSeenRecordsACommand: an id accepted without an entry is seen,
// survives a restart, and leaves nothing pending.
func TestMarkSeenRecordsACommand(t *testing.T) {
	dir := privateDir(t)
	seen, in := openState(t, dir, nil)
	if err := in.MarkSeen("local", "cmd1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if !seen.Has(SeenKey("local", "cmd1")) || in.Len() != 0 {
		t.Fatalf("seen %v, pending %d", seen.Has(SeenKey("local", "cmd1")), in.Len())
	}
	// killed: reopened without a close
	seen2, in2 := openState(t, dir, nil)
	defer seen2.Close()
	defer in2.Close()
	if !seen2.Has(SeenKey("local", "cmd1")) {
		t.Error("a command's id is not seen after a restart")
	}
}

// TestOpenSeenRemovesACutRewrite: the temp file of a rewrite that a kill
// cut short is removed at the next open, and the set is whole.
func TestOpenSeenRemovesACutRewrite(t *testing.T) {
	dir := privateDir(t)
	path := filepath.Join(dir, "seen.jsonl")
	s, err := OpenSeen(path, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := keepOne(s, "k1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	stale := filepath.Join(dir, ".seen.jsonl.tmp-123")
	if err := os.WriteFile(stale, []byte(`{"id":"half`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = OpenSeen(path, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the cut rewrite's temp file is still there: %v", err)
	}
	if !s.Has("k1") {
		t.Error("an id was lost")
	}
}
