package conv

import (
	"encoding/json"
	"strings"

	"github.com/cc-connect/cc-connect/workspace"
)

// Changes is what the last turn of a conversation changed, as !status
// reads it (the record's note of the last turn), for a reader outside the
// conversation's goroutine (the console in the browser): its files and
// lines, why a revert would be refused now (revertRefusal, the one check
// !revert and !status make) and its diff as !diff would post it.
type Changes struct {
	// Turn is the user message uuid the turn started with: a revert press
	// names it (RevertRequestID), so that a press meant for it reverts no
	// later turn.
	Turn           string
	Files          []string
	Added, Removed int
	// Refusal is what !revert would answer now; "" when it would go ahead.
	Refusal string
	// Diff is the kept diff of the turn (DiffPath); DiffKept is false when
	// none is (its write failed, or a tool reported no patch).
	Diff     string
	DiffKept bool
}

// LastChanges is what the last turn of the conversation of key changed;
// false when the session's last turn changed no files (what !status shows
// no changes for). A conversation in memory is read as it is now; one
// that is not, from its record on disk (idle, with no process), never
// moved or repaired by this read. Rights are the caller's to check.
func LastChanges(e *Set, key string) (Changes, bool) {
	var st revertState
	if s := e.live(key); s != nil {
		st = revertStateOf(s)
	} else {
		rec, ok := readRecord(e.store.Path(key), key)
		if !ok {
			return Changes{}, false
		}
		var lt lastTurn
		if rec.LastTurn != "" && json.Unmarshal([]byte(rec.LastTurn), &lt) != nil {
			return Changes{}, false
		}
		st = revertState{last: lt, session: rec.SessionID}
		if b, ok := e.resolve(rec.Platform, rec.Channel); ok {
			st.on = b.CheckpointsOn()
		}
	}
	lt := st.last
	if len(lt.Files) == 0 || lt.SessionID != st.session {
		return Changes{}, false
	}
	c := Changes{Turn: lt.UUID, Files: lt.Files, Added: lt.Added, Removed: lt.Removed, Refusal: revertRefusal(st, "")}
	c.Diff, c.DiffKept = readDiff(DiffPath(e.opts.StateDir, key), lt.UUID)
	return c, true
}

// readRecord reads the record of key at path without the Store's repair
// (a corrupt file is left for the conversation to move aside).
func readRecord(path, key string) (Record, bool) {
	data, err := workspace.ReadFileNoFollow(path)
	if err != nil {
		return Record{}, false
	}
	var rec Record
	if json.Unmarshal(data, &rec) != nil || rec.Key != key {
		return Record{}, false
	}
	return rec, true
}

// readDiff is the diff of turn uuid kept at path; false when the file
// holds none, or another turn's.
func readDiff(path, uuid string) (string, bool) {
	b, err := workspace.ReadFileNoFollow(path)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(string(b), diffHead(uuid))
}

// RevertRequestID is the RequestID of a press of the Revert button of the
// turn that started with user message uuid (a summary's, or the
// console's): HandleAction takes it as its presser's "!revert uuid".
func RevertRequestID(uuid string) string { return revertRequest + uuid }

// RevertPressID is the id of the "!revert" message a press with action id
// stands for (RevertPress): the reverted event of that revert carries it
// as its Request, so that whoever pressed can wait for its outcome.
func RevertPressID(actionID string) string { return "revert-press:" + actionID }
