package metrics

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// scrape fetches /metrics from h and returns the exposition text.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// sample returns the value of the series written exactly as series (name
// and labels in exposition order), and whether it is present.
func sample(body, series string) (string, bool) {
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v, true
		}
	}
	return "", false
}

func TestMetricsRecordWhatTheyAreTold(t *testing.T) {
	t.Parallel()
	m := New()
	m.TurnStarted()
	m.TurnStarted()
	m.TurnStarted()
	m.TurnFinished("ok", 3*time.Second)
	m.TurnFinished("ok", 90*time.Second)
	m.TurnFinished("", time.Second) // an empty outcome stays nameable
	m.Fallback("prompt_too_long")
	m.Fallback("session_not_found")
	m.Fallback("session_not_found")
	m.PermissionRequested()
	m.PermissionRequested()
	m.PermissionAnswered("allow", 4*time.Second)
	m.PermissionAnswered("timeout", 10*time.Minute)
	m.QueueDepth(7)
	m.QueueDepth(3)
	m.PlatformEvent("slack-eng", "message")
	m.PlatformEvent("slack-eng", "message")
	m.PlatformEvent("slack-eng", "action")
	m.PlatformError("tg")
	m.MessageAccepted("slack-eng", 2*time.Millisecond)
	m.MessageAccepted("slack-eng", 40*time.Millisecond)
	m.Reconnect("slack-eng")
	m.ContextPercent(15)
	m.ContextPercent(95)
	m.ContextPercent(140) // clamped to 100
	m.SetSessionsFunc(func() map[string]int { return map[string]int{"idle": 4, "running": 2} })
	m.SetProcessesFunc(func() int { return 5 })
	m.SetSparesFunc(func() map[string]int { return map[string]int{"ready": 1, "starting": 2} })
	m.SpareTaken("ready")
	m.SpareTaken("ready")
	m.SpareTaken("none")

	body := scrape(t, m.Handler())
	for _, tt := range []struct{ series, want string }{
		{`cc_connect_turns_started_total`, "3"},
		{`cc_connect_turns_running`, "0"},
		{`cc_connect_turns_total{outcome="ok"}`, "2"},
		{`cc_connect_turns_total{outcome="unknown"}`, "1"},
		{`cc_connect_turn_duration_seconds_count{outcome="ok"}`, "2"},
		{`cc_connect_turn_duration_seconds_sum{outcome="ok"}`, "93"},
		{`cc_connect_turn_duration_seconds_bucket{outcome="ok",le="5"}`, "1"},
		{`cc_connect_turn_duration_seconds_bucket{outcome="ok",le="120"}`, "2"},
		{`cc_connect_fresh_fallbacks_total{cause="prompt_too_long"}`, "1"},
		{`cc_connect_fresh_fallbacks_total{cause="session_not_found"}`, "2"},
		{`cc_connect_permission_requests_total`, "2"},
		{`cc_connect_permission_answers_total{choice="allow"}`, "1"},
		{`cc_connect_permission_answers_total{choice="timeout"}`, "1"},
		{`cc_connect_permission_wait_seconds_sum{choice="timeout"}`, "600"},
		{`cc_connect_queue_depth`, "3"},
		{`cc_connect_platform_events_total{kind="message",platform="slack-eng"}`, "2"},
		{`cc_connect_platform_events_total{kind="action",platform="slack-eng"}`, "1"},
		{`cc_connect_platform_errors_total{platform="tg"}`, "1"},
		{`cc_connect_accept_duration_seconds_count{platform="slack-eng"}`, "2"},
		{`cc_connect_accept_duration_seconds_bucket{platform="slack-eng",le="0.005"}`, "1"},
		{`cc_connect_accept_duration_seconds_bucket{platform="slack-eng",le="0.05"}`, "2"},
		{`cc_connect_platform_reconnects_total{platform="slack-eng"}`, "1"},
		{`cc_connect_context_percent_count`, "3"},
		{`cc_connect_context_percent_sum`, "210"},
		{`cc_connect_context_percent_bucket{le="90"}`, "1"},
		{`cc_connect_context_percent_bucket{le="100"}`, "3"},
		{`cc_connect_sessions{state="idle"}`, "4"},
		{`cc_connect_sessions{state="running"}`, "2"},
		{`cc_connect_agent_processes`, "5"},
		{`cc_connect_spare_processes{state="ready"}`, "1"},
		{`cc_connect_spare_processes{state="starting"}`, "2"},
		{`cc_connect_spare_takes_total{outcome="ready"}`, "2"},
		{`cc_connect_spare_takes_total{outcome="none"}`, "1"},
	} {
		got, ok := sample(body, tt.series)
		if !ok {
			t.Errorf("%s missing from the scrape", tt.series)
			continue
		}
		if got != tt.want {
			t.Errorf("%s = %s, want %s", tt.series, got, tt.want)
		}
	}
	if !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "# HELP cc_connect_turns_total ") {
		t.Error("scrape lacks the Go runtime metrics or the help text")
	}
}

