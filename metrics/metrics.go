// Package metrics counts what cc-connect does, for Prometheus, and serves
// /metrics and /healthz on an address the admin chose (loopback unless told
// otherwise). It owns the metric names and nothing else: the engine and the
// adapters call its methods, and a nil *Metrics ignores every call, so
// wiring it is optional and costs nothing when [metrics] is off.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace prefixes every metric name: cc_connect_turns_total, ….
const Namespace = "cc_connect"

// Buckets, chosen for what they measure. A turn runs from a second (a short
// answer) to an hour (a long refactor with tools); a permission request is
// answered in seconds or times out after agent.permission_timeout (10m by
// default); context use is a percentage.
var (
	turnBuckets       = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600}
	permissionBuckets = []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800}
	contextBuckets    = []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 100}
	// Accepting a message is one journal write and its fsync: under a
	// millisecond on a quiet local disk, and Slack redelivers what is not
	// acked within 3 s.
	acceptBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
)

// Metrics holds cc-connect's collectors in a registry of its own (not the
// global one), so that two instances in one test binary do not collide.
// Every method is safe for concurrent use and is a no-op on a nil receiver.
type Metrics struct {
	reg *prometheus.Registry

	turnsStarted       prometheus.Counter
	turnsRunning       prometheus.Gauge
	turns              *prometheus.CounterVec
	turnDuration       *prometheus.HistogramVec
	fallbacks          *prometheus.CounterVec
	permissionRequests prometheus.Counter
	permissionAnswers  *prometheus.CounterVec
	permissionWait     *prometheus.HistogramVec
	queueDepth         prometheus.Gauge
	platformEvents     *prometheus.CounterVec
	acceptDuration     *prometheus.HistogramVec
	platformErrors     *prometheus.CounterVec
	reconnects         *prometheus.CounterVec
	contextPercent     prometheus.Histogram
	spareTakes         *prometheus.CounterVec

	mu            sync.Mutex // guards the funcs below, set after New by the engine
	sessionsFunc  func() map[string]int
	processesFunc func() int
	sparesFunc    func() map[string]int
	healthFunc    func() error
	spendFunc     func() []Spend
}

// New builds the collectors. It has no side effects: nothing is served
// until Serve.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := factory{m.reg}
	m.turnsStarted = f.counter("turns_started_total", "Turns sent to Claude Code.")
	m.turnsRunning = f.gauge("turns_running", "Turns started and not yet finished.")
	m.turns = f.counterVec("turns_total", "Turns finished, by outcome (ok, error, interrupted, …).", "outcome")
	m.turnDuration = f.histogramVec("turn_duration_seconds", "How long turns took, from start to result, by outcome.", turnBuckets, "outcome")
	m.fallbacks = f.counterVec("fresh_fallbacks_total", "Sessions restarted fresh because the old one could not go on, by cause (session_not_found, prompt_too_long, …).", "cause")
	m.permissionRequests = f.counter("permission_requests_total", "Permission requests Claude Code asked the chat to answer.")
	m.permissionAnswers = f.counterVec("permission_answers_total", "Permission requests answered, by choice (allow, deny, timeout, …).", "choice")
	m.permissionWait = f.histogramVec("permission_wait_seconds", "How long permission requests waited for their answer, by choice.", permissionBuckets, "choice")
	m.queueDepth = f.gauge("queue_depth", "Messages waiting behind a running turn, over all sessions.")
	m.platformEvents = f.counterVec("platform_events_total", "Events received from chat platforms, by platform instance and kind (message, action, …).", "platform", "kind")
	m.acceptDuration = f.histogramVec("accept_duration_seconds", "How long accepting a chat message took, from the engine's receiving it to its journal record on disk (the platform's ack waits for it; Slack redelivers after 3 s), by platform instance.", acceptBuckets, "platform")
	m.platformErrors = f.counterVec("platform_errors_total", "Errors talking to chat platforms, by platform instance.", "platform")
	m.reconnects = f.counterVec("platform_reconnects_total", "Reconnections to chat platforms, by platform instance.", "platform")
	m.spareTakes = f.counterVec("spare_takes_total", "New Claude sessions with the binding's own model and mode (those a spare can serve) started while agent.prewarm is on, by what they found: ready (a spare that had answered its handshake), loading (one still in it) or none (a process of their own).", "outcome")
	m.contextPercent = f.histogram("context_percent", "Context window use after each turn, in percent.", contextBuckets)

	m.reg.MustRegister(
		statesCollector{read: m.sessions, desc: prometheus.NewDesc(Namespace+"_sessions",
			"Sessions known to the engine, by state (idle, running, requires_action, …).", []string{"state"}, nil)},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "agent_processes",
			Help: "Live Claude Code processes."}, m.liveProcesses),
		statesCollector{read: m.spares, desc: prometheus.NewDesc(Namespace+"_spare_processes",
			"Spare Claude Code processes (agent.prewarm), by state (ready, starting); included in agent_processes.", []string{"state"}, nil)},
		newSpendCollector(m),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// factory registers each collector as it is built.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

