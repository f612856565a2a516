package conv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/workspace"
)

// What a turn changed (docs/turns.md, "What a turn changed"): with the
// CLI's file checkpoints on, a turn that changed files ends with a summary
// of them (the CLI's dry rewind to the turn's user message: the files, and
// the lines a rewind would put back and take out), !diff posts the turn's
// diff (the patches its file tools reported), and !revert or the summary's
// button rewinds the files to before the turn (rewind_files). Only the
// last turn can be reverted, once: the CLI would rewind an earlier one
// too, and a second time, without complaint (docs/claude-code.md §10).

// rewinder is what a process with file checkpoints has
// (*agentproc.Process through procs' realProcess).
type rewinder interface {
	RewindFiles(ctx context.Context, userMessageID string, dryRun bool) (agentproc.Rewind, error)
}

// readier is a process that says when it answers control requests
// (*agentproc.Process): one started for a revert (after a restart, an idle
// close) answers only once the CLI is up, which takes seconds, more on a
// loaded host.
type readier interface {
	WaitReady(ctx context.Context) (*agentproc.InitInfo, error)
}

// readyTimeout bounds the wait for a process started for a revert.
const readyTimeout = time.Minute

// revertRequest starts the RequestID of a summary's Revert button; the
// turn's user message uuid follows. It fits Telegram's callback data whole
// (platform/internal/permbutton), so a press works after a restart too.
const revertRequest = "revert:"

// maxDiffBytes bounds the patches kept for !diff: past it the rest of the
// turn's patches are left out, and !diff says so.
const maxDiffBytes = 2 << 20

// lastTurn is the record's note of the conversation's last turn
// (Record.LastTurn): what !revert needs after a restart.
type lastTurn struct {
	UUID      string   `json:"uuid"`       // the user message the turn started with
	SessionID string   `json:"session_id"` // the Claude session it ran in
	Files     []string `json:"files,omitempty"`
	Added     int      `json:"added,omitempty"`
	Removed   int      `json:"removed,omitempty"`
	// Prompt is the summary posted with the Revert button.
	Prompt platform.Target `json:"prompt,omitzero"`
	// Own: Claude ran a turn of its own since (own.go), which a rewind
	// would undo too.
	Own        bool      `json:"own,omitempty"`
	RevertedBy string    `json:"reverted_by,omitempty"`
	RevertedAt time.Time `json:"reverted_at,omitzero"`
}

// checkpoints is the conversation's part for what its turns changed. Only
// the conversation's goroutine uses it.
type checkpoints struct {
	rb      *recordBook
	chat    *relay
	log     *slog.Logger
	bg      context.Context
	ws      func() string
	forChat func(string) string
	act     feed // a revert, for the audit trail
	// diffPath keeps the last turn's diff for !diff after a restart
	// (DiffPath).
	diffPath string

	// touched: the running turn called a file tool, whose changes the CLI
	// checkpoints; a turn that did not changed nothing a rewind restores
	// (captures/checkpoint_resume), and is not asked about.
	touched bool
	// running are the patches of the running turn's file tools.
	running    []agentproc.FilePatch
	runningCut bool
	size       int
}

// last is the record's note of the last turn.
func (ck *checkpoints) last() lastTurn {
	var lt lastTurn
	if s := ck.rb.get().LastTurn; s != "" {
		if err := json.Unmarshal([]byte(s), &lt); err != nil {
			ck.log.Warn("Unreadable note of the last turn in the record; ignored", "error", err)
			return lastTurn{}
		}
	}
	return lt
}

// setLast changes the record's note in memory; save says to write it now.
func (ck *checkpoints) setLast(lt lastTurn, save bool) {
	b, _ := json.Marshal(lt)
	f := func(r *Record) { r.LastTurn = string(b) }
	if save {
		ck.rb.update(f)
		return
	}
	ck.rb.change(f) // the turn's tail saves it
}

// begin notes the turn just sent (user message uuid, in session sid) as
// the last one, with nothing changed yet, and starts its patches afresh. A
// turn that fails before its reply stays the last one so: the turn before
// it is no longer revertible alone, since a rewind to it would undo this
// one's changes too.
func (ck *checkpoints) begin(uuid, sid string) {
	ck.running, ck.runningCut, ck.size, ck.touched = nil, false, 0, false
	ck.setLast(lastTurn{UUID: uuid, SessionID: sid}, false)
}

// fileTools are the tools whose changes the CLI checkpoints.
var fileTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

// noteTool notes a tool call of the running turn (a subagent's too).
func (ck *checkpoints) noteTool(ev agentproc.ToolUse) {
	ck.touched = ck.touched || fileTools[ev.Name]
}

// note keeps the patch a file tool of the running turn reported.
func (ck *checkpoints) note(ev agentproc.ToolResult) {
	p, ok := agentproc.FilePatchOf(ev.Structured)
	if !ok || ck.runningCut {
		return
	}
	n := len(p.Content)
	for _, h := range p.Hunks {
		for _, l := range h.Lines {
			n += len(l) + 1
		}
	}
	if ck.size+n > maxDiffBytes {
		ck.runningCut = true
		return
	}
	ck.size += n
	ck.running = append(ck.running, p)
}

