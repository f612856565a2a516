package conv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadRecordsSeesWhatTheStoreSaves reads back what the engine's own
// store writes, so a field renamed in the record shows up here.
func TestReadRecordsSeesWhatTheStoreSaves(t *testing.T) {
	dir := t.TempDir()
	st := NewStore(dir)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := Record{Key: "slack/C1/1.2", Platform: "slack", Channel: "C1", Thread: "1.2", Workspace: "/srv/ws",
		SessionID: "11111111-1111-4111-8111-111111111111", Model: "claude-sonnet", LastActivity: at,
		ContextPct: 42, TotalCostUSD: 0.25}
	if err := st.Save(rec); err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Dir(st.Path(rec.Key))
	for name, data := range map[string]string{
		"zz.json":                          "{not json",
		".aa.json.tmp-1":                   "{}",
		"bb.json.corrupt-20260101T000000Z": "x",
	} {
		if err := os.WriteFile(filepath.Join(sessions, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	got, err := ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d records, want the saved one and the corrupt one: %+v", len(got), got)
	}
	want := RecordInfo{File: st.Path(rec.Key), Key: rec.Key, Platform: "slack", Channel: "C1", Thread: "1.2",
		Workspace: "/srv/ws", SessionID: rec.SessionID, Model: "claude-sonnet", LastActivity: at,
		ContextPct: 42, TotalCostUSD: 0.25}
	var saved, corrupt RecordInfo
	for _, r := range got {
		if r.File == want.File {
			saved = r
		} else {
			corrupt = r
		}
	}
	if saved.Err != nil || !saved.LastActivity.Equal(at) {
		t.Fatalf("saved record read as %+v", saved)
	}
	saved.LastActivity = at
	if saved != want {
		t.Errorf("saved record:\n got %+v\nwant %+v", saved, want)
	}
	if filepath.Base(corrupt.File) != "zz.json" || corrupt.Err == nil || !strings.Contains(corrupt.Err.Error(), "does not parse") {
		t.Errorf("corrupt record read as %+v", corrupt)
	}
}

func TestReadRecordsWithoutState(t *testing.T) {
	got, err := ReadRecords(filepath.Join(t.TempDir(), "missing"))
	if err != nil || len(got) != 0 {
		t.Fatalf("ReadRecords of a missing dir = %v, %v; want none, nil", got, err)
	}
}

// TestRecordCache: the cache reads a record again only when its file
// changed, which the store's saves always do (a new file renamed over the
// old); a file gone is gone from the listing, and a corrupt one is read
// again each time.
func TestRecordCache(t *testing.T) {
	dir := t.TempDir()
	st := NewStore(dir)
	save := func(key string, pct int) {
		t.Helper()
		if err := st.Save(Record{Key: key, Platform: "slack", Channel: "C1", ContextPct: pct}); err != nil {
			t.Fatal(err)
		}
	}
	var c RecordCache
	read := func() map[string]RecordInfo {
		t.Helper()
		got, err := c.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]RecordInfo{}
		for _, r := range got {
			out[filepath.Base(r.File)] = r
		}
		return out
	}
	save("slack/C1/1", 10)
	save("slack/C1/2", 20)
	first := filepath.Base(st.Path("slack/C1/1"))
	if got := read(); len(got) != 2 || got[first].ContextPct != 10 {
		t.Fatalf("first listing = %+v", got)
	}

	// Rewritten in place, same size and time: the same file to the cache,
	// which does not read it again (the store never writes so).
	path := st.Path("slack/C1/1")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), `"context_pct":10`, `"context_pct":99`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := read(); got[first].ContextPct != 10 {
		t.Fatalf("an unchanged file was read again: %+v", got[first])
	}
	if got, _ := ReadRecords(dir); len(got) != 2 {
		t.Fatalf("ReadRecords = %+v", got)
	}

	// A save is a new file: read again. A file gone leaves the listing.
	save("slack/C1/1", 30)
	if err := os.Remove(st.Path("slack/C1/2")); err != nil {
		t.Fatal(err)
	}
	if got := read(); len(got) != 1 || got[first].ContextPct != 30 {
		t.Fatalf("after a save and a removal = %+v", got)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "zz.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got := read(); got["zz.json"].Err == nil {
			t.Fatalf("a corrupt record read as %+v", got["zz.json"])
		}
	}
}
