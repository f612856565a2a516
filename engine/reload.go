package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/workspace"
)

// Hot reload. The binary builds and validates a whole new config, then
// hands the engine the parts that apply live (Reload): the bindings and the
// adapters that are new or whose settings changed.
//
// Bindings swap at once: routing and who may do what (allow lists,
// approvers, admins, allow_shell) are read from the bindings in force at
// every use (session.liveBinding), so a right taken away applies to the
// next command. What a session holds for its lifetime (its workspace, its
// adapter) cannot change under it, so a conversation whose workspace
// changed, or whose binding was removed, or whose adapter restarted, is
// marked to rebind: it finishes the work it has (the running turn and what
// is queued behind it), then closes its process and ends, and its next
// message starts a session under the new config. An idle conversation does
// so at once.

// Reload is a change of configuration for a running engine.
type Reload struct {
	// Bindings is the complete new list; it replaces the current one.
	Bindings []binding.Binding
	// Adapters are adapters to add, or to replace the running adapter of
	// the same Name (stopped first, then the new one started).
	Adapters []platform.Adapter
	// Remove names adapters to stop and forget.
	Remove []string
	// Team, when set, replaces the [chat] settings; each conversation's
	// next turn reads them (nil keeps those in force).
	Team *TeamOptions
}

// reloadState is what a reload changes while the engine runs.
type reloadState struct {
	bindings atomic.Pointer[[]binding.Binding] // nil until the first Reload: opts.Bindings apply
	team     atomic.Pointer[TeamOptions]       // nil until a Reload sets one: opts.Team applies
	apply    sync.Mutex                        // one Reload at a time
	adapters sync.WaitGroup                    // every adapter Run started by runAdapterLocked

	mu     sync.Mutex      // guards the fields below; taken after e.mu, never before
	runCtx context.Context // Run's ctx once adapters started; nil before
	runs   map[string]*adapterRun
	stale  map[*session]staleMark
}

// adapterRun is one running adapter and how to stop it alone.
type adapterRun struct {
	a      platform.Adapter
	cancel context.CancelFunc
	done   chan struct{}
}

// staleMark says why a conversation must end once idle.
type staleMark struct {
	reason    string // for the log
	workspace string // the new workspace when it changed: the Claude session id stays behind
}

// bindings returns the bindings in force.
func (e *Engine) bindings() []binding.Binding {
	if p := e.reload.bindings.Load(); p != nil {
		return *p
	}
	return e.opts.Bindings
}

// team returns the [chat] settings in force.
func (e *Engine) team() TeamOptions {
	if p := e.reload.team.Load(); p != nil {
		return *p
	}
	return e.opts.Team
}

// checkBindings applies New's checks to a binding list.
func checkBindings(bs []binding.Binding) error {
	for i, b := range bs {
		if b.Platform == "" || b.Channel == "" || b.Workspace == "" {
			return fmt.Errorf("engine: bindings[%d]: platform, channel and workspace are required", i)
		}
	}
	return nil
}

// Reload applies a new configuration while the engine runs (or before Run).
// Invalid bindings are refused before anything changes. Conversations
// affected are told in their thread where a running turn must finish first.
// It returns when the replaced adapters have stopped (or ctx ends) and the
// new ones are started.
func (e *Engine) Reload(ctx context.Context, r Reload) error {
	if err := checkBindings(r.Bindings); err != nil {
		return err
	}
	for i, a := range r.Adapters {
		if a == nil || a.Name() == "" {
			return fmt.Errorf("engine: reload: adapters[%d] has no name", i)
		}
	}
	e.reload.apply.Lock()
	defer e.reload.apply.Unlock()

	bs := slices.Clone(r.Bindings)
	e.pool.forget()
	for i := range bs {
		// Normalized once here, so that comparing with a session's
		// workspace compares folders, not spellings.
		bs[i].Workspace = workspace.Normalize(bs[i].Workspace, e.log)
	}
	restarted := map[string]bool{}
	for _, a := range r.Adapters {
		restarted[a.Name()] = true
	}
	for _, n := range r.Remove {
		restarted[n] = true
	}
	e.reload.bindings.Store(&bs)
	if r.Team != nil {
		t := *r.Team
		e.reload.team.Store(&t)
	}
	// Spares were started under the old config: none outlives it.
	agent := e.opts.Agent
	e.spare.Renew(&agent)
	e.rebindSessions(ctx, bs, restarted)
	return e.swapAdapters(ctx, r.Adapters, r.Remove)
}

