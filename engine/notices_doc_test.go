package engine

import (
	"os"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/engine/render"
)

// TestClusterDocListsNotices: docs/cluster.md lists what a thread can see
// when a host fails, restarts or hands a conversation over, with the
// code's own words ("…" where they vary). A notice whose text changes here
// must change there.
func TestClusterDocListsNotices(t *testing.T) {
	raw, err := os.ReadFile("../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	const v = "\x00" // what varies
	for _, text := range []string{
		movedText(v, 2, false, ""),
		movedText(v, 1, false, ""),
		movedText(v, 2, true, ""),
		movedText(v, 2, false, v),
		render.ShutdownText,
		render.RestartQueuedText,
		render.Queued(0)[:len("Queued (position ")] + v + render.Queued(0)[len("Queued (position 0"):],
		render.Late(v, v),
		render.NoticeNotFound,
		render.NoticeWaiting,
		render.StillWaits(v),
	} {
		for _, part := range strings.Split(text, v) {
			part = strings.Trim(part, "“”")
			if len(part) > 3 && !strings.Contains(doc, part) {
				t.Errorf("docs/cluster.md does not list the notice %q (missing %q)", strings.ReplaceAll(text, v, "…"), part)
			}
		}
	}
}
