package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/agentcfg"
	"github.com/cc-connect/cc-connect/agentenv"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/lease"
	"github.com/cc-connect/cc-connect/platform"
)

// Hot reload of the config file. A change (the file saved, or SIGHUP)
// loads and validates the whole new file and builds the adapters it needs
// before anything changes; only then does it swap the new settings in. On
// any error the running config stays, the error is logged with the key at
// fault, and the admins are told once (Engine.NotifyAdmins).
//
// The file is watched with fsnotify directly rather than viper's
// WatchConfig, which watches the same folder but exits the process when a
// watcher cannot be created, stops watching for good once the file is
// removed (a save that deletes and recreates it), and cannot be stopped.

// reloadDebounce is how long the file must be quiet before it is read:
// editors save in several steps (write, chmod, rename), and reading
// between them would see a half-saved file.
const reloadDebounce = 150 * time.Millisecond

// reloadTimeout bounds one reload: replaced adapters must stop within it.
const reloadTimeout = time.Minute

// reloadTarget is what a reload changes in the engine.
type reloadTarget interface {
	Reload(ctx context.Context, r engine.Reload) error
	NotifyAdmins(ctx context.Context, text string) []string
}

// reloader applies edits of the config file to a running cc-connect.
type reloader struct {
	log   *slog.Logger
	level *slog.LevelVar // the process log's level, which applies live
	eng   reloadTarget
	deps  adapterDeps
	locks *instanceLocks

	mu      sync.Mutex     // one reload at a time; guards the fields below
	running *config.Config // what runs: the last good file, restart-only keys as started
	lastBad string         // the failure last announced, so a broken file is announced once

	// secrets is the set of variables no agent child gets (shared with the
	// engine's agent config): a reload that reads a token from a new
	// variable adds it, even though [agent] itself needs a restart.
	secrets *agentproc.SecretVars
	// redact hides the secrets' values in the activity feed: a reload
	// that brings a new token adds it before anything is published.
	redact *agentenv.Redactor
	// activity is the feed (the audit trail reads it): a reload that
	// fails is recorded there, as one that applies is by the engine.
	activity activity.Sink
}

// reload loads the file again and applies what changed. why says what
// triggered it, for the log.
func (r *reloader) reload(ctx context.Context, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, reloadTimeout)
	defer cancel()
	path := r.running.Path
	r.log.Info("Reloading the config", "path", path, "trigger", why)

	cfg, err := config.Load(path)
	if err == nil {
		// Before anything else: from now on a token may be read from
		// these variables.
		agentcfg.AddSecrets(r.secrets, cfg)
		r.redact.Add(cfg.SecretValues()...)
		if err = checkAvailable(cfg, adapterFactories); err != nil {
			err = fmt.Errorf("invalid config %s:\n%w", path, err)
		} else if r.running.CheckRoot() == nil {
			// What run refuses at start, a reload may not bring about
			// (a chat platform added to a terminal run as root).
			if rerr := cfg.CheckRoot(); rerr != nil {
				err = fmt.Errorf("invalid config %s:\n%w", path, rerr)
			}
		}
	}
	if err != nil {
		r.fail(ctx, err)
		return
	}
	ch := config.Diff(r.running, cfg)
	r.lastBad = "" // a good file: the next failure is news again
	if ch.Empty() {
		r.log.Info("Config reloaded: nothing changed", "path", path)
		return
	}
	if kept, held := clusterHold(r.running, cfg, ch); len(held) > 0 {
		// Every host must route alike: applied by one host alone, a
		// change of what routes events would split the bot. The rest
		// (rights above all) applies now.
		r.log.Warn("Config change held until a restart", "path", path, "keys", held,
			"why", "every cluster host must route alike: [cluster], [[platforms]], which [[bindings]] exist and their "+
				"platform, channel, workspace, host and standby change at a restart (docs/cluster.md)")
		cfg, ch = kept, config.Diff(r.running, kept)
		if ch.Empty() {
			return
		}
	}
	restart := slices.Clone(ch.Restart)

	// The terminal chat cannot be restarted: the old reader would still
	// hold stdin. Its entry applies at the next start.
	local := func(name string, c *config.Config) bool { return platformOf(c, name).Type == config.TypeLocal }
	var add []platform.Adapter
	var remove []string
	var tokens []config.Platform // platforms whose token lock changes
	build := func(name string) error {
		p := platformOf(cfg, name)
		f := adapterFactories[p.Type]
		a, err := f(p, r.deps)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", platformKey(cfg, name), name, err)
		}
		observe(a, r.deps.Observer)
		add = append(add, a)
		return nil
	}
	var errs []error
	for _, name := range ch.PlatformsAdded {
		if local(name, cfg) {
			restart = append(restart, "platforms ("+name+")")
			continue
		}
		errs = append(errs, build(name))
		tokens = append(tokens, platformOf(cfg, name))
	}
	for _, pc := range ch.PlatformsChanged {
		if local(pc.Name, r.running) || local(pc.Name, cfg) {
			restart = append(restart, "platforms ("+pc.Name+")")
			continue
		}
		errs = append(errs, build(pc.Name))
		if platformToken(platformOf(cfg, pc.Name)) != platformToken(platformOf(r.running, pc.Name)) {
			tokens = append(tokens, platformOf(cfg, pc.Name))
		}
	}
	for _, name := range ch.PlatformsRemoved {
		if local(name, r.running) {
			restart = append(restart, "platforms ("+name+")")
			continue
		}
		remove = append(remove, name)
	}
	if err := errors.Join(errs...); err != nil {
		r.fail(ctx, fmt.Errorf("invalid config %s:\n%w", path, err))
		return
	}
	// A token that moves to another entry (a platform renamed) keeps the
	// lock this process holds: locking it again would find it held.
	moves := map[string]string{}
	tokens = slices.DeleteFunc(tokens, func(p config.Platform) bool {
		for _, q := range r.running.Platforms {
			gone := slices.Contains(remove, q.Name) || platformToken(platformOf(cfg, q.Name)) != platformToken(q)
			if q.Name != p.Name && platformToken(q) == platformToken(p) && gone {
				moves[p.Name] = q.Name
				return true
			}
		}
		return false
	})
	taken, err := r.locks.take(tokens)
	if err != nil {
		r.fail(ctx, err)
		return
	}
	if !ch.Live() && len(add) == 0 && len(remove) == 0 {
		for _, key := range restart {
			r.log.Warn("Config change needs a restart to apply", "key", key)
		}
		return
	}
	// [chat] applies live; files.send_file_max_size in it stays as started.
	team := teamOptions(runningConfig(r.running, cfg))
	if err := r.eng.Reload(ctx, engine.Reload{Bindings: cfg.BindingSpecs(), Adapters: add, Remove: remove, Team: &team,
		Changes: ch.Summary()}); err != nil {
		r.locks.drop(taken)
		r.fail(ctx, err)
		return
	}
	r.locks.move(moves)
	r.locks.swap(taken, remove)
	r.level.Set(cfg.Log.SlogLevel())

	for _, w := range cfg.Warnings {
		r.log.Warn("Config warning", "warning", w)
	}
	for _, line := range ch.Summary() {
		r.log.Info("Config change applied", "change", line)
	}
	for _, key := range restart {
		r.log.Warn("Config change needs a restart to apply", "key", key)
	}
	r.running = runningConfig(r.running, cfg)
}

