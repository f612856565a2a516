package conv

import (
	"log/slog"
	"strings"
	"sync"
)

// recordBook is a conversation's record (store.go) in memory and on disk:
// what survives a restart about it (the Claude session id, the figures,
// !model and !mode, the !sh notes). Any goroutine reads it; changes go
// through update (saved at once: what a crash must find) or change (saved
// by the next save: figures that may reach the disk later).
type recordBook struct {
	store *Store
	log   *slog.Logger

	// saveMu orders the writes, so that the file ends up with the latest
	// record (see save).
	saveMu sync.Mutex

	mu    sync.Mutex // guards rec and dirty
	rec   Record
	dirty bool // rec has changes not yet saved
}

// get returns a copy of the record.
func (rb *recordBook) get() Record {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.rec
}

// sessionID is the Claude session the conversation resumes, "" before
// the first turn.
func (rb *recordBook) sessionID() string {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.rec.SessionID
}

// update changes the record under the lock and saves it when changed.
func (rb *recordBook) update(f func(r *Record)) {
	if rb.change(f) {
		rb.save()
	}
}

// change changes the record in memory only, for figures that may reach the
// disk later: the next save (or update) writes them. What a crash must
// find (the session id, a chosen new session id, a pending permission)
// goes through update.
func (rb *recordBook) change(f func(r *Record)) bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	before := rb.rec
	f(&rb.rec)
	if rb.rec == before {
		return false
	}
	rb.dirty = true
	return true
}

// save writes the record when it has unsaved changes. The snapshot is
// taken under saveMu, so two savers cannot leave an older record on disk
// after a newer one.
func (rb *recordBook) save() {
	rb.saveMu.Lock()
	defer rb.saveMu.Unlock()
	rb.mu.Lock()
	if !rb.dirty {
		rb.mu.Unlock()
		return
	}
	rec := rb.rec
	rb.dirty = false
	rb.mu.Unlock()
	if err := rb.store.Save(rec); err != nil {
		rb.mu.Lock()
		rb.dirty = true // the next save tries again
		rb.mu.Unlock()
		rb.log.Error("Saving session state failed", "session_id", rec.SessionID, "error", err)
	}
}

// forget clears the stored Claude session id and its figures.
func (rb *recordBook) forget() {
	rb.update(func(r *Record) {
		r.HadSession = r.HadSession || r.SessionID != ""
		r.Speakers = ""
		r.SessionID, r.NewSessionID = "", ""
		r.ContextTokens, r.ContextWindow, r.WindowReported, r.ContextPct = 0, 0, false, 0
		r.SelfPct, r.HasSelfPct = 0, false
	})
}

// spawnSettings are the model and mode the next process starts with.
func (rb *recordBook) spawnSettings() (model, mode string) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.rec.ModelOverride, rb.rec.ModeOverride
}

// maxShellNotes bounds the notes waiting for the next turn: each note is
// already bounded, and past this the oldest are dropped whole.
const maxShellNotes = 16 << 10

// addShellNote keeps the note of a !sh command for the next turn.
func (rb *recordBook) addShellNote(note string) {
	rb.update(func(r *Record) { r.ShellNotes = appendNote(r.ShellNotes, note) })
}

// takeShellNotes returns the notes waiting for the next turn and forgets
// them, so Claude is told once.
func (rb *recordBook) takeShellNotes() string {
	var notes string
	rb.update(func(r *Record) {
		notes = r.ShellNotes
		r.ShellNotes = ""
	})
	return notes
}

// putBackShellNotes keeps notes for a later turn when the message that
// carried them never reached Claude.
func (rb *recordBook) putBackShellNotes(notes string) {
	if notes == "" {
		return
	}
	rb.update(func(r *Record) { r.ShellNotes = appendNote(notes, r.ShellNotes) })
}

// appendNote adds note after notes, keeping the last maxShellNotes bytes
// (cut at a line start, and said so).
func appendNote(notes, note string) string {
	if notes != "" && note != "" {
		notes += "\n\n"
	}
	notes += note
	if over := len(notes) - maxShellNotes; over > 0 {
		notes = notes[over:]
		if i := strings.IndexByte(notes, '\n'); i >= 0 {
			notes = notes[i+1:]
		}
		notes = "[Earlier shell command notes were cut.]\n" + notes
	}
	return notes
}

// notePending records the permission requests (questions, plans) the
// running turn waits on: the first one's name for the restart's notice,
// and the requests themselves, so that a restart keeps them (parked.go).
func (rb *recordBook) notePending(ps *permissions, item string) {
	name, parked := ps.first(), ps.parked(item)
	rb.update(func(r *Record) { r.PendingPermission, r.Parked = name, parked })
	if ps.share != nil {
		ps.share() // and in the cluster, for the binding's next holder (approvals.go)
	}
}
