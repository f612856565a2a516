package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/jonboulle/clockwork"

	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/metrics"
	"github.com/cc-connect/cc-connect/schedule"
	"github.com/cc-connect/cc-connect/spend"
	"github.com/cc-connect/cc-connect/trigger"
	"github.com/cc-connect/cc-connect/webhook"
)

// unattended is what `cc-connect run` starts besides the engine for work
// that starts without a person (docs/unattended.md): the spending ledger,
// the scheduler and the webhook listener. It is opened before the engine
// (a ledger that cannot be read, or a taken port, fails the start) and
// started once the engine, which takes the runs, exists.
type unattended struct {
	log   *slog.Logger
	clock clockwork.Clock

	spend   *spend.Ledger
	ledger  *schedule.Ledger // nil without [[schedules]]
	ln      net.Listener     // nil without webhooks.addr
	replays *webhook.Replays // nil without webhooks.addr

	sched *schedule.Scheduler // set by start
	wg    sync.WaitGroup
}

// openUnattended opens the spending ledger, the schedule ledger when
// schedules are configured, and the webhook listener and its replay record
// when webhooks.addr is set. On error what was opened is closed.
func openUnattended(cfg *config.Config, clock clockwork.Clock, log *slog.Logger) (*unattended, error) {
	u := &unattended{log: log, clock: clock}
	loc, err := schedule.LoadZone(cfg.Spend.Timezone)
	if err != nil {
		return nil, fmt.Errorf("spend.timezone: %w", err)
	}
	if u.spend, err = spend.Open(spend.Path(cfg.State.Dir), loc, clock.Now); err != nil {
		return nil, fmt.Errorf("opening the spending ledger: %w", err)
	}
	u.spend.SetReserve(float64(cfg.Spend.TurnReserveUSD))
	if len(cfg.Schedules) > 0 {
		if u.ledger, err = schedule.OpenLedger(schedule.LedgerPath(cfg.State.Dir)); err != nil {
			return nil, fmt.Errorf("opening the schedule ledger: %w", err)
		}
	}
	if cfg.Webhooks.Addr != "" {
		if u.replays, err = webhook.OpenReplays(webhook.ReplaysPath(cfg.State.Dir), clock.Now); err != nil {
			return nil, err
		}
		if u.ln, err = webhook.Listen(cfg.Webhooks.Addr, cfg.Webhooks.AllowRemote); err != nil {
			_ = u.replays.Close()
			return nil, err
		}
	}
	return u, nil
}

// close releases the listener and the replay record of an unattended
// that was not started.
func (u *unattended) close() {
	if u.ln != nil {
		_ = u.ln.Close()
	}
	if u.replays != nil {
		_ = u.replays.Close()
	}
}

// scheduler builds the scheduler of cfg's schedules, taking runs into sub
// and firing a schedule only while serves says so (nil: always), with the
// pauses kept in pauses (nil: in the ledger); nil without schedules. It
// starts nothing: start runs it.
func (u *unattended) scheduler(cfg *config.Config, sub trigger.Submitter, serves func(platform, channel string) bool, pauses schedule.Pauses) (*schedule.Scheduler, error) {
	if u.ledger == nil {
		return nil, nil
	}
	scheds, err := schedules(cfg)
	if err != nil {
		return nil, err
	}
	s, err := schedule.New(schedule.Options{Schedules: scheds, Ledger: u.ledger, Submitter: sub, Clock: u.clock,
		Logger: u.log.With("component", "schedule"), Serves: serves, Pauses: pauses})
	if err != nil {
		return nil, fmt.Errorf("schedules: %w", err)
	}
	u.sched = s
	return s, nil
}

// start serves the webhooks and runs the scheduler until ctx ends; wait
// returns when both have stopped (the webhook requests in flight
// answered).
func (u *unattended) start(ctx context.Context, cfg *config.Config, sub trigger.Submitter) error {
	if u.ln != nil {
		hooks, err := webhookHooks(cfg)
		if err != nil {
			return err
		}
		srv, err := webhook.New(webhook.Options{Hooks: hooks, MaxBody: int64(cfg.Webhooks.MaxBody), Submitter: sub,
			Replays: u.replays, Logger: u.log.With("component", "webhook"), Now: u.clock.Now})
		if err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
		ln := u.ln
		u.log.Info("Serving webhooks", "addr", ln.Addr().String(), "hooks", len(hooks))
		u.wg.Go(func() {
			if err := srv.Serve(ctx, ln); err != nil {
				u.log.Error("Serving webhooks stopped", "error", err)
			}
		})
	}
	if s := u.sched; s != nil {
		u.log.Info("Running schedules", "schedules", len(cfg.Schedules))
		u.wg.Go(func() {
			if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				u.log.Error("Schedules stopped: the schedule ledger could not be written", "error", err)
			}
		})
	}
	return nil
}

// wait returns when what start started has stopped.
func (u *unattended) wait() { u.wg.Wait() }

// schedules turns the [[schedules]] entries into the scheduler's.
func schedules(cfg *config.Config) ([]schedule.Schedule, error) {
	out := make([]schedule.Schedule, len(cfg.Schedules))
	for i, s := range cfg.Schedules {
		c, err := schedule.ParseCron(s.Cron, s.Timezone)
		if err != nil {
			return nil, fmt.Errorf("schedules[%d].cron: %w", i, err)
		}
		out[i] = schedule.Schedule{Name: s.Name, Cron: c, Platform: s.Platform, Channel: s.Channel, Thread: s.Thread,
			Continue: s.Continue, Prompt: s.Prompt, CatchUp: s.CatchUp.D(), Overlap: schedule.Overlap(s.Overlap)}
	}
	return out, nil
}

// webhookHooks turns the [[webhooks.hooks]] entries into the listener's.
func webhookHooks(cfg *config.Config) ([]webhook.Hook, error) {
	out := make([]webhook.Hook, len(cfg.Webhooks.Hooks))
	for i, h := range cfg.Webhooks.Hooks {
		key := fmt.Sprintf("webhooks.hooks[%d]", i)
		tmpl, err := webhook.ParseTemplate(h.Name, string(h.Template))
		if err != nil {
			return nil, fmt.Errorf("%s.template: %w", key, err)
		}
		var filter *webhook.Template
		if h.Filter != "" {
			if filter, err = webhook.ParseTemplate(h.Name+" filter", string(h.Filter)); err != nil {
				return nil, fmt.Errorf("%s.filter: %w", key, err)
			}
		}
		out[i] = webhook.Hook{Name: h.Name, Secret: []byte(h.Secret.Reveal()), Sender: webhook.Sender(h.Sender),
			Platform: h.Platform, Channel: h.Channel, Prompt: h.Prompt, Template: tmpl, Filter: filter}
	}
	return out, nil
}

// spendFigures reads the ledger's figures for the metrics.
func spendFigures(l *spend.Ledger) func() []metrics.Spend {
	return func() []metrics.Spend {
		figs := l.Figures()
		out := make([]metrics.Spend, len(figs))
		for i, f := range figs {
			out[i] = metrics.Spend{Binding: f.Binding, User: f.User, Day: f.Day, Month: f.Month}
		}
		return out
	}
}
