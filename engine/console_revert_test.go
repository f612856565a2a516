package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/engine/render"
)

// TestConsoleChangesAndRevert: the console reads the last turn's changes
// as !status does (files, lines, the kept diff, the refusal !revert would
// give), for people the binding allows; its Revert is the summary button's
// press through HandleAction: bob's is refused by the gate in the thread
// and its outcome published,
// alice's restores the file and publishes its outcome under the id Revert
// returned, a second press is refused with !revert's reason, published
// too; a conversation no longer in memory reads the same from its record.
func TestConsoleChangesAndRevert(t *testing.T) {
	h, _, _, act := newCheckpointHarness(t)
	ctx := context.Background()
	file := filepath.Join(h.ws, "new.txt")
	h.say("alice", "T1", "[[WRITE:new.txt:a\nb\nc]]")
	waitSummary(t, h, 1)
	h.waitIdle()
	v := h.e.Console()

	c, ok := v.Changes(t1Key, "bob")
	if !ok || !slices.Equal(c.Files, []string{"new.txt"}) || c.Added != 3 || c.Removed != 0 || c.Refusal != "" || c.Turn == "" {
		t.Fatalf("changes %+v, %v; want new.txt (+3 −0), revertible", c, ok)
	}
	if want := "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n"; !c.DiffKept || c.Diff != want {
		t.Errorf("diff %q (kept %v), want %q", c.Diff, c.DiffKept, want)
	}
	if _, ok := v.Changes(t1Key, "mallory"); ok {
		t.Error("someone the binding does not allow reads the changes")
	}

	outcome := func(id string) activity.Event {
		t.Helper()
		var got activity.Event
		pollFor(t, "the reverted event of press "+id, func() bool {
			for _, e := range act.of(activity.Reverted) {
				if e.Request == id {
					got = e
					return true
				}
			}
			return false
		})
		return got
	}

	bobs, err := v.Revert(ctx, t1Key, "bob", "bob", c.Turn)
	if err != nil {
		t.Fatalf("bob's press: %v", err)
	}
	h.rec.waitSend(t, render.RevertNotApprover("bob"))
	if e := outcome(bobs); e.Outcome != "refused: "+render.RevertNotApprover("bob") {
		t.Errorf("the outcome of bob's press %q, want the gate's refusal", e.Outcome)
	}
	h.waitIdle()
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("new.txt after bob's press: %v", err)
	}

	id, err := v.Revert(ctx, t1Key, "alice", "alice", c.Turn)
	if err != nil {
		t.Fatalf("alice's press: %v", err)
	}
	if e := outcome(id); e.Outcome != "reverted" || e.Input != "new.txt" || e.User != "alice" {
		t.Errorf("the outcome of alice's press %+v, want new.txt reverted", e)
	}
	h.rec.waitSend(t, "alice reverted the last turn: `new.txt`")
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("new.txt after the revert: %v, want it gone", err)
	}
	h.waitIdle()

	c, ok = v.Changes(t1Key, "bob")
	if !ok || !strings.HasPrefix(c.Refusal, "The last turn was already reverted (by alice, ") {
		t.Fatalf("changes after the revert %+v, want the refusal of a second revert", c)
	}
	again, err := v.Revert(ctx, t1Key, "alice", "alice", c.Turn)
	if err != nil {
		t.Fatalf("the second press: %v", err)
	}
	if e := outcome(again); e.Outcome != "refused: "+c.Refusal {
		t.Errorf("the second press's outcome %q, want %q", e.Outcome, "refused: "+c.Refusal)
	}
	h.waitIdle()

	// After a restart, with the conversation not in memory: its record
	// on disk says the same.
	h = h.restart()
	v = h.e.Console()
	if h.e.convs.Lookup(t1Key) != nil {
		t.Fatal("the conversation is in memory after the restart")
	}
	if off, ok := v.Changes(t1Key, "bob"); !ok || off.Refusal != c.Refusal || off.Turn != c.Turn || !off.DiffKept {
		t.Errorf("changes read from the record %+v, want %+v", off, c)
	}
}
