package engine

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/metrics"
	"github.com/cc-connect/cc-connect/platform"
)

var _ Metrics = (*metrics.Metrics)(nil)

// scrape reads /metrics into a map from series (name and labels, as
// written) to value.
func scrape(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

func TestMetricsAfterTurns(t *testing.T) {
	m := metrics.New()
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.Metrics = m })

	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.say("alice", "T1", "please [[TOOL:make test]]")
	ask := waitAsk(t, h)
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "ran: make test")
	h.waitIdle()
	// A resumed session whose context no longer fits: one fresh fallback,
	// and the fresh attempt fails too.
	h.say("alice", "T1", "[[TOOLONG]]")
	h.rec.waitSend(t, "Starting a fresh session failed too")
	h.waitIdle()
	// Refused: an event, not an accept.
	h.say("mallory", "T2", "hi")
	h.rec.waitSend(t, refusalText)

	got := scrape(t, m)
	want := map[string]float64{
		`cc_connect_turns_started_total`:                                   3,
		`cc_connect_turns_running`:                                         0,
		`cc_connect_turns_total{outcome="ok"}`:                             2,
		`cc_connect_turns_total{outcome="error"}`:                          1,
		`cc_connect_turn_duration_seconds_count{outcome="ok"}`:             2,
		`cc_connect_fresh_fallbacks_total{cause="prompt_too_long"}`:        1,
		`cc_connect_permission_requests_total`:                             1,
		`cc_connect_permission_answers_total{choice="allow"}`:              1,
		`cc_connect_permission_wait_seconds_count{choice="allow"}`:         1,
		`cc_connect_platform_events_total{kind="message",platform="fake"}`: 4,
		`cc_connect_platform_events_total{kind="action",platform="fake"}`:  1,
		`cc_connect_accept_duration_seconds_count{platform="fake"}`:        3,
		`cc_connect_context_percent_count`:                                 2,
		`cc_connect_context_percent_bucket{le="20"}`:                       0,
		`cc_connect_context_percent_bucket{le="30"}`:                       2,
		`cc_connect_sessions{state="idle"}`:                                1,
		`cc_connect_queue_depth`:                                           0,
		`cc_connect_agent_processes`:                                       0,
	}
	for series, v := range want {
		if g, ok := got[series]; !ok || g != v {
			t.Errorf("%s = %v (present %t), want %v", series, g, ok, v)
		}
	}
}

func TestMetricsQueueDepthAndLiveProcesses(t *testing.T) {
	m := metrics.New()
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.Metrics = m })
	h.say("alice", "T1", "long [[WAIT]]")
	h.fa.waitFor(t, "the turn to wait", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.say("alice", "T1", "second")
	h.say("alice", "T1", "third")
	h.rec.waitSend(t, "Queued (position 2)")

	got := scrape(t, m)
	for series, v := range map[string]float64{
		`cc_connect_queue_depth`:               2,
		`cc_connect_agent_processes`:           1,
		`cc_connect_turns_running`:             1,
		`cc_connect_sessions{state="running"}`: 1,
	} {
		if got[series] != v {
			t.Errorf("%s = %v, want %v", series, got[series], v)
		}
	}
	h.fa.release(t)
	h.rec.waitSend(t, "echo: third")
	h.waitIdle()
	got = scrape(t, m)
	if got[`cc_connect_queue_depth`] != 0 || got[`cc_connect_turns_total{outcome="ok"}`] != 3 {
		t.Errorf("after the queue drained: depth %v, ok turns %v", got[`cc_connect_queue_depth`], got[`cc_connect_turns_total{outcome="ok"}`])
	}
}

// TestMetricsSpares: the first conversation finds no spare and starts its
// own process; the next one takes the spare left ready after that turn;
// the scrape shows both, and the replacement spare waiting.
func TestMetricsSpares(t *testing.T) {
	m := metrics.New()
	h := spareHarness(t, func(o *Options) { o.Metrics = m })
	h.say("alice", "T1", "one")
	h.rec.waitSend(t, "echo: one")
	waitSpares(t, h.e.spare, "a spare after the first turn", func(r, _ int) bool { return r == 1 })
	if got := scrape(t, m); got[`cc_connect_spare_processes{state="ready"}`] != 1 || got[`cc_connect_spare_takes_total{outcome="none"}`] != 1 {
		t.Errorf("after the first turn: ready spares %v, starts without one %v; want 1 and 1",
			got[`cc_connect_spare_processes{state="ready"}`], got[`cc_connect_spare_takes_total{outcome="none"}`])
	}
	h.say("bob", "T2", "two")
	h.rec.waitSend(t, "echo: two")
	waitSpares(t, h.e.spare, "the spare replaced", func(r, _ int) bool { return r == 1 })
	got := scrape(t, m)
	for series, v := range map[string]float64{
		`cc_connect_spare_takes_total{outcome="ready"}`: 1,
		`cc_connect_spare_takes_total{outcome="none"}`:  1,
		`cc_connect_spare_processes{state="ready"}`:     1,
		`cc_connect_spare_processes{state="starting"}`:  0,
		`cc_connect_agent_processes`:                    3, // T1's, T2's (the old spare) and the new spare
	} {
		if got[series] != v {
			t.Errorf("%s = %v, want %v", series, got[series], v)
		}
	}
}
