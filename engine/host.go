package engine

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/platform"
)

// host is the engine as its conversations reach it (conv.Host): a type of
// its own, so that what a conversation may ask of the engine is this
// list and nothing else.
type host struct{ e *Engine }

var _ conv.Host = host{}

func (h host) Binding(plat, channel string) (binding.Binding, bool) {
	return h.e.routes.resolve(plat, channel)
}

func (h host) Team() conv.TeamOptions { return h.e.routes.teamNow() }

func (h host) Chat(name string) (platform.Adapter, bool) { return h.e.ads.get(name) }

func (h host) Spawn(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (procs.Process, error) {
	return h.e.spawn(ctx, cfg, opts, log)
}

func (h host) Transcripts() procs.Transcripts { return h.e.tx }

func (h host) Notify(a platform.Adapter, to platform.Target, text string) bool {
	return h.e.notices.notify(a, to, text)
}

func (h host) Schedules() conv.Schedules {
	if p := h.e.sched.Load(); p != nil {
		return *p
	}
	return nil
}

// statusTimeout bounds the read of the cluster's report for !status.
const statusTimeout = 5 * time.Second

// ClusterStatus is the cluster's part of !status: "" outside a cluster.
func (h host) ClusterStatus() string {
	e := h.e
	if e.cluster == nil || e.cluster.Status == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(e.bg, statusTimeout)
	defer cancel()
	text, err := e.cluster.Status(ctx)
	if err != nil {
		e.log.Warn("Reading the cluster's status failed", "error", err)
		return "\n\nCluster: could not be read right now (the log has the details)."
	}
	return "\n\n" + strings.TrimRight(text, "\n")
}