// afterTurn notes the turn that started with user message uuid as the
// last one and, when it changed files, posts the summary of them. on is
// the binding's checkpoints setting in force.
func (ck *checkpoints) afterTurn(proc procs.Process, uuid, sessionID string, on bool) {
	patches, cut, touched := ck.running, ck.runningCut, ck.touched
	ck.running, ck.runningCut, ck.size, ck.touched = nil, false, 0, false
	lt := lastTurn{UUID: uuid, SessionID: sessionID}
	defer func() { ck.setLast(lt, false) }()
	rw, ok := proc.(rewinder)
	if !on || !ok || uuid == "" || !touched {
		return
	}
	ctx, cancel := context.WithTimeout(ck.bg, controlTimeout)
	r, err := rw.RewindFiles(ctx, uuid, true)
	cancel()
	switch {
	case err != nil:
		ck.log.Warn("Asking Claude Code what the turn changed failed", "uuid", uuid, "error", err)
		return
	case !r.CanRewind:
		ck.log.Debug("Claude Code cannot rewind the turn", "uuid", uuid, "reason", r.Error)
		return
	case len(r.Files) == 0:
		return
	}
	// The rewind's counts are what undoing the turn would do: the lines it
	// takes out are those the turn added.
	lt.Files, lt.Added, lt.Removed = ck.shown(r.Files), r.Deletions, r.Inserts
	ck.keepDiff(uuid, patches, cut)
	v := render.TurnChanges{Files: lt.Files, Added: lt.Added, Removed: lt.Removed, Buttons: true}
	if posted, ok := ck.chat.askPermission(platform.PermissionPrompt{RequestID: revertRequest + uuid, Tool: "revert",
		Text: render.ChangesSummary(v), Choices: render.RevertChoices()}); ok {
		lt.Prompt = posted
	} else {
		v.Buttons = false
		ck.chat.send(render.ChangesSummary(v))
	}
	ck.log.Info("Turn changed files", "uuid", uuid, "files", len(lt.Files), "added", lt.Added, "removed", lt.Removed)
}

// ownTurn notes that Claude ran a turn by itself after the last one: a
// rewind to the last would undo that one's changes too.
func (ck *checkpoints) ownTurn() {
	if lt := ck.last(); lt.UUID != "" && !lt.Own {
		lt.Own = true
		ck.setLast(lt, false)
	}
}

// shown are the CLI's absolute paths as the thread reads them: relative to
// the workspace where inside it.
func (ck *checkpoints) shown(paths []string) []string {
	ws := ck.ws()
	out := make([]string, len(paths))
	for i, p := range paths {
		if rel, err := filepath.Rel(ws, p); err == nil && !strings.HasPrefix(rel, "..") {
			out[i] = filepath.ToSlash(rel)
		} else {
			out[i] = ck.forChat(p)
		}
	}
	return out
}

// refusal is why the last turn cannot be reverted now ("" when it can):
// arg is the turn a button named, "" for the last; current is the
// conversation's Claude session.
func (lt lastTurn) refusal(arg, current string) string {
	switch {
	case lt.UUID == "" || lt.SessionID != current:
		return render.RevertNothing
	case arg != "" && arg != lt.UUID:
		return render.RevertNotLast
	case lt.RevertedBy != "":
		return render.RevertAgain(lt.RevertedBy, lt.RevertedAt)
	case len(lt.Files) == 0:
		return render.RevertNoFiles
	case lt.Own:
		return render.RevertOwnTurn
	}
	return ""
}

// revert rewinds the files of the last turn on proc, which runs its
// session, for the person by (their name as the chat shows it), and tells
// the thread what was restored.
func (ck *checkpoints) revert(proc procs.Process, by platform.Message, now time.Time) {
	user := orDefault(by.UserName, by.UserID)
	lt := ck.last()
	failed := func(why string) {
		ck.act.record(activity.Event{Kind: activity.Reverted, User: by.UserID, UserName: by.UserName, Request: by.ID,
			Input: strings.Join(lt.Files, ", "), Outcome: "failed: " + why})
		ck.chat.send(render.RevertFailed(why))
	}
	rw, ok := proc.(rewinder)
	if !ok {
		failed("Claude Code cannot rewind files here")
		return
	}
	if r, ok := proc.(readier); ok {
		ctx, cancel := context.WithTimeout(ck.bg, readyTimeout)
		_, err := r.WaitReady(ctx)
		cancel()
		if err != nil {
			ck.log.Warn("Claude did not start to revert the last turn", "uuid", lt.UUID, "error", err)
			failed(ck.forChat(err.Error()))
			return
		}
	}
	rewind := func(dry bool) (agentproc.Rewind, error) {
		ctx, cancel := context.WithTimeout(ck.bg, controlTimeout)
		defer cancel()
		return rw.RewindFiles(ctx, lt.UUID, dry)
	}
	// What the rewind restores now: the dry run again, since files may
	// have changed since the summary.
	dry, err := rewind(true)
	if err == nil && !dry.CanRewind {
		ck.log.Warn("Claude Code cannot rewind the turn", "uuid", lt.UUID, "reason", dry.Error)
		failed(ck.forChat(orDefault(dry.Error, "Claude Code cannot rewind it")))
		return
	}
	if err == nil {
		_, err = rewind(false)
	}
	if err != nil {
		ck.log.Warn("Reverting the last turn failed", "uuid", lt.UUID, "error", err)
		failed(ck.forChat(controlMessage(err)))
		return
	}
	files := ck.shown(dry.Files)
	if len(files) == 0 {
		files = lt.Files
	}
	lt.RevertedBy, lt.RevertedAt = user, now
	ck.setLast(lt, true)
	ck.rb.addShellNote(render.RevertNote(files)) // Claude hears of it with the next message
	ck.log.Info("Reverted the last turn", "uuid", lt.UUID, "user_id", by.UserID, "files", len(files))
	ck.act.record(activity.Event{Kind: activity.Reverted, User: by.UserID, UserName: by.UserName, Request: by.ID,
		Input: strings.Join(files, ", "), Outcome: "reverted"})
	if lt.Prompt.MessageID != "" {
		ck.chat.resolvePermission(lt.Prompt, render.RevertedOutcome(user))
	}
	ck.chat.send(render.Reverted(user, files, dry.Inserts, dry.Deletions))
}

