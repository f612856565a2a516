package inbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/workspace"
)

func entry(id string) Entry {
	return Entry{
		ID:       id,
		Platform: "local", Channel: "c", Thread: "t",
		UserID:   "u1",
		Text:     "message " + id,
		Received: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

func ids(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func openT(t *testing.T, path string, l Limits) *Inbox {
	t.Helper()
	in, err := Open(path, l, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

func TestInboxSurvivesReopenInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox", "s.jsonl")
	in := openT(t, path, Limits{})
	for _, id := range []string{"a", "b", "c"} {
		e := entry(id)
		e.UUID = "uuid-" + id
		e.DM = id == "c"
		e.Seq = uint64(len(id) * 1000) // any value; it must come back
		e.Fence, e.StreamSeq = 3, uint64(len(id)*10)
		if id == "b" {
			e.Checks = []string{"root", "gap"}
		}
		if id == "c" {
			e.Seq = 1<<63 + 7 // and the largest do too (no float on the way)
		}
		if err := in.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.MarkStarted("a", ""); err != nil {
		t.Fatal(err)
	}
	if err := in.Ack("a", AckResult); err != nil {
		t.Fatal(err)
	}
	if err := in.MarkStarted("b", ""); err != nil {
		t.Fatal(err)
	}
	if err := in.MarkReplying("b", nil, ""); err != nil {
		t.Fatal(err)
	}
	in.Close()

	again := openT(t, path, Limits{})
	got := again.Pending()
	if strings.Join(ids(got), ",") != "b,c" {
		t.Fatalf("pending after reopen = %v, want [b c]", ids(got))
	}
	if !got[0].Started || !got[0].Replying || got[0].UUID != "uuid-b" || got[1].Started || got[1].UUID != "uuid-c" {
		t.Errorf("marks lost: %+v", got)
	}
	if strings.Join(got[0].Checks, ",") != "root,gap" || len(got[1].Checks) != 0 {
		t.Errorf("checks lost: %q, %q", got[0].Checks, got[1].Checks)
	}
	if got[0].Fence != 3 || got[0].StreamSeq != 10 {
		t.Errorf("cluster fence and stream sequence lost: %d, %d", got[0].Fence, got[0].StreamSeq)
	}
	if got[0].Seq != 1000 || got[1].Seq != 1<<63+7 {
		t.Errorf("platform order lost: %d, %d", got[0].Seq, got[1].Seq)
	}
	if got[1].Text != "message c" || got[1].Thread != "t" || got[1].Platform != "local" || !got[1].DM || got[0].DM {
		t.Errorf("entry content lost: %+v", got[1])
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestInboxSteeredSurvivesReopen: a message written into another's
// running turn comes back started, with its uuid and the turn it went
// into, after a reopen.
func TestInboxSteeredSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox", "s.jsonl")
	in := openT(t, path, Limits{})
	for _, id := range []string{"a", "b"} {
		if err := in.Append(entry(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.MarkStarted("a", ""); err != nil {
		t.Fatal(err)
	}
	if err := in.MarkSteered("b", "a"); err != nil {
		t.Fatal(err)
	}
	want := in.Pending()[1].UUID
	in.Close()
	got := openT(t, path, Limits{}).Pending()
	if len(got) != 2 || got[0].SteeredInto != "" || !got[1].Started || got[1].SteeredInto != "a" || got[1].UUID != want || want == "" {
		t.Errorf("pending after reopen = %+v, want b started and steered into a with uuid %q", got, want)
	}
}

// TestInboxStartedAgainUnderANewUUID: a message sent again under a new
// uuid (MarkStarted with a uuid) carries it from then on, after a reopen too; its
// first uuid is gone.
func TestInboxStartedAgainUnderANewUUID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox", "s.jsonl")
	in := openT(t, path, Limits{})
	e := entry("a")
	e.UUID = "uuid-first"
	if err := in.Append(e); err != nil {
		t.Fatal(err)
	}
	if err := in.MarkStarted("a", ""); err != nil {
		t.Fatal(err)
	}
	if err := in.MarkStarted("a", "uuid-again"); err != nil {
		t.Fatal(err)
	}
	if got := in.Pending()[0]; got.UUID != "uuid-again" || !got.Started {
		t.Errorf("pending = %+v, want started under uuid-again", got)
	}
	if err := in.MarkStarted("a", ""); err != nil { // started again, under the uuid it has now
		t.Fatal(err)
	}
	in.Close()
	got := openT(t, path, Limits{}).Pending()
	if len(got) != 1 || got[0].UUID != "uuid-again" || !got[0].Started {
		t.Errorf("pending after reopen = %+v, want a started under uuid-again", got)
	}
}

// TestInboxSteeredMarksSurviveReopen: that the CLI took a steered message
// in (MarkTakenIn) survives a reopen, and a start of its own (MarkStarted:
// the turn ended without it) takes the steered marks away, in memory as
// after a reopen.
func TestInboxSteeredMarksSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox", "s.jsonl")
	in := openT(t, path, Limits{})
	for _, id := range []string{"a", "b", "c"} {
		if err := in.Append(entry(id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"b", "c"} {
		if err := in.MarkSteered(id, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.MarkTakenIn("b"); err != nil {
		t.Fatal(err)
	}
	if err := in.MarkTakenIn("c"); err != nil {
		t.Fatal(err)
	}
	if err := in.MarkStarted("c", ""); err != nil {
		t.Fatal(err)
	}
	check := func(when string, got []Entry) {
		t.Helper()
		if len(got) != 3 || got[1].SteeredInto != "a" || !got[1].TakenIn || got[2].SteeredInto != "" || got[2].TakenIn || !got[2].Started {
			t.Errorf("%s: pending = %+v, want b steered into a and taken in, c started on its own", when, got)
		}
	}
	check("before the reopen", in.Pending())
	in.Close()
	check("after the reopen", openT(t, path, Limits{}).Pending())
}

// TestInboxTruncatesWhenEmpty: a journal with nothing pending keeps its
// acknowledged records until it reaches CompactBytes (or is closed), then
// is emptied; what comes after is kept.
func TestInboxTruncatesWhenEmpty(t *testing.T) {
	path := journalPath(t)
	lazy := openT(t, filepath.Join(privateDir(t), "lazy.jsonl"), Limits{})
	if err := lazy.Append(entry("a")); err != nil {
		t.Fatal(err)
	}
	if err := lazy.Ack("a", AckResult); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(lazy.Path()); fi.Size() == 0 {
		t.Error("a small journal was emptied at its ack, want it kept until CompactBytes")
	}
	lazy.Close()
	if fi, _ := os.Stat(lazy.Path()); fi.Size() != 0 {
		t.Errorf("closed with nothing pending: %d bytes, want 0", fi.Size())
	}

	in := openT(t, path, Limits{CompactBytes: 1})
	for i := 0; i < 3; i++ {
		id := fmt.Sprint(i)
		if err := in.Append(entry(id)); err != nil {
			t.Fatal(err)
		}
		if err := in.Ack(id, AckCancel); err != nil {
			t.Fatal(err)
		}
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Errorf("journal is %d bytes with nothing pending, want 0", fi.Size())
	}
	if err := in.Append(entry("next")); err != nil {
		t.Fatal(err)
	}
	in.Close()
	if got := ids(openT(t, path, Limits{}).Pending()); strings.Join(got, ",") != "next" {
		t.Errorf("pending = %v, want [next]", got)
	}
}

// TestAckUnsynced: the message leaves Pending at the write, an unknown id
// is refused, and the compaction an Ack would make waits for the fsync
// step, which the caller runs; Close waits for that step.
func TestAckUnsynced(t *testing.T) {
	path := journalPath(t)
	in := openT(t, path, Limits{CompactBytes: 1})
	if _, err := in.AckUnsynced("nope", AckResult); !errors.Is(err, ErrUnknown) {
		t.Errorf("AckUnsynced of an unknown id = %v, want ErrUnknown", err)
	}
	for _, id := range []string{"a", "b"} {
		if err := in.Append(entry(id)); err != nil {
			t.Fatal(err)
		}
	}
	sync, err := in.AckUnsynced("a", AckResult)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(in.Pending()); strings.Join(got, ",") != "b" {
		t.Errorf("pending after AckUnsynced(a) = %v, want [b]", got)
	}
	if err := sync(); err != nil {
		t.Fatal(err)
	}
	syncB, err := in.AckUnsynced("b", AckResult)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() == 0 {
		t.Error("the journal was emptied before the ack's fsync step ran")
	}
	closed := make(chan error, 1)
	go func() { closed <- in.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the ack's fsync step ran", err)
	default:
	}
	if err := syncB(); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Errorf("journal is %d bytes with nothing pending, want 0", fi.Size())
	}
}

func TestInboxLimits(t *testing.T) {
	t.Run("pending count", func(t *testing.T) {
		in := openT(t, journalPath(t), Limits{MaxPending: 2})
		for _, id := range []string{"a", "b"} {
			if err := in.Append(entry(id)); err != nil {
				t.Fatal(err)
			}
		}
		if err := in.Append(entry("c")); !errors.Is(err, ErrFull) {
			t.Fatalf("third append: %v, want ErrFull", err)
		}
		if got := ids(in.Pending()); strings.Join(got, ",") != "a,b" {
			t.Errorf("accepted messages changed: %v", got)
		}
		if err := in.Ack("a", AckResult); err != nil {
			t.Fatal(err)
		}
		if err := in.Append(entry("c")); err != nil {
			t.Errorf("append after an ack: %v", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		in := openT(t, journalPath(t), Limits{MaxBytes: 800})
		big := entry("big")
		big.Text = strings.Repeat("x", 400)
		if err := in.Append(big); err != nil {
			t.Fatal(err)
		}
		if err := in.Append(big); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("same id again: %v, want ErrDuplicate", err)
		}
		big.ID = "big2"
		if err := in.Append(big); !errors.Is(err, ErrFull) {
			t.Fatalf("over the byte limit: %v, want ErrFull", err)
		}
		if in.Len() != 1 {
			t.Errorf("Len = %d, want 1", in.Len())
		}
	})
}

func TestInboxFailsClosed(t *testing.T) {
	good := `{"op":"add","entry":{"id":"a","target":{"Platform":"p","Channel":"c","Thread":"","MessageID":""},"user_id":"u","text":"x","received":"2026-11-30T12:00:00Z"}}` + "\n"
	tests := []struct {
		name    string
		content string
		limits  Limits
		want    error
	}{
		{"garbage line", good + "not json\n" + good, Limits{}, ErrCorrupt},
		{"ack of unknown id", `{"op":"ack","id":"zzz"}` + "\n", Limits{}, ErrCorrupt},
		{"unknown op", `{"op":"explode"}` + "\n", Limits{}, ErrCorrupt},
		{"duplicate add", good + good, Limits{}, ErrCorrupt},
		{"oversized", good + strings.Repeat(" ", 2000) + "\n", Limits{MaxBytes: 1000}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := journalPath(t)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, tt.limits, nil)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q should name the file", err)
			}
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Errorf("the file was changed; it must be kept for inspection")
			}
		})
	}
}

func TestInboxDropsTornTail(t *testing.T) {
	path := journalPath(t)
	in := openT(t, path, Limits{})
	if err := in.Append(entry("a")); err != nil {
		t.Fatal(err)
	}
	in.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	f.WriteString(`{"op":"add","entry":{"id":"b","te`)
	f.Close()
	again := openT(t, path, Limits{})
	if got := ids(again.Pending()); strings.Join(got, ",") != "a" {
		t.Fatalf("pending = %v, want [a]", got)
	}
	if err := again.Append(entry("b")); err != nil {
		t.Fatal(err)
	}
	again.Close()
	if got := ids(openT(t, path, Limits{}).Pending()); strings.Join(got, ",") != "a,b" {
		t.Fatalf("after re-append: %v, want [a b]", got)
	}
}

func TestSeenRemembersAcrossReopenWithinWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seen", "slack.jsonl")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := OpenSeen(path, time.Hour, clock)
	if err != nil {
		t.Fatal(err)
	}
	if s.Has("C1:1.0") {
		t.Fatal("new set claims to have an id")
	}
	if err := keepOne(s, "C1:1.0"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Minute)
	if err := keepOne(s, "C1:2.0"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = OpenSeen(path, time.Hour, clock)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Has("C1:1.0") || !s.Has("C1:2.0") {
		t.Fatal("ids forgotten across reopen")
	}
	now = now.Add(45 * time.Minute) // 75 min after the first, 45 after the second
	if s.Has("C1:1.0") {
		t.Error("id older than the window still remembered")
	}
	if !s.Has("C1:2.0") {
		t.Error("id within the window forgotten")
	}
	s.Close()
	s, err = OpenSeen(path, time.Hour, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "C1:1.0") {
		t.Errorf("expired id not compacted away: %s", b)
	}
}

func TestSeenCompactsWhileRunning(t *testing.T) {
	path := filepath.Join(privateDir(t), "seen.jsonl")
	now := time.Unix(1_800_000_000, 0)
	s, err := OpenSeen(path, time.Minute, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 3000; i++ {
		now = now.Add(time.Second)
		if err := keepOne(s, fmt.Sprint("id-", i)); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	if lines := strings.Count(string(b), "\n"); lines > 2*60+1024+1 {
		t.Errorf("file holds %d records with a 1-minute window; compaction did not run", lines)
	}
	if !s.Has("id-2999") {
		t.Error("latest id lost by compaction")
	}
}

// privateDir is a new folder as cc-connect makes its state folders: 0700.
// (t.TempDir's own folders are open to others, which Open refuses.)
func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "inbox")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// journalPath is the path of a new journal in a private folder.
func journalPath(t *testing.T) string { return filepath.Join(privateDir(t), "s.jsonl") }

// TestJournalsRefusePlantedLinks: a link planted where a journal or the
// seen ids go is refused, and its target is left as it was (a target
// without a final newline would otherwise lose its "torn tail").
func TestJournalsRefusePlantedLinks(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "notes")
	const precious = "no trailing newline"
	if err := os.WriteFile(victim, []byte(precious), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := privateDir(t)
	journal, seen := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "seen.jsonl")
	for _, p := range []string{journal, seen} {
		if err := os.Symlink(victim, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(journal, Limits{}, nil); !errors.Is(err, workspace.ErrSymlink) {
		t.Errorf("Open over a link = %v, want ErrSymlink", err)
	}
	if _, err := OpenSeen(seen, time.Hour, nil); !errors.Is(err, workspace.ErrSymlink) {
		t.Errorf("OpenSeen over a link = %v, want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != precious {
		t.Errorf("the link's target became %q", b)
	}
}

// keepOne keeps one key, accepted now, as a journal's compaction does.
func keepOne(s *Seen, key string) error { return s.keep(map[string]time.Time{key: s.now()}) }

// TestReplyMarksSurviveReopen: the messages a reply streams into, the
// messages and tail of the reply mark, its settlement (and that its reply
// was replicated before), and each part recorded as posted
// come back after a reopen, the latest stream record winning; an entry
// appended afresh carries none of them.
func TestReplyMarksSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox", "s.jsonl")
	in := openT(t, path, Limits{})
	for _, id := range []string{"a", "b"} {
		if err := in.Append(entry(id)); err != nil {
			t.Fatal(err)
		}
	}
	one := []Posted{{Channel: "C1", Thread: "T1", ID: "m1"}}
	two := append(slices.Clone(one), Posted{Channel: "C1", Thread: "T1", ID: "m2"})
	steps := []func() error{
		func() error { return in.MarkStreamed("a", one) },
		func() error { return in.MarkStreamed("a", two) },
		func() error { return in.MarkReplying("a", two, "\n[ctx: 3%]") },
		func() error { return in.MarkSettled("a", true) },
		// Recovery marks the reply again before it posts: the
		// settlement stays.
		func() error { return in.MarkReplying("a", nil, "\n[ctx: 3%]") },
		func() error { return in.MarkPart("b", 0) },
		func() error { return in.MarkPart("b", 2) },
		func() error { return in.MarkPart("b", 2) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := in.MarkPart("nobody", 1); !errors.Is(err, ErrUnknown) {
		t.Errorf("a part of an unknown message: %v, want ErrUnknown", err)
	}
	in.Close()

	got := openT(t, path, Limits{}).Pending()
	if len(got) != 2 {
		t.Fatalf("pending %v", ids(got))
	}
	a, b := got[0], got[1]
	if !slices.Equal(a.Streamed, two) || !a.Replying || !a.Settled || !a.Replicated || a.ReplyTail != "\n[ctx: 3%]" || len(a.Parts) != 0 {
		t.Errorf("a after reopen: %+v", a)
	}
	if !slices.Equal(b.Parts, []int{0, 2}) || b.Replying || b.Settled || b.Replicated || len(b.Streamed) != 0 {
		t.Errorf("b after reopen: %+v", b)
	}
}
