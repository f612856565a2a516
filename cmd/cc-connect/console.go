package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/audit"
	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/console"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/schedule"
	"github.com/cc-connect/cc-connect/spend"
)

// webConsole is the console in the browser when [console] is on: its
// listener, taken before the engine starts so that a taken port fails
// the start, and its server, which reads the engine through
// consoleBackend.
type webConsole struct {
	srv     *console.Server
	ln      net.Listener
	backend *consoleBackend
	served  chan struct{}
}

// openConsole listens for the console; nil when it is off. now is the
// clock of its links' and sessions' expiry (the run's: a test binary's
// moves when the test says).
func openConsole(cfg *config.Config, now func() time.Time, log *slog.Logger) (*webConsole, error) {
	c := cfg.Console
	if !c.Enabled {
		return nil, nil
	}
	var proxies []netip.Prefix
	if c.BehindProxy {
		for _, p := range c.TrustedProxies {
			pfx, err := config.ParseProxy(p)
			if err != nil {
				return nil, fmt.Errorf("console.trusted_proxies: %w", err)
			}
			proxies = append(proxies, pfx)
		}
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening for the console on %s: %w", c.Listen, err)
	}
	base := c.BaseURL()
	if c.URL == "" {
		// The port the listener got (listen = "127.0.0.1:0" picks one).
		c.Listen = ln.Addr().String()
		base = c.BaseURL()
	}
	b := &consoleBackend{}
	if cfg.Audit.Enabled {
		b.auditPath = cfg.Audit.Path
	}
	srv := console.New(console.Settings{BaseURL: base, SessionTTL: c.SessionTTL.D(), TrustedProxies: proxies,
		TLSCert: c.TLSCert, TLSKey: c.TLSKey, Log: log.With("component", "console"), Now: now}, b)
	return &webConsole{srv: srv, ln: ln, backend: b, served: make(chan struct{})}, nil
}

// links is the engine's ConsoleLinks.
func (w *webConsole) links(plat, userID, userName string) (string, error) {
	return w.srv.Issue(console.Identity{Platform: plat, UserID: userID, UserName: userName})
}

// start serves the console for eng until ctx ends; wait waits for it.
// ch is this host's part in the cluster; nil alone.
func (w *webConsole) start(ctx context.Context, eng *engine.Engine, sched *schedule.Scheduler, ledger *spend.Ledger, ch *clusterHost, log *slog.Logger) {
	w.backend.view, w.backend.sched, w.backend.ledger = eng.Console(), sched, ledger
	if ch != nil {
		w.backend.cluster = ch.node.Status
	}
	log.Info("Serving the console", "addr", w.ln.Addr().String(), "url", w.srv.BaseURL())
	go func() {
		defer close(w.served)
		if err := w.srv.Serve(ctx, w.ln); err != nil {
			log.Error("Serving the console stopped", "error", err)
		}
	}()
}

func (w *webConsole) wait() {
	if w != nil {
		<-w.served
	}
}

// consoleBackend is the engine's ConsoleView as the console's Backend,
// with the scheduler and the spending ledger for their pages.
type consoleBackend struct {
	view      engine.ConsoleView
	sched     *schedule.Scheduler // nil: no schedules
	ledger    *spend.Ledger
	auditPath string // "": the trail is off
	// cluster reads what `cluster status` shows; nil alone.
	cluster func(context.Context) (cluster.Report, error)
}

var (
	_ console.Backend   = (*consoleBackend)(nil)
	_ console.Schedules = (*consoleBackend)(nil)
	_ console.Spending  = (*consoleBackend)(nil)
	_ console.Trail     = (*consoleBackend)(nil)
	_ console.Turns     = (*consoleBackend)(nil)
)

// auditRows is how many events the audit page shows, newest first.
const auditRows = 200

// Audit reads the audit trail's newest events of the bindings that allow
// who (an event's binding read against the bindings in force now).
func (b *consoleBackend) Audit(_ context.Context, who console.Identity, f console.AuditFilter) ([]console.AuditRow, error) {
	if b.auditPath == "" {
		return nil, nil
	}
	mine := b.mine(who)
	filter := audit.Filter{Conversation: f.Conversation, User: f.User}
	if f.Kind != "" {
		filter.Kinds = []activity.Kind{activity.Kind(f.Kind)}
	}
	var rows []console.AuditRow
	_, err := audit.Read(b.auditPath, filter, func(e activity.Event) error {
		if !mine[e.Binding] {
			return nil
		}
		rows = append(rows, console.AuditRow{Time: e.Time, Kind: string(e.Kind), Conversation: e.Conversation,
			User: cmp.Or(e.UserName, e.User), Tool: e.Tool, Input: e.Input, Outcome: cmp.Or(e.Outcome, e.Choice)})
		if len(rows) > 2*auditRows {
			rows = slices.Clone(rows[len(rows)-auditRows:])
		}
		return nil
	})
	if len(rows) > auditRows {
		rows = rows[len(rows)-auditRows:]
	}
	slices.Reverse(rows)
	return rows, err
}