// rebindSessions marks the conversations that cannot keep their session
// under the new bindings, tells those with a changed workspace or a removed
// binding, and wakes them so that idle ones end at once.
func (e *Engine) rebindSessions(ctx context.Context, bs []binding.Binding, restarted map[string]bool) {
	type notice struct {
		s    *session
		text string
	}
	var (
		notices []notice
		marked  []*session
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
			e.reload.stale = map[*session]staleMark{}
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
func (s *session) retireIfStale() bool {
	e := s.e
	e.reload.mu.Lock()
	m, ok := e.reload.stale[s]
	e.reload.mu.Unlock()
	if !ok {
		return false
	}
	if _, n, _ := s.mb.snapshot(); n > 0 {
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
		s.rb.update(func(r *record) { r.Workspace = m.workspace })
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

// startAdapters starts every registered adapter under Run's ctx.
func (e *Engine) startAdapters(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reload.mu.Lock()
	e.reload.runCtx = ctx
	e.reload.mu.Unlock()
	for _, a := range e.adapters {
		e.runAdapterLocked(ctx, a)
	}
}

// runAdapterLocked runs a under a ctx of its own, so a reload can stop it
// alone. The caller holds e.mu and has checked that shutdown has not begun
// (Run waits for e.reload.adapters only after setting e.shutting).
func (e *Engine) runAdapterLocked(ctx context.Context, a platform.Adapter) {
	actx, cancel := context.WithCancel(ctx)
	r := &adapterRun{a: a, cancel: cancel, done: make(chan struct{})}
	e.reload.mu.Lock()
	if e.reload.runs == nil {
		e.reload.runs = map[string]*adapterRun{}
	}
	e.reload.runs[a.Name()] = r
	e.reload.mu.Unlock()
	e.reload.adapters.Add(1)
	go func() {
		defer e.reload.adapters.Done()
		defer close(r.done)
		defer cancel()
		if err := a.Run(actx, e.inbound(a)); err != nil && !errors.Is(err, context.Canceled) {
			e.log.Error("Platform adapter stopped", "platform", a.Name(), "error", err)
		}
	}()
}

// swapAdapters stops the adapters replaced or removed, then starts the new
// ones: two connections with one bot token would steal each other's
// events, so the old one is gone before the new one connects.
func (e *Engine) swapAdapters(ctx context.Context, add []platform.Adapter, remove []string) error {
	var stopping []*adapterRun
	e.mu.Lock()
	e.reload.mu.Lock()
	for _, name := range remove {
		delete(e.adapters, name)
	}
	names := slices.Clone(remove)
	for _, a := range add {
		e.adapters[a.Name()] = a
		names = append(names, a.Name())
	}
	for _, name := range names {
		if r := e.reload.runs[name]; r != nil {
			delete(e.reload.runs, name)
			r.cancel()
			stopping = append(stopping, r)
		}
	}
	runCtx := e.reload.runCtx
	e.reload.mu.Unlock()
	e.mu.Unlock()

	var err error
	for _, r := range stopping {
		select {
		case <-r.done:
			e.log.Info("Platform adapter stopped for a config change", "platform", r.a.Name())
		case <-ctx.Done():
			err = fmt.Errorf("waiting for adapter %s to stop: %w", r.a.Name(), ctx.Err())
		}
	}
	if err != nil {
		return err
	}
	if runCtx == nil {
		return nil // Run starts them
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shutting {
		return nil
	}
	for _, a := range add {
		if e.adapters[a.Name()] == a {
			e.runAdapterLocked(runCtx, a)
			e.log.Info("Platform adapter started for a config change", "platform", a.Name())
		}
	}
	return nil
}

// NotifyAdmins posts text once per platform, in the conversation most
// recently active among those whose binding names admins, addressed to
// them. It returns the platforms told; a platform without such a
// conversation in memory is not told (the caller logs in any case). Chat
// has no admin inbox common to all platforms, so this is the one place an
// admin is sure to look without a DM target.
func (e *Engine) NotifyAdmins(ctx context.Context, text string) []string {
	best := map[string]*session{}
	e.mu.Lock()
	admins := map[*session][]string{}
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
