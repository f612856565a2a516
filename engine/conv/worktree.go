package conv

import (
	"context"
	"strconv"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/worktree"
)

// A worktree per conversation (docs/unattended.md). On a binding with
// Worktree set, a conversation's claude runs in its own git worktree of
// the binding's workspace: made (worktree.Manager.Create, which is
// idempotent) on the session goroutine before the conversation's first
// turn, never on the accept path; its path becomes the session's
// workspace, recorded, so that `cc-connect worktrees` sees it in use. !new
// moves the conversation to a new worktree (the record's generation) and
// keeps the old one for an admin to merge and remove.

// worktreeTimeout bounds making a worktree (a few git commands).
const worktreeTimeout = time.Minute

// worktreeConversation names a conversation's worktree of a generation.
func worktreeConversation(key string, gen int) string {
	if gen == 0 {
		return key
	}
	return key + "#" + strconv.Itoa(gen)
}

// ensureWorktree moves a worktree binding's conversation into its worktree
// before a turn, while no process runs; false (the user told why) when it
// cannot be made.
func (tr *turnRunner) ensureWorktree() bool {
	b, ok := tr.purse.binding()
	if !ok || !b.Worktree || tr.agent.Live() != nil {
		return true
	}
	rec := tr.rb.get()
	conv := worktreeConversation(tr.key, rec.WorktreeGen)
	ctx, cancel := context.WithTimeout(tr.e.bg, worktreeTimeout)
	defer cancel()
	wt, err := worktree.New(b.Workspace, tr.e.opts.Agent.Rule()).Create(ctx, conv)
	if err != nil {
		tr.log.Error("Making the conversation's worktree failed", "error", err)
		tr.chat.send("This conversation's git worktree could not be made, so the message was not sent to Claude: " +
			forChat(err.Error(), b.Workspace, tr.e.opts.StateDir))
		return false
	}
	if wt.Path != tr.ws {
		tr.log.Info("Conversation works in its worktree", "worktree", wt.Path, "branch", wt.Branch)
		tr.e.moveSession(tr.key, wt.Path)
	}
	if rec.Workspace != wt.Path || rec.Worktree != wt.Branch {
		tr.rb.update(func(r *Record) { r.Workspace, r.Worktree = wt.Path, wt.Branch })
	}
	return true
}

// moveSession points a session's parts at a new workspace folder; called
// on its goroutine while it has no process.
func (e *Set) moveSession(key, ws string) {
	e.mu.Lock()
	s := e.sessions[key]
	if s != nil {
		s.ws = ws
	}
	e.mu.Unlock()
	if s == nil {
		return
	}
	s.tr.ws = ws
	s.agent.SetDir(ws)
}

// newWorktree is !new's part on a worktree binding: the next turn of the
// conversation key makes a new worktree of base; the old one stays. It
// returns the old one's branch, "" when the conversation had none.
func newWorktree(e *Set, rb *recordBook, key, base string) string {
	rec := rb.get()
	if rec.Worktree == "" {
		return ""
	}
	rb.update(func(r *Record) { r.WorktreeGen++; r.Worktree = ""; r.Workspace = base })
	e.moveSession(key, base)
	return rec.Worktree
}

// worktreeStatus is !status's line about the worktree of base a
// conversation (rec) works in, git run as the agent's config says; ""
// outside a worktree. An error is told as the chat may read it (forChat).
func worktreeStatus(bg context.Context, base string, agent agentproc.Config, stateDir string, rec Record) string {
	if rec.Worktree == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	m := worktree.New(base, agent.Rule())
	wt, err := m.Find(ctx, rec.Workspace)
	if err != nil {
		return render.Worktree(rec.Worktree, "", "", forChat(err.Error(), base, stateDir))
	}
	st, err := m.State(ctx, wt)
	if err != nil {
		return render.Worktree(wt.Branch, wt.Base, "", forChat(err.Error(), base, stateDir))
	}
	return render.Worktree(wt.Branch, wt.Base, st.String(), "")
}
