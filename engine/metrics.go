package engine

import (
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
)

// wireMetrics hands the collector the figures it reads at each scrape: the
// conversations by state, the live processes, the spares by state (ready,
// or starting: spawning or in their handshake).
func wireMetrics(m Metrics, convs *conv.Set, slots *procs.Caps, spare *procs.Spares) {
	m.SetSessionsFunc(convs.ByState)
	m.SetProcessesFunc(slots.Live)
	m.SetSparesFunc(func() map[string]int {
		ready, starting := spare.Count()
		return map[string]int{"ready": ready, "starting": starting}
	})
}
