package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/activity"
)

// A turn's changes on the conversation page: what the last turn changed
// (the record's note that !status reads), its diff, and the Revert button
// for approvers, pressed as the turn summary's button in the chat is. A
// Backend offers them by implementing Turns (found by type assertion);
// without, the page shows no changes.

// TurnChanges is what the last turn of a conversation changed.
type TurnChanges struct {
	// Turn names the turn (its user message uuid): a press names it, so
	// that a page shown before a later turn reverts nothing of it.
	Turn           string
	Files          []string
	Added, Removed int
	// Refusal is why a revert would be refused now, in the chat's words
	// (!revert's, !status's); "" when it would go ahead.
	Refusal string
	// Diff is the turn's diff as !diff posts it; DiffKept is false when
	// none is kept.
	Diff     string
	DiffKept bool
}

// Turns is a Backend's last-turn changes and their revert.
type Turns interface {
	// Changes is what key's last turn changed, when who may see the
	// conversation and that turn changed files.
	Changes(who Identity, key string) (TurnChanges, bool)
	// Revert presses the Revert button of turn as the chat's would (the
	// engine's HandleAction: the same gate, the same refusals). It
	// returns the Request of the activity.Reverted event that tells how
	// that press ended.
	Revert(ctx context.Context, who Identity, key, turn string) (string, error)
}

// pageDiffBytes bounds the diff shown in the page; the download has it
// whole (the engine keeps at most 2 MiB of a turn's patches).
const pageDiffBytes = 256 << 10

// revertWait bounds how long a press waits for its outcome: the engine
// may start Claude on the turn's session first (up to a minute).
const revertWait = 90 * time.Second

// changesView is a turn's changes as the page shows them.
type changesView struct {
	TurnChanges
	Shown string // the diff, cut to pageDiffBytes
	Cut   bool
}

func (s *Server) changesOf(who Identity, key string) *changesView {
	tb, ok := s.backend.(Turns)
	if !ok {
		return nil
	}
	c, ok := tb.Changes(who, key)
	if !ok {
		return nil
	}
	v := &changesView{TurnChanges: c, Shown: c.Diff}
	if len(v.Shown) > pageDiffBytes {
		cut := v.Shown[:pageDiffBytes]
		if i := strings.LastIndexByte(cut, '\n'); i > 0 {
			cut = cut[:i+1]
		}
		v.Shown, v.Cut = strings.ToValidUTF8(cut, ""), true
	}
	return v
}

// diff serves the last turn's diff whole, as the file !diff posts.
func (s *Server) diff(w http.ResponseWriter, r *http.Request, sess *session) {
	key := r.URL.Query().Get("k")
	tb, ok := s.backend.(Turns)
	if !ok {
		http.NotFound(w, r)
		return
	}
	c, ok := tb.Changes(sess.who, key)
	if !ok || !c.DiffKept {
		http.Error(w, "No diff of the last turn is kept for this conversation, or you may not see it.", http.StatusNotFound)
		return
	}
	// text/plain: a browser shows it, never runs it (nosniff is set).
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+diffName(c.Turn)+`"`)
	_, _ = w.Write([]byte(c.Diff))
}

// diffName is the name !diff gives the file: turn-<first 8 of the uuid>.diff,
// with only letters, digits and dashes kept.
func diffName(turn string) string {
	var b strings.Builder
	for _, r := range turn {
		if b.Len() == 8 {
			break
		}
		if r < utf8.RuneSelf && (r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	return "turn-" + b.String() + ".diff"
}

// revert presses the Revert button of the turn the page showed, as the
// chat's button would, for an approver of the binding in force; then it
// waits for how that press ended and shows it on the conversation page
// (the revert, or the refusal with the chat's reason).
func (s *Server) revert(w http.ResponseWriter, r *http.Request, sess *session) {
	key, turn := r.PostForm.Get("k"), r.PostForm.Get("turn")
	tb, ok := s.backend.(Turns)
	if !ok {
		http.NotFound(w, r)
		return
	}
	c, ok := s.backend.Conversation(sess.who, key)
	if !ok || !c.Rights.Approve {
		s.log.Warn("Console revert refused: not an approver", "user_id", sess.who.UserID, "session_key", key)
		http.Error(w, "Forbidden: you may not revert turns here", http.StatusForbidden)
		return
	}
	if turn == "" {
		http.Error(w, "Bad request: no turn named", http.StatusBadRequest)
		return
	}
	// Watching before the press: its outcome cannot pass unseen.
	watch, cancel := s.hub.watch(key)
	defer cancel()
	id, err := tb.Revert(r.Context(), sess.who, key, turn)
	if err != nil {
		s.fail(w, "Reverting", err)
		return
	}
	ctx, stop := context.WithTimeout(r.Context(), s.revertWait)
	defer stop()
	s.auth.setNotice(sess, key, revertOutcome(ctx, watch, id))
	http.Redirect(w, r, "/c?k="+url.QueryEscape(key), http.StatusSeeOther)
}

// revertOutcome waits for the reverted event of the press id and says how
// it ended, in the chat's words for a refusal.
func revertOutcome(ctx context.Context, w *watcher, id string) string {
	for {
		select {
		case <-ctx.Done():
			return "The revert was asked; the thread says how it ended."
		case e := <-w.ch:
			if e.Kind != activity.Reverted || e.Request != id {
				continue
			}
			switch out := e.Outcome; {
			case out == "reverted" && e.Input != "":
				return "Reverted: " + e.Input + "."
			case out == "reverted":
				return "Reverted."
			case strings.HasPrefix(out, "refused: "):
				return "Not reverted. " + strings.TrimPrefix(out, "refused: ")
			default:
				return "The revert " + out
			}
		}
	}
}
