package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/internal/testlog"
)

func startTrail(t *testing.T, o Options) *Trail {
	t.Helper()
	tr := New(o)
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// lines reads every line of the trail's files, oldest first, failing on
// one that does not parse.
func lines(t *testing.T, path string) []activity.Event {
	t.Helper()
	var out []activity.Event
	bad, err := Read(path, Filter{}, func(e activity.Event) error { out = append(out, e); return nil })
	if err != nil || bad != 0 {
		t.Fatalf("reading %s: %d bad lines, %v", path, bad, err)
	}
	return out
}

func TestTrailIsPrivateAndKeepsOnlyKeptEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit", "audit.jsonl")
	tr := startTrail(t, Options{Path: path})
	tr.Record(activity.Event{Kind: activity.Asked, Conversation: "slack/C1/T1", User: "U1", Text: "hello"})
	tr.Record(activity.Event{Kind: activity.Text, Conversation: "slack/C1/T1", Text: "streamed"}) // live: not kept
	tr.Record(activity.Event{Kind: activity.Tool, Conversation: "slack/C1/T1", Tool: "Bash", Input: "ls"})
	tr.Flush()
	got := lines(t, path)
	if len(got) != 2 || got[0].Kind != activity.Asked || got[1].Kind != activity.Tool || got[0].Time.IsZero() {
		t.Fatalf("trail holds %+v, want asked then tool, with times", got)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %04o, want %04o", p, fi.Mode().Perm(), want)
		}
	}
}

func TestTrailRefusesAFolderOpenToOthers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	err := New(Options{Path: filepath.Join(dir, "audit.jsonl")}).Start()
	if err == nil || !strings.Contains(err.Error(), "audit.path") {
		t.Fatalf("Start in a 0755 folder = %v, want an error naming audit.path", err)
	}
}

func TestTrailRotatesBySizeAndKeepsABoundedNumber(t *testing.T) {
	for _, keep := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a", "audit.jsonl")
			tr := startTrail(t, Options{Path: path, MaxSize: 400, Keep: keep})
			const n = 60
			for i := range n {
				tr.Record(activity.Event{Kind: activity.Asked, Conversation: "local/c/t", Text: fmt.Sprintf("message %03d", i)})
			}
			tr.Flush()
			files := Files(path)
			if len(files) != keep+1 {
				t.Fatalf("files %v, want the current one and %d old", files, keep)
			}
			if _, err := os.Stat(OldPath(path, keep+1)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s exists past keep: %v", OldPath(path, keep+1), err)
			}
			for _, f := range files {
				fi, err := os.Stat(f)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Size() > 400 || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: size %d (max 400), mode %04o", f, fi.Size(), fi.Mode().Perm())
				}
			}
			// What is kept is the newest events, in order, without a gap.
			got := lines(t, path)
			if len(got) == 0 || got[len(got)-1].Text != fmt.Sprintf("message %03d", n-1) {
				t.Fatalf("last kept event %+v, want message %03d", got, n-1)
			}
			first := n - len(got)
			for i, e := range got {
				if want := fmt.Sprintf("message %03d", first+i); e.Text != want {
					t.Fatalf("event %d is %q, want %q", i, e.Text, want)
				}
			}
		})
	}
}

// TestTrailConcurrentRecords: many goroutines record at once (as
// conversations do); every event is written once, as a whole line, and
// Record never waits on the disk.
func TestTrailConcurrentRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "audit.jsonl")
	tr := startTrail(t, Options{Path: path, MaxSize: 1 << 30})
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tr.Record(activity.Event{Kind: activity.Tool, Conversation: fmt.Sprintf("local/c/%d", w), Input: fmt.Sprintf("%d", i)})
			}
		}()
	}
	wg.Wait()
	tr.Flush()
	got := lines(t, path)
	if len(got) != writers*each {
		t.Fatalf("%d events written, want %d", len(got), writers*each)
	}
	next := map[string]int{}
	for _, e := range got {
		if want := fmt.Sprintf("%d", next[e.Conversation]); e.Input != want {
			t.Fatalf("%s: event %s out of order, want %s", e.Conversation, e.Input, want)
		}
		next[e.Conversation]++
	}
}

// TestTrailQueueLimitCountsWhatIsLost: past its queue limit the trail
// drops events rather than holding a conversation, and says how many.
func TestTrailQueueLimitCountsWhatIsLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "audit.jsonl")
	tr := New(Options{Path: path, QueueLimit: 3})
	for i := range 5 { // not started: nothing drains the queue
		tr.Record(activity.Event{Kind: activity.Asked, Text: fmt.Sprint(i)})
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	tr.Flush()
	tr.Close()
	got := lines(t, path)
	if len(got) != 4 || got[0].Kind != Lost || !strings.HasPrefix(got[0].Outcome, "2 events") {
		t.Fatalf("trail %+v, want a lost line for 2 events then 3 events", got)
	}
}

