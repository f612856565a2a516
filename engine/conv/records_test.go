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
