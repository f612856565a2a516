package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/cc-connect/cc-connect/platform"
)

// adapters are the engine's platform adapters: those registered by name,
// and those running, each under a ctx of its own so that a reload can stop
// and replace one alone.
type adapters struct {
	log *slog.Logger
	// handler is what an adapter runs with: the engine, or in a cluster
	// the publisher that hands its events to their binding's owner.
	handler func(a platform.Adapter) platform.Handler

	wg sync.WaitGroup // every adapter Run started by run

	mu       sync.Mutex // guards the fields below
	byName   map[string]platform.Adapter
	running  map[string]*adapterRun
	runCtx   context.Context // Run's ctx once adapters started; nil before
	shutting bool            // Run is stopping: no adapter starts any more
}

// adapterRun is one running adapter and how to stop it alone.
type adapterRun struct {
	a      platform.Adapter
	cancel context.CancelFunc
	done   chan struct{}
}

func newAdapters(log *slog.Logger) *adapters {
	return &adapters{log: log, byName: map[string]platform.Adapter{}, running: map[string]*adapterRun{}}
}

// add registers a; before Run.
func (as *adapters) add(a platform.Adapter) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.byName[a.Name()] = a
}

// get is the adapter registered under name now.
func (as *adapters) get(name string) (platform.Adapter, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	a, ok := as.byName[name]
	return a, ok
}

// start starts every registered adapter under ctx (Run's).
func (as *adapters) start(ctx context.Context) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.runCtx = ctx
	for _, a := range as.byName {
		as.runLocked(ctx, a)
	}
}

// runLocked runs a under a ctx of its own. The caller holds mu and has
// checked that shutdown has not begun (stop waits only after setting
// shutting).
func (as *adapters) runLocked(ctx context.Context, a platform.Adapter) {
	actx, cancel := context.WithCancel(ctx)
	r := &adapterRun{a: a, cancel: cancel, done: make(chan struct{})}
	as.running[a.Name()] = r
	as.wg.Add(1)
	go func() {
		defer as.wg.Done()
		defer close(r.done)
		defer cancel()
		if err := a.Run(actx, as.handler(a)); err != nil && !errors.Is(err, context.Canceled) {
			as.log.Error("Platform adapter stopped", "platform", a.Name(), "error", err)
		}
	}()
}

// swap stops the adapters replaced or removed, then starts the new ones:
// two connections with one bot token would steal each other's events, so
// the old one is gone before the new one connects.
func (as *adapters) swap(ctx context.Context, add []platform.Adapter, remove []string) error {
	var stopping []*adapterRun
	as.mu.Lock()
	for _, name := range remove {
		delete(as.byName, name)
	}
	names := slices.Clone(remove)
	for _, a := range add {
		as.byName[a.Name()] = a
		names = append(names, a.Name())
	}
	for _, name := range names {
		if r := as.running[name]; r != nil {
			delete(as.running, name)
			r.cancel()
			stopping = append(stopping, r)
		}
	}
	runCtx := as.runCtx
	as.mu.Unlock()

	var err error
	for _, r := range stopping {
		select {
		case <-r.done:
			as.log.Info("Platform adapter stopped for a config change", "platform", r.a.Name())
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
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.shutting {
		return nil
	}
	for _, a := range add {
		if as.byName[a.Name()] == a {
			as.runLocked(runCtx, a)
			as.log.Info("Platform adapter started for a config change", "platform", a.Name())
		}
	}
	return nil
}

// stop refuses to start adapters from now on and waits for the running
// ones, whose ctx (Run's) has ended.
func (as *adapters) stop() {
	as.mu.Lock()
	as.shutting = true
	as.mu.Unlock()
	as.wg.Wait()
}
