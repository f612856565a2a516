package conv

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cc-connect/cc-connect/binding"
)

// staleMarks are the conversations a reload marked to end once idle.
type staleMarks struct {
	mu    sync.Mutex // guards stale
	stale map[*Conversation]staleMark
}

// staleMark says why a conversation must end once idle.
type staleMark struct {
	reason    string // for the log
	workspace string // the new workspace when it changed: the Claude session id stays behind
}

// Rebind marks the conversations that cannot keep their session
// under the new bindings, tells those with a changed workspace or a removed
// binding, and wakes them so that idle ones end at once.
func (e *Set) Rebind(bs []binding.Binding, restarted map[string]bool) {
	type notice struct {
		s    *Conversation
		text string
	}
	var (
		notices []notice
		marked  []*Conversation
	)
	e.mu.Lock()
	for _, s := range e.sessions {
		nb, ok := binding.Route(bs, s.to.Platform, s.to.Channel)
		_, _, busy := s.mb.snapshot()
		var m staleMark
		switch {
		case !ok:
			m.reason = "binding removed"
			text := "cc-connect's config no longer binds this channel: messages here are no longer answered."
			if busy {
				text = "cc-connect's config no longer binds this channel: the running turn finishes, then this conversation stops taking messages."
			}
			notices = append(notices, notice{s, text})
		case nb.Workspace != s.binding.Workspace: // s.ws may be its worktree
			m = staleMark{reason: "workspace changed", workspace: nb.Workspace}
			text := fmt.Sprintf("cc-connect's config moved this channel to the workspace %s: your next message starts a new session there.", nb.Workspace)
			if busy {
				text = fmt.Sprintf("cc-connect's config moved this channel to the workspace %s. The running turn finishes here first; after it, a new session starts there.", nb.Workspace)
			}
			notices = append(notices, notice{s, text})
		case restarted[s.to.Platform]:
			m.reason = "platform adapter restarted"
		default:
			continue
		}
		e.reload.mu.Lock()
		if e.reload.stale == nil {
			e.reload.stale = map[*Conversation]staleMark{}
		}
		e.reload.stale[s] = m
		e.reload.mu.Unlock()
		marked = append(marked, s)
		s.log.Info("Conversation rebinds after a config change", "reason", m.reason, "busy", busy)
	}
	e.mu.Unlock()
	for _, n := range notices {
		n.s.notice(n.text)
	}
	for _, s := range marked {
		s.mb.wake()
	}
}

// retireIfStale ends a conversation marked by a reload once it has no work
// left: it closes the process first (a new session for this conversation
// must not meet it), then leaves the engine's map. It runs on the session
// goroutine, which ends when it returns true.
func (s *Conversation) retireIfStale() bool {
	e := s.e
	e.reload.mu.Lock()
	m, ok := e.reload.stale[s]
	e.reload.mu.Unlock()
	if !ok {
		return false
	}
	if _, n, _ := s.mb.snapshot(); n > 0 || s.tr.restoring != nil {
		return false
	}
	s.tr.tail.wait() // its ack goes in the journal closed below
	s.agent.Close()

	s.jr.acceptMu.Lock()
	defer s.jr.acceptMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !s.mb.closeIfIdle(func() bool { return s.agent.Live() == nil }) {
		return false // work arrived while the process closed: it runs first
	}
	// Closed before the conversation leaves the map, so its next
	// session opens the journal only after this one let go of it.
	s.jr.close()
	if m.workspace != "" {
		// Claude Code keeps sessions per folder: the old id cannot be
		// resumed in the new workspace. Saved while e.mu is held, so the
		// next session of this conversation loads the cleared record.
		s.rb.forget()
		s.rb.update(func(r *Record) { r.Workspace = m.workspace })
	}
	if e.sessions[s.key] == s {
		delete(e.sessions, s.key)
	}
	e.reload.mu.Lock()
	delete(e.reload.stale, s)
	e.reload.mu.Unlock()
	s.log.Info("Conversation ended after a config change; its next message starts a new session", "reason", m.reason)
	return true
}

// NotifyAdmins posts text once per platform, in the conversation most
// recently active among those whose binding names admins, addressed to
// them. It returns the platforms told; a platform without such a
// conversation in memory is not told (the caller logs in any case). Chat
// has no admin inbox common to all platforms, so this is the one place an
// admin is sure to look without a DM target.
func (e *Set) NotifyAdmins(text string) []string {
	best := map[string]*Conversation{}
	e.mu.Lock()
	admins := map[*Conversation][]string{}
	for _, s := range e.sessions {
		if admins[s] = s.liveBinding().Admins; len(admins[s]) == 0 {
			continue
		}
		if cur, ok := best[s.to.Platform]; !ok || s.lastActive().After(cur.lastActive()) {
			best[s.to.Platform] = s
		}
	}
	e.mu.Unlock()
	var told []string
	for plat, s := range best {
		if s.notice(fmt.Sprintf("Admins (%s): %s", joinNames(admins[s]), text)) {
			told = append(told, plat)
		}
	}
	slices.Sort(told)
	return told
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