// DiffPath is where the last turn's diff of the conversation key is kept:
// the unified diff after a first line naming the turn.
func DiffPath(stateDir, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(stateDir, "diffs", hex.EncodeToString(sum[:16])+".diff")
}

// diffHead is the first line of a kept diff: which turn it is of.
func diffHead(uuid string) string { return "# cc-connect: the diff of the turn " + uuid + "\n" }

// keepDiff writes the turn's diff where !diff finds it, also after a
// restart (atomically, 0600 in a 0700 folder, never through a link).
func (ck *checkpoints) keepDiff(uuid string, patches []agentproc.FilePatch, cut bool) {
	text := unifiedDiff(patches, ck.shown)
	if cut {
		text += "\n# (cut: the turn's changes were over 2 MiB; the rest is left out)\n"
	}
	if err := workspace.WriteFileAtomic(ck.diffPath, []byte(diffHead(uuid)+text)); err != nil {
		ck.log.Warn("Keeping the turn's diff failed; !diff will say it is not kept", "error", err)
		_ = os.Remove(ck.diffPath) // an older turn's must not pass for this one's
	}
}

// keptDiff is the kept diff of turn uuid; false when none is.
func (ck *checkpoints) keptDiff(uuid string) (string, bool) { return readDiff(ck.diffPath, uuid) }

// diff posts the last turn's diff, as a file where the chat takes files.
func (ck *checkpoints) diff() {
	lt := ck.last()
	if lt.UUID == "" || len(lt.Files) == 0 {
		ck.chat.send(render.DiffNothing)
		return
	}
	text, ok := ck.keptDiff(lt.UUID)
	switch {
	case !ok:
		ck.chat.send(render.DiffNotKept)
		return
	case text == "":
		ck.chat.send(render.DiffEmpty) // a tool whose result carries no patch (NotebookEdit)
		return
	}
	comment := render.DiffComment(len(lt.Files), lt.Added, lt.Removed)
	if fs, ok := ck.chat.chat().(platform.FileSender); ok && int64(len(text)) <= fs.MaxFileSize(ck.chat.to) {
		ctx, cancel := context.WithTimeout(ck.bg, sendFileTimeout)
		defer cancel()
		name := "turn-" + lt.UUID[:min(8, len(lt.UUID))] + ".diff"
		_, err := fs.SendFile(ctx, ck.chat.to, platform.OutgoingFile{Name: name, Mime: "text/x-diff", Data: []byte(text), Comment: comment})
		if err == nil {
			return
		}
		ck.log.Warn("Posting the turn's diff as a file failed; posting it as text", "error", err)
	}
	ck.chat.send(comment + "\n```diff\n" + strings.ReplaceAll(text, "```", "ˋˋˋ") + "```")
}

// unifiedDiff writes patches as a unified diff, in the order the tools
// made them (a file changed twice has two sections); name shows a path.
func unifiedDiff(patches []agentproc.FilePatch, name func([]string) []string) string {
	var b strings.Builder
	for _, p := range patches {
		n := name([]string{p.Path})[0]
		if p.Created {
			lines := strings.Split(strings.TrimSuffix(p.Content, "\n"), "\n")
			if p.Content == "" {
				lines = nil
			}
			fmt.Fprintf(&b, "--- /dev/null\n+++ b/%s\n", n)
			if len(lines) > 0 {
				fmt.Fprintf(&b, "@@ -0,0 +1,%d @@\n", len(lines))
			}
			for _, l := range lines {
				b.WriteString("+" + l + "\n")
			}
			continue
		}
		fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", n, n)
		for _, h := range p.Hunks {
			fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", h.OldStart, h.OldLines, h.NewStart, h.NewLines)
			for _, l := range h.Lines {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}