// fail keeps the running config, logs each problem with its key, and tells
// the admins once per distinct failure.
func (r *reloader) fail(ctx context.Context, err error) {
	keys := problemKeys(err)
	var failed []string
	for _, p := range problems(err) {
		r.log.Error("Config reload failed; the running config stays", "path", r.running.Path, "key", p.key, "error", p.text)
		if p.key != "" {
			failed = append(failed, p.key+": "+p.text)
		} else {
			failed = append(failed, p.text)
		}
	}
	// Every failed attempt, also one announced before: the trail says
	// what happened when. The feed redacts any secret the text holds.
	activity.Or(r.activity).Record(activity.Event{Time: time.Now(), Kind: activity.Reloaded,
		Outcome: "failed: " + strings.Join(failed, "; ")})
	if err.Error() == r.lastBad {
		return
	}
	r.lastBad = err.Error()
	what := "it has errors"
	if len(keys) > 0 {
		what = "it has errors at " + strings.Join(keys, ", ")
	}
	told := r.eng.NotifyAdmins(ctx, fmt.Sprintf("the cc-connect config file was changed, but %s, so cc-connect keeps running the previous config. The details are in its log.", what))
	r.log.Info("Told admins about the failed reload", "platforms", told)
}

type problem struct{ key, text string }

// problems splits a config error into its problems, one per key, as
// config.Load writes them ("bindings[1].workspace: … does not exist") under
// a first line naming the file.
func problems(err error) []problem {
	lines := strings.Split(err.Error(), "\n")
	var out []problem
	for _, l := range lines[1:] {
		key, text, ok := strings.Cut(strings.TrimSpace(l), ": ")
		if ok && key != "" && !strings.ContainsAny(key, " \t") {
			out = append(out, problem{key, text})
		}
	}
	if len(out) == 0 {
		return []problem{{"", err.Error()}}
	}
	return out
}

// problemKeys lists the keys at fault, without repeats.
func problemKeys(err error) []string {
	var keys []string
	for _, p := range problems(err) {
		if p.key != "" && !slices.Contains(keys, p.key) {
			keys = append(keys, p.key)
		}
	}
	return keys
}

// platformKey is the config key of the platform named name.
func platformKey(c *config.Config, name string) string {
	for i, p := range c.Platforms {
		if p.Name == name {
			return fmt.Sprintf("platforms[%d]", i)
		}
	}
	return "platforms"
}