// TestSessionsGaugeFollowsTheFunc: a state that empties disappears instead
// of keeping its last count.
func TestSessionsGaugeFollowsTheFunc(t *testing.T) {
	t.Parallel()
	m := New()
	if _, ok := sample(scrape(t, m.Handler()), `cc_connect_sessions{state="idle"}`); ok {
		t.Error("sessions reported before a func was set")
	}
	states := map[string]int{"running": 1}
	m.SetSessionsFunc(func() map[string]int { return states })
	if got, _ := sample(scrape(t, m.Handler()), `cc_connect_sessions{state="running"}`); got != "1" {
		t.Errorf("running = %q, want 1", got)
	}
	states = map[string]int{"idle": 1}
	body := scrape(t, m.Handler())
	if _, ok := sample(body, `cc_connect_sessions{state="running"}`); ok {
		t.Error("an emptied state is still reported")
	}
	if got, _ := sample(body, `cc_connect_agent_processes`); got != "0" {
		t.Errorf("agent_processes without a func = %q, want 0", got)
	}
}

func TestNilMetricsIsANoOp(t *testing.T) {
	t.Parallel()
	var m *Metrics
	// None of these may panic.
	m.TurnStarted()
	m.TurnFinished("ok", time.Second)
	m.Fallback("x")
	m.PermissionRequested()
	m.PermissionAnswered("allow", time.Second)
	m.QueueDepth(1)
	m.PlatformEvent("p", "message")
	m.PlatformError("p")
	m.Reconnect("p")
	m.ContextPercent(50)
	m.SetSessionsFunc(func() map[string]int { return nil })
	m.SetProcessesFunc(func() int { return 0 })
	m.SetHealthFunc(func() error { return nil })

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("nil /metrics: %d, want 404", rec.Code)
	}
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("nil /healthz: %d, want 200", rec.Code)
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		health   func() error
		wantCode int
		wantBody string
	}{
		{"no check", nil, http.StatusOK, "ok\n"},
		{"healthy", func() error { return nil }, http.StatusOK, "ok\n"},
		{"unhealthy", func() error { return errors.New("engine stopped") }, http.StatusServiceUnavailable, "unhealthy: engine stopped\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := New()
			m.SetHealthFunc(tt.health)
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
				t.Errorf("GET /healthz = %d %q, want %d %q", rec.Code, rec.Body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestListenRefusesRemoteUnlessAllowed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		addr        string
		allowRemote bool
		wantErr     error // nil: listens
		wantAnyErr  bool
	}{
		{"127.0.0.1:0", false, nil, false},
		{"[::1]:0", false, nil, false},
		{"localhost:0", false, nil, false},
		{"0.0.0.0:9464", false, ErrNotLoopback, true},
		{":9464", false, ErrNotLoopback, true},
		{"[::]:9464", false, ErrNotLoopback, true},
		{"192.0.2.10:9464", false, ErrNotLoopback, true},
		{"metrics.example.com:9464", false, ErrNotLoopback, true},
		{"127.0.0.1", false, nil, true}, // no port
		// allow_remote lets a non-loopback address through the check; the
		// bind itself then fails (192.0.2.0/24 is never local), so the test
		// never listens beyond loopback.
		{"192.0.2.10:9464", true, nil, true},
	} {
		ln, err := Listen(tt.addr, tt.allowRemote)
		if ln != nil {
			ln.Close()
		}
		if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
			t.Errorf("Listen(%q, %t) = %v, want %v", tt.addr, tt.allowRemote, err, tt.wantErr)
		}
		if tt.allowRemote && errors.Is(err, ErrNotLoopback) {
			t.Errorf("Listen(%q, allow remote) refused as not loopback: %v", tt.addr, err)
		}
		if (err != nil) != tt.wantAnyErr {
			if tt.addr == "[::1]:0" && err != nil && strings.Contains(err.Error(), "cannot assign") {
				continue // a host without IPv6 loopback
			}
			t.Errorf("Listen(%q, %t) error = %v, want error %t", tt.addr, tt.allowRemote, err, tt.wantAnyErr)
		}
	}
}

func TestServeRefusesRemoteWithoutListening(t *testing.T) {
	t.Parallel()
	m := New()
	err := m.Serve(context.Background(), "0.0.0.0:0")
	if !errors.Is(err, ErrNotLoopback) {
		t.Fatalf("Serve on 0.0.0.0: %v, want ErrNotLoopback", err)
	}
}

func TestServeAnswersUntilCancelled(t *testing.T) {
	t.Parallel()
	m := New()
	m.TurnStarted()
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.ServeListener(ctx, ln) }()

	base := "http://" + ln.Addr().String()
	for path, want := range map[string]string{"/healthz": "ok\n", "/metrics": "cc_connect_turns_started_total 1\n"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %d, body lacks %q:\n%.300s", path, resp.StatusCode, want, body)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeListener after cancel: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("still accepting connections after cancel")
	}
}

func TestServeListenerReportsABrokenListener(t *testing.T) {
	t.Parallel()
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := New().ServeListener(context.Background(), ln); err == nil {
		t.Error("ServeListener on a closed listener returned nil")
	}
}