// label keeps an empty label value from making a series nobody can name in
// a query.
func label(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// TurnStarted counts a turn sent to Claude Code.
func (m *Metrics) TurnStarted() {
	if m == nil {
		return
	}
	m.turnsStarted.Inc()
	m.turnsRunning.Inc()
}

// TurnFinished counts a turn that ended, with its outcome (a short fixed
// word such as "ok", "error", "interrupted") and how long it ran. Every
// TurnStarted must be followed by exactly one TurnFinished.
func (m *Metrics) TurnFinished(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	outcome = label(outcome)
	m.turnsRunning.Dec()
	m.turns.WithLabelValues(outcome).Inc()
	m.turnDuration.WithLabelValues(outcome).Observe(d.Seconds())
}

// MessageAccepted times a chat message the engine accepted (journaled), by
// platform instance.
func (m *Metrics) MessageAccepted(platform string, d time.Duration) {
	if m == nil {
		return
	}
	m.acceptDuration.WithLabelValues(label(platform)).Observe(d.Seconds())
}

// Fallback counts a session restarted fresh, by cause (a short fixed word
// such as "session_not_found" or "prompt_too_long").
func (m *Metrics) Fallback(cause string) {
	if m == nil {
		return
	}
	m.fallbacks.WithLabelValues(label(cause)).Inc()
}

// PermissionRequested counts a permission request shown in the chat.
func (m *Metrics) PermissionRequested() {
	if m == nil {
		return
	}
	m.permissionRequests.Inc()
}

// PermissionAnswered counts a permission request's end, by choice ("allow",
// "deny", "timeout", "cancelled", …), and how long it waited.
func (m *Metrics) PermissionAnswered(choice string, wait time.Duration) {
	if m == nil {
		return
	}
	choice = label(choice)
	m.permissionAnswers.WithLabelValues(choice).Inc()
	m.permissionWait.WithLabelValues(choice).Observe(wait.Seconds())
}

// QueueDepth sets how many messages wait behind running turns, summed over
// all sessions.
func (m *Metrics) QueueDepth(n int) {
	if m == nil {
		return
	}
	m.queueDepth.Set(float64(n))
}

// PlatformEvent counts an event received from a platform instance (its
// config name) by kind ("message", "action", "edit", …).
func (m *Metrics) PlatformEvent(platform, kind string) {
	if m == nil {
		return
	}
	m.platformEvents.WithLabelValues(label(platform), label(kind)).Inc()
}

// PlatformError counts a failed call to, or a broken connection with, a
// platform instance.
func (m *Metrics) PlatformError(platform string) {
	if m == nil {
		return
	}
	m.platformErrors.WithLabelValues(label(platform)).Inc()
}

// Reconnect counts a reconnection to a platform instance.
func (m *Metrics) Reconnect(platform string) {
	if m == nil {
		return
	}
	m.reconnects.WithLabelValues(label(platform)).Inc()
}

// ContextPercent records a session's context use after a turn (0–100;
// values outside are clamped, as a window change can briefly exceed 100).
func (m *Metrics) ContextPercent(pct int) {
	if m == nil {
		return
	}
	m.contextPercent.Observe(float64(min(max(pct, 0), 100)))
}

// SetSessionsFunc sets what reports the number of sessions by state. It is
// called at each scrape, so the figure is never stale and nothing needs
// updating on every state change. nil removes it.
func (m *Metrics) SetSessionsFunc(f func() map[string]int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.sessionsFunc = f
	m.mu.Unlock()
}

// SetProcessesFunc sets what reports the number of live Claude Code
// processes, called at each scrape. nil removes it.
func (m *Metrics) SetProcessesFunc(f func() int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.processesFunc = f
	m.mu.Unlock()
}

// SetSparesFunc sets what reports the spare processes by state (ready,
// starting), called at each scrape. nil removes it.
func (m *Metrics) SetSparesFunc(f func() map[string]int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.sparesFunc = f
	m.mu.Unlock()
}

// SpareTaken counts a new session's start by what it found of the spares.
func (m *Metrics) SpareTaken(outcome string) {
	if m == nil {
		return
	}
	m.spareTakes.WithLabelValues(label(outcome)).Inc()
}

// SetHealthFunc sets the check behind /healthz: a non-nil error makes it
// answer 503 with the error's text. Without one, /healthz answers 200 while
// the process serves. nil removes it.
func (m *Metrics) SetHealthFunc(f func() error) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.healthFunc = f
	m.mu.Unlock()
}

func (m *Metrics) liveProcesses() float64 {
	m.mu.Lock()
	f := m.processesFunc
	m.mu.Unlock()
	if f == nil {
		return 0
	}
	return float64(f())
}

func (m *Metrics) health() error {
	m.mu.Lock()
	f := m.healthFunc
	m.mu.Unlock()
	if f == nil {
		return nil
	}
	return f()
}

// statesCollector reports a by-state func at scrape time (sessions,
// spares). A GaugeVec would keep a state's last value after the state
// empties; this reports exactly the states the func returns.
type statesCollector struct {
	read func() map[string]int
	desc *prometheus.Desc
}

func (c statesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c statesCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.read() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), label(state))
	}
}

var _ prometheus.Collector = statesCollector{}

// sessions and spares call the func the engine set, if any, outside the
// lock: it takes the engine's own.
func (m *Metrics) sessions() map[string]int {
	m.mu.Lock()
	f := m.sessionsFunc
	m.mu.Unlock()
	return callStates(f)
}

func (m *Metrics) spares() map[string]int {
	m.mu.Lock()
	f := m.sparesFunc
	m.mu.Unlock()
	return callStates(f)
}

func callStates(f func() map[string]int) map[string]int {
	if f == nil {
		return nil
	}
	return f()
}
