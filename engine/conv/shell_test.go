package conv

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/procs"
)

func TestShellNotesBounded(t *testing.T) {
	notes := ""
	note := strings.Repeat("x", 5000) + "\n[End of shell command note.]"
	for range 10 {
		notes = appendNote(notes, note)
	}
	if len(notes) > maxShellNotes+100 || !strings.HasPrefix(notes, "[Earlier shell command notes were cut.]\n") ||
		!strings.HasSuffix(notes, note) {
		t.Errorf("notes = %d bytes starting %q", len(notes), Quote(notes, 60))
	}
	if got := appendNote("", "a"); got != "a" {
		t.Errorf("appendNote(\"\", a) = %q", got)
	}
	if got := appendNote("a", "b"); got != "a\n\nb" {
		t.Errorf("appendNote(a, b) = %q", got)
	}
}

// A note stays for the next turn when the message that carried it never
// reached Claude (stopped while waiting for a process slot).
func TestShellNoteKeptWhenTurnNotSent(t *testing.T) {
	rb := &recordBook{store: NewStore(t.TempDir()), log: slog.New(slog.DiscardHandler)}
	tr := &turnRunner{rb: rb}
	rb.update(func(r *Record) { r.ShellNotes = "note-1" })
	notes := rb.takeShellNotes()
	tr.keepUnsentNotes(notes, errStoppedWaiting)
	if got := rb.get().ShellNotes; got != "note-1" {
		t.Errorf("notes after an unsent turn = %q, want them kept", got)
	}
	tr.keepUnsentNotes(rb.takeShellNotes(), &agentproc.ExitError{Code: 1})
	if got := rb.get().ShellNotes; got != "" {
		t.Errorf("notes after a sent turn = %q, want them gone", got)
	}
}

// controlCalls is a process that records the control requests it gets.
type controlCalls struct {
	procs.Process
	calls []string
}

func (c *controlCalls) SetModel(_ context.Context, m string) error {
	c.calls = append(c.calls, "set_model "+m)
	return nil
}

func (c *controlCalls) SetPermissionMode(_ context.Context, m string) error {
	c.calls = append(c.calls, "set_permission_mode "+m)
	return nil
}

// A !model that lands while a process is being started reaches it: the
// spawn reads the record, and ensureProcess re-reads it after publishing
// the process (syncControls).
func TestSyncControlsAfterSpawn(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	rb := &recordBook{store: NewStore(t.TempDir()), log: log}
	p := &controlCalls{}
	rb.update(func(r *Record) { r.ModelOverride, r.ModeOverride = "m2", "plan" })
	syncControls(p, rb, "m1", "", "", log)
	if got := strings.Join(p.calls, ","); got != "set_model m2,set_permission_mode plan" {
		t.Errorf("control requests = %q", got)
	}
	syncControls(p, rb, "m2", "plan", "", log)
	if len(p.calls) != 2 {
		t.Errorf("control requests = %q, want none when nothing changed", p.calls)
	}
}
