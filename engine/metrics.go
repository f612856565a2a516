package engine

// wireMetrics hands the collector the funcs it reads at each scrape.
func (e *Engine) wireMetrics() {
	e.metrics.SetSessionsFunc(e.convs.ByState)
	e.metrics.SetProcessesFunc(e.slots.Live)
	e.metrics.SetSparesFunc(e.sparesByState)
}

// sparesByState counts the spare processes by state: ready, or starting
// (spawning or in their handshake).
func (e *Engine) sparesByState() map[string]int {
	ready, starting := e.spare.Count()
	return map[string]int{"ready": ready, "starting": starting}
}
