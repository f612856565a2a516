package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
}

// adapterRun is one running adapter and how to stop it alone.
type adapterRun struct {
	a      platform.Adapter
	cancel context.CancelFunc
	done   chan struct{}
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
	e.convs.Rebind(bs, restarted)
	return e.swapAdapters(ctx, r.Adapters, r.Remove)
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
	return e.convs.NotifyAdmins(text)
}