// TestTrailFullDisk: a write that fails is one clear log line; Record
// goes on returning at once, the file keeps only whole lines, and once
// there is room again the trail says how many events it lost.
func TestTrailFullDisk(t *testing.T) {
	testenv.NeedRoot(t, "mounts a small tmpfs to fill")
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=64k,mode=0700"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	var logs testlog.Buffer
	path := filepath.Join(dir, "audit", "audit.jsonl")
	tr := startTrail(t, Options{Path: path, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	tr.Record(activity.Event{Kind: activity.Asked, Text: "before"})
	tr.Flush()

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := bytes.Repeat([]byte{'x'}, 4096); ; {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			if len(chunk) == 1 {
				break
			}
			chunk = chunk[:1]
		}
	}
	f.Close()

	for i := range 3 {
		tr.Record(activity.Event{Kind: activity.Tool, Input: strings.Repeat("y", 5000) + fmt.Sprint(i)})
		tr.Flush()
	}
	recs := logs.Records("Writing the audit trail failed; its events are lost until a write succeeds (the conversations go on)")
	if len(recs) != 1 || !strings.Contains(fmt.Sprint(recs[0]["hint"]), "disk is full") {
		t.Fatalf("log has %d failure records (%v), want one saying the disk is full:\n%s", len(recs), recs, logs.String())
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	tr.Record(activity.Event{Kind: activity.Asked, Text: "after"})
	tr.Flush()
	got := lines(t, path) // fails on a cut line
	// The lost lines (one, or one per flush that wrote only it) count
	// the three events; nothing else of the full disk's time is there.
	lost := 0
	for _, e := range got[1 : len(got)-1] {
		var n int
		if _, err := fmt.Sscanf(e.Outcome, "%d events were not written", &n); e.Kind != Lost || err != nil {
			t.Fatalf("between the events: %+v, want only lost lines", e)
		}
		lost += n
	}
	if got[0].Text != "before" || got[len(got)-1].Text != "after" || lost != 3 {
		t.Fatalf("trail after the disk freed: %+v, want before, lost lines counting 3, after", got)
	}
	if len(logs.Records("The audit trail is written again")) != 1 {
		t.Errorf("no record that the trail is written again:\n%s", logs.String())
	}
}

func TestFilterMatch(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	e := activity.Event{Time: at, Kind: activity.Asked, Conversation: "slack/C1/T1", User: "U1", UserName: "Alice"}
	for _, tc := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"zero", Filter{}, true},
		{"conversation", Filter{Conversation: "slack/C1/T1"}, true},
		{"channel prefix", Filter{Conversation: "slack/C1"}, true},
		{"channel prefix with slash", Filter{Conversation: "slack/C1/"}, true},
		{"not a token prefix", Filter{Conversation: "slack/C"}, false},
		{"other conversation", Filter{Conversation: "slack/C2/T1"}, false},
		{"user id", Filter{User: "U1"}, true},
		{"user name any case", Filter{User: "alice"}, true},
		{"other user", Filter{User: "bob"}, false},
		{"since before", Filter{Since: at.Add(-time.Minute)}, true},
		{"since at", Filter{Since: at}, true},
		{"since after", Filter{Since: at.Add(time.Second)}, false},
		{"until after", Filter{Until: at.Add(time.Second)}, true},
		{"until at excluded", Filter{Until: at}, false},
		{"kind", Filter{Kinds: []activity.Kind{activity.Tool, activity.Asked}}, true},
		{"other kind", Filter{Kinds: []activity.Kind{activity.Tool}}, false},
		{"all at once", Filter{Conversation: "slack/C1", User: "U1", Since: at, Until: at.Add(time.Hour), Kinds: []activity.Kind{activity.Asked}}, true},
	} {
		if got := tc.f.Match(e); got != tc.want {
			t.Errorf("%s: Match = %t, want %t", tc.name, got, tc.want)
		}
	}
}

func TestReadSkipsCutLinesAndSpansRotatedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	line := func(text string) string {
		b, _ := json.Marshal(activity.Event{Kind: activity.Asked, Text: text})
		return string(b) + "\n"
	}
	os.WriteFile(OldPath(path, 2), []byte(line("one")), 0o600)
	os.WriteFile(OldPath(path, 1), []byte(line("two")+`{"kind":"ask`+"\n"), 0o600)
	os.WriteFile(path, []byte(line("three")+line("four")[:10]), 0o600)
	var got []string
	bad, err := Read(path, Filter{}, func(e activity.Event) error { got = append(got, e.Text); return nil })
	if err != nil || bad != 2 || strings.Join(got, ",") != "one,two,three" {
		t.Fatalf("Read = %v, %d bad, %v; want one,two,three with 2 bad", got, bad, err)
	}
	if bad, err := Read(filepath.Join(t.TempDir(), "none.jsonl"), Filter{}, nil); bad != 0 || err != nil {
		t.Fatalf("Read of a missing trail = %d, %v", bad, err)
	}
}

func TestFormat(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		e    activity.Event
		want string
	}{
		{activity.Event{Time: at, Kind: activity.Asked, Conversation: "slack/C1/T1", User: "U1", UserName: "alice", Text: "fix\nthe bug"},
			"2026-12-07T12:00:00Z  asked      slack/C1/T1  alice (U1): fix the bug"},
		{activity.Event{Time: at, Kind: activity.Tool, Conversation: "local/c/t", Tool: "Bash", Input: "ls -la"},
			"2026-12-07T12:00:00Z  tool       local/c/t: Bash ls -la"},
		{activity.Event{Time: at, Kind: activity.Answered, Conversation: "local/c/t", User: "U2", Tool: "Write", Choice: "allow", Outcome: "Allowed by bob"},
			"2026-12-07T12:00:00Z  answered   local/c/t  U2: Write → allow Allowed by bob"},
		{activity.Event{Time: at, Kind: activity.Lease, Binding: "team", Host: "h2", Outcome: "taken"},
			"2026-12-07T12:00:00Z  lease      team: host h2 taken"},
	} {
		if got := Format(tc.e); got != tc.want {
			t.Errorf("Format =\n%q\nwant\n%q", got, tc.want)
		}
	}
}