// Schedules lists the schedules of the bindings that allow who; admins
// of a schedule's binding may pause and resume it.
func (b *consoleBackend) Schedules(ctx context.Context, who console.Identity) ([]console.Schedule, error) {
	if b.sched == nil {
		return nil, nil
	}
	list, err := b.sched.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []console.Schedule
	for _, st := range list {
		if st.Platform != who.Platform {
			continue
		}
		r, key, ok := b.view.RightsIn(st.Platform, st.Channel, who.UserID)
		if !ok || !r.Use {
			continue
		}
		out = append(out, console.Schedule{Name: st.Name, Cron: st.Cron, Binding: key, Next: st.Next, Paused: st.Paused,
			PausedBy: st.PausedBy, LastRun: st.LastRun, Admin: r.Admin, LastError: st.LastError, LastErrorAt: st.LastErrorAt})
	}
	return out, nil
}

// SetPaused pauses or resumes a schedule for an admin of its binding, as
// !schedules pause|resume does.
func (b *consoleBackend) SetPaused(ctx context.Context, who console.Identity, name string, paused bool) error {
	list, err := b.Schedules(ctx, who)
	if err != nil {
		return err
	}
	for _, s := range list {
		if s.Name != name {
			continue
		}
		if !s.Admin {
			return fmt.Errorf("%w: not an admin of %s", console.ErrNotAllowed, s.Binding)
		}
		if paused {
			_, err = b.sched.Pause(ctx, name, who.UserID)
		} else {
			_, err = b.sched.Resume(ctx, name, who.UserID)
		}
		return err
	}
	return fmt.Errorf("%w: no schedule %q of yours", console.ErrNotAllowed, name)
}

// Spend is today's and this month's spend of the bindings that allow who.
func (b *consoleBackend) Spend(who console.Identity) []console.SpendRow {
	if b.ledger == nil {
		return nil
	}
	mine := b.mine(who)
	var out []console.SpendRow
	for _, f := range b.ledger.Figures() {
		if mine[f.Binding] {
			out = append(out, console.SpendRow{Binding: f.Binding, User: f.User, Day: f.Day, Month: f.Month})
		}
	}
	return out
}

// SpendByDay is the spend of each day the ledger keeps, of the bindings
// that allow who.
func (b *consoleBackend) SpendByDay(who console.Identity) []console.SpendDay {
	if b.ledger == nil {
		return nil
	}
	mine := b.mine(who)
	var out []console.SpendDay
	for _, d := range b.ledger.Days() {
		if mine[d.Binding] {
			out = append(out, console.SpendDay{Day: d.Day, Binding: d.Binding, User: d.User, USD: d.USD})
		}
	}
	return out
}

func (b *consoleBackend) Conversations(who console.Identity) ([]console.Conversation, error) {
	cs, err := b.view.Conversations(who.Platform, who.UserID)
	if err != nil {
		return nil, err
	}
	out := make([]console.Conversation, len(cs))
	holders := b.holders(context.Background())
	for i, c := range cs {
		out[i] = conversationOf(c)
		if holders != nil {
			// In a cluster: the host holding the binding's lease now.
			out[i].Host = cmp.Or(holders[c.Binding], "none now")
		}
	}
	return out, nil
}

func (b *consoleBackend) Conversation(who console.Identity, key string) (console.Conversation, bool) {
	c, ok := b.view.Conversation(key, who.UserID)
	if !ok || c.Platform != who.Platform {
		return console.Conversation{}, false
	}
	return conversationOf(c), true
}

func (b *consoleBackend) Answer(ctx context.Context, who console.Identity, key string, a console.Answer) error {
	var opts platform.OptionSet
	for _, i := range a.Options {
		opts = opts.With(i)
	}
	return notAllowed(b.view.Answer(ctx, key, who.UserID, who.UserName,
		engine.ConsoleAnswer{RequestID: a.Request, Choice: platform.Choice(a.Choice), Question: a.Question, Options: opts}))
}

func (b *consoleBackend) Stop(ctx context.Context, who console.Identity, key string) error {
	return notAllowed(b.view.Stop(ctx, key, who.UserID, who.UserName))
}

// Changes is what the last turn of key changed, as !status reads it.
func (b *consoleBackend) Changes(who console.Identity, key string) (console.TurnChanges, bool) {
	if _, ok := b.Conversation(who, key); !ok {
		return console.TurnChanges{}, false
	}
	c, ok := b.view.Changes(key, who.UserID)
	if !ok {
		return console.TurnChanges{}, false
	}
	return console.TurnChanges{Turn: c.Turn, Files: c.Files, Added: c.Added, Removed: c.Removed, Refusal: c.Refusal,
		Diff: c.Diff, DiffKept: c.DiffKept}, true
}

// Revert presses the turn's Revert button as the chat's would.
func (b *consoleBackend) Revert(ctx context.Context, who console.Identity, key, turn string) (string, error) {
	if _, ok := b.Conversation(who, key); !ok {
		return "", console.ErrNotAllowed
	}
	id, err := b.view.Revert(ctx, key, who.UserID, who.UserName, turn)
	return id, notAllowed(err)
}

func notAllowed(err error) error {
	if errors.Is(err, engine.ErrNotAllowed) {
		return fmt.Errorf("%w: %w", console.ErrNotAllowed, err)
	}
	return err
}

func conversationOf(c engine.ConsoleConversation) console.Conversation {
	return console.Conversation{Key: c.Key, Binding: c.Binding, Channel: c.Channel, Thread: c.Thread, Host: c.Host,
		State: c.State, Queued: c.Queued, Model: c.Model, ContextPct: c.ContextPct, CostUSD: c.TotalCostUSD,
		LastActivity: c.LastActivity, Rights: console.Rights{Approve: c.Rights.Approve, Admin: c.Rights.Admin}}
}
