package conv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/workspace"
)

// Record is what survives a restart about one session. It is written
// whenever the Claude session id or the context figures change.
type Record struct {
	Key          string    `json:"key"`
	Platform     string    `json:"platform"`
	Channel      string    `json:"channel"`
	Thread       string    `json:"thread,omitempty"`
	Workspace    string    `json:"workspace"`
	SessionID    string    `json:"session_id,omitempty"`
	Model        string    `json:"model,omitempty"`
	LastActivity time.Time `json:"last_activity"`
	// Context figures of the last turn (ctxindicator track A and B).
	ContextTokens  int64   `json:"context_tokens,omitempty"`
	ContextWindow  int64   `json:"context_window,omitempty"`
	WindowReported bool    `json:"window_reported,omitempty"`
	ContextPct     int     `json:"context_pct,omitempty"`
	SelfPct        int     `json:"self_pct,omitempty"`
	HasSelfPct     bool    `json:"has_self_pct,omitempty"`
	TotalCostUSD   float64 `json:"total_cost_usd,omitempty"`
	// Worktree is the branch of the conversation's git worktree (its path
	// is Workspace) on a worktree binding; WorktreeGen counts its !new,
	// each of which moves it to a new worktree (worktree.go).
	Worktree    string `json:"worktree,omitempty"`
	WorktreeGen int    `json:"worktree_gen,omitempty"`
	// ModelOverride and ModeOverride are what !model and !mode set for this
	// conversation; every later spawn passes them (--model,
	// --permission-mode), so they survive reaps, resumes and restarts.
	ModelOverride string `json:"model_override,omitempty"`
	ModeOverride  string `json:"mode_override,omitempty"`
	// ShellNotes are the notes of !sh commands run since the last turn;
	// the next turn's prompt carries them to Claude once.
	ShellNotes string `json:"shell_notes,omitempty"`
	// NewSessionID is the id chosen (--session-id) for a session being
	// started, before the CLI confirms it; recovery reads its transcript
	// when a crash came first.
	NewSessionID string `json:"new_session_id,omitempty"`
	// LoginFailed: the last turn failed because Claude Code has no valid
	// login; !status says so until a turn succeeds.
	LoginFailed bool `json:"login_failed,omitempty"`
	// PendingPermission names the permission request the running turn
	// waits on, so that a restart can say it was cancelled.
	PendingPermission string `json:"pending_permission,omitempty"`
	// Parked are the requests (permissions, questions, plans) the turn
	// waits on, with where their prompts are and any answer given while
	// no process ran: what a restart needs to keep them (parked.go). JSON
	// in a string, so that Record stays comparable.
	Parked string `json:"parked,omitempty"`
	// HadSession: the conversation had a Claude session that was
	// forgotten (!new, a fallback), so the next one starts fresh rather
	// than first (thread_context_on_fresh).
	HadSession bool `json:"had_session,omitempty"`
	// DM: the conversation is a direct message. Kept here because a
	// message replayed from the journal no longer says so, and the
	// sender header and the mentions are off in DMs by default.
	DM bool `json:"dm,omitempty"`
	// Speakers are who wrote the messages of the current session, one
	// "name (id)" a line, in the order they first spoke (!status). A
	// string keeps the record comparable.
	Speakers string `json:"speakers,omitempty"`
	// LastTurn is the note of the last turn: its user message's uuid,
	// what it changed, whether it was reverted (checkpoint.go). JSON in a
	// string, so that Record stays comparable.
	LastTurn string `json:"last_turn,omitempty"`
}

// dropInvalidIDs clears the session ids that are not canonical UUIDs (a
// record edited by hand, or written by an older cc-connect from an odd
// init event) and returns them: passed to --resume, such an id would be
// refused at every start and wedge the conversation.
func (r *Record) dropInvalidIDs() (dropped []string) {
	for _, id := range []*string{&r.SessionID, &r.NewSessionID} {
		if *id != "" && !agentproc.ValidSessionID(*id) {
			dropped = append(dropped, *id)
			*id = ""
		}
	}
	return dropped
}

// figures are the record's context figures for ctxindicator.
func (r Record) figures() ctxindicator.Figures {
	return ctxindicator.Figures{Tokens: r.ContextTokens, Window: r.ContextWindow,
		WindowReported: r.WindowReported, SelfPct: r.SelfPct, HasSelf: r.HasSelfPct}
}

// errCorruptState means a session file could not be parsed; load moved it
// aside (the error names where) and the session starts without state.
var errCorruptState = errors.New("corrupt session state")

// NewStore is the records under stateDir.
func NewStore(stateDir string) *Store { return &Store{dir: stateDir} }

// Store keeps one JSON file per session under dir/sessions, 0600 in 0700.
type Store struct {
	dir string
}

func (st *Store) Path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(st.dir, "sessions", hex.EncodeToString(sum[:16])+".json")
}

// Exists reports whether a session file for key is on disk.
func (st *Store) Exists(key string) bool {
	_, err := os.Stat(st.Path(key))
	return err == nil
}

// Load reads the record of key. A missing file gives ok=false and no error.
// A file that does not parse (or belongs to another key) is moved aside
// with workspace.QuarantineCorrupt and reported as errCorruptState.
func (st *Store) Load(key string, now time.Time) (rec Record, ok bool, err error) {
	p := st.Path(key)
	data, err := workspace.ReadFileNoFollow(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, false, nil
	}
	var perr error
	switch {
	case errors.Is(err, workspace.ErrSymlink):
		// Not a record save wrote (it renames a regular file into
		// place): moved aside like a corrupt one, never followed.
		perr = err
	case err != nil:
		return Record{}, false, fmt.Errorf("reading session state %s: %w", p, err)
	default:
		perr = json.Unmarshal(data, &rec)
	}
	if perr == nil && rec.Key != key {
		perr = fmt.Errorf("file holds key %q", rec.Key)
	}
	if perr != nil {
		moved, qerr := workspace.QuarantineCorrupt(p, now)
		if qerr != nil {
			return Record{}, false, fmt.Errorf("%w: %s: %v; and %w", errCorruptState, p, perr, qerr)
		}
		return Record{}, false, fmt.Errorf("%w: %s (%v) was moved to %s", errCorruptState, p, perr, moved)
	}
	return rec, true, nil
}

func (st *Store) Save(rec Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding session state: %w", err)
	}
	if err := workspace.WriteFileAtomic(st.Path(rec.Key), data); err != nil {
		return fmt.Errorf("saving session state: %w", err)
	}
	return nil
}