// platformOf returns the [[platforms]] entry named name.
func platformOf(c *config.Config, name string) config.Platform {
	for _, p := range c.Platforms {
		if p.Name == name {
			return p
		}
	}
	return config.Platform{}
}

// runningConfig is the config in force after a reload: the new file, with
// the keys that need a restart as the process started with them (so that
// the next reload still reports them).
func runningConfig(old, cur *config.Config) *config.Config {
	out := *cur
	out.State, out.Agent, out.Files, out.Metrics = old.State, old.Agent, old.Files, old.Metrics
	out.Log.Format = old.Log.Format
	out.Platforms = slices.Clone(cur.Platforms)
	for i, p := range out.Platforms {
		if p.Type == config.TypeLocal || platformOf(old, p.Name).Type == config.TypeLocal {
			if was := platformOf(old, p.Name); was.Name != "" {
				out.Platforms[i] = was
			}
		}
	}
	return &out
}

// watch reloads on SIGHUP and when the config file changes, until ctx ends.
// It watches the file's folder, not the file: an editor that saves by
// writing a new file and renaming it over the old one (vim, most IDEs)
// replaces the inode a watch on the file would follow. A symlinked config
// (a Kubernetes ConfigMap) is reloaded when its target changes.
func (r *reloader) watch(ctx context.Context, hup <-chan os.Signal) {
	path := r.running.Path
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := fsnotify.NewWatcher()
	if err == nil {
		defer w.Close()
		err = w.Add(filepath.Dir(path))
		events, errs = w.Events, w.Errors
	}
	if err != nil {
		r.log.Error("Watching the config file failed; only SIGHUP reloads it", "path", path, "error", err)
		events, errs = nil, nil
	}
	target, _ := filepath.EvalSymlinks(path)
	r.log.Debug("Watching the config file", "path", path)

	var debounce *time.Timer
	defer func() {
		if debounce != nil {
			debounce.Stop()
		}
	}()
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.reload(ctx, "SIGHUP")
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			now, _ := filepath.EvalSymlinks(path)
			ours := filepath.Clean(ev.Name) == path && ev.Has(fsnotify.Write|fsnotify.Create)
			if !ours && (now == "" || now == target) {
				continue
			}
			target = now
			if debounce == nil {
				debounce = time.NewTimer(reloadDebounce)
			} else {
				debounce.Reset(reloadDebounce)
			}
			fire = debounce.C
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			r.log.Warn("Watching the config file failed; SIGHUP still reloads", "error", err)
		case <-fire:
			fire = nil
			r.reload(ctx, "file changed")
		}
	}
}

// instanceLocks are the locks a running cc-connect holds: its state dir,
// and one per platform bot token, so that a second cc-connect on the same
// state or the same bot refuses to start.
type instanceLocks struct {
	mu     sync.Mutex // guards the fields below
	state  *lease.Lock
	tokens map[string]*lease.Lock // by platform name
}

// take locks the tokens of ps (platforms added, or whose token changed).
// On error it holds none of them.
func (l *instanceLocks) take(ps []config.Platform) (map[string]*lease.Lock, error) {
	taken := map[string]*lease.Lock{}
	for _, p := range ps {
		tok := platformToken(p)
		if tok == "" {
			continue
		}
		lk, err := lease.Token(lease.HostLockDir(), p.Name, tok)
		if err != nil {
			l.drop(taken)
			return nil, fmt.Errorf("platforms (%s): %w", p.Name, err)
		}
		taken[p.Name] = lk
	}
	return taken, nil
}

// move hands held token locks to the platforms that now use the tokens
// (new name -> old name).
func (l *instanceLocks) move(moves map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := map[string]*lease.Lock{}
	for _, old := range moves {
		held[old] = l.tokens[old]
		delete(l.tokens, old)
	}
	for name, old := range moves {
		if lk := held[old]; lk != nil {
			l.tokens[name] = lk
		}
	}
}

// drop releases locks taken for a reload that did not happen.
func (l *instanceLocks) drop(taken map[string]*lease.Lock) {
	for _, lk := range taken {
		_ = lk.Release()
	}
}

// swap keeps the locks taken by a reload, releasing those they replace and
// those of removed platforms.
func (l *instanceLocks) swap(taken map[string]*lease.Lock, removed []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tokens == nil {
		l.tokens = map[string]*lease.Lock{}
	}
	for _, name := range removed {
		if old := l.tokens[name]; old != nil {
			_ = old.Release()
			delete(l.tokens, name)
		}
	}
	for name, lk := range taken {
		if old := l.tokens[name]; old != nil {
			_ = old.Release()
		}
		l.tokens[name] = lk
	}
}

// release frees every lock.
func (l *instanceLocks) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, lk := range l.tokens {
		_ = lk.Release()
		delete(l.tokens, name)
	}
	if l.state != nil {
		_ = l.state.Release()
		l.state = nil
	}
}

var _ reloadTarget = (*engine.Engine)(nil)
