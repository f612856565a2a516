package agentproc

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFilePatchesFromCapture: the decoder keeps the file tools' results of
// captures/checkpoint_turns, and FilePatchOf reads the Writes as created
// files with their content and the Edit as its hunk; the Read's result is
// not kept.
func TestFilePatchesFromCapture(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "captures", "checkpoint_turns", "stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var dec decoder
	var got []FilePatch
	kept := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		for _, ev := range dec.decodeLine(sc.Bytes()).events {
			tr, ok := ev.(ToolResult)
			if !ok || tr.Structured == nil {
				continue
			}
			kept++
			if p, ok := FilePatchOf(tr.Structured); ok {
				got = append(got, p)
			}
		}
	}
	if kept != 3 {
		t.Errorf("kept %d tool results, want the 3 of Write, Edit, Write (not the Read's)", kept)
	}
	if len(got) != 3 {
		t.Fatalf("patches %+v, want 3", got)
	}
	if p := got[0]; p.Path != "/work/proj/new.txt" || !p.Created || p.Content != "a\nb\nc" {
		t.Errorf("first Write %+v", p)
	}
	if p := got[1]; p.Path != "/work/proj/keep.txt" || p.Created || len(p.Hunks) != 1 ||
		!slices.Equal(p.Hunks[0].Lines, []string{" one", "-two", "+TWO", "+three"}) || p.Hunks[0].OldLines != 2 || p.Hunks[0].NewLines != 3 {
		t.Errorf("Edit %+v", p)
	}
	if p := got[2]; p.Path != "/work/proj/other.txt" || !p.Created || p.Content != "x\ny" {
		t.Errorf("second Write %+v", p)
	}
	for _, bad := range []string{``, `{}`, `{"filePath":"/a","structuredPatch":[]}`, `not json`} {
		if p, ok := FilePatchOf([]byte(bad)); ok {
			t.Errorf("FilePatchOf(%q) = %+v, want none", bad, p)
		}
	}
}
