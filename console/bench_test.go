package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// BenchmarkConversationsPage renders the conversations page of 1,000
// conversations over 10 bindings, from the request with its session
// cookie to the last byte (what the console adds to the Backend's list;
// BenchmarkConsoleConversations in the engine measures that list).
// Reports ms/page and the page's bytes.
func BenchmarkConversationsPage(b *testing.B) {
	const n, bindings = 1000, 10
	now := time.Now()
	be := &fakeBackend{allowed: map[string]bool{"U1": true}, approve: map[string]bool{"U1": true}}
	for i := range n {
		bd := fmt.Sprintf("slack/C%02d", i%bindings)
		thread := fmt.Sprintf("1700000%03d.%06d", i, i)
		be.convs = append(be.convs, Conversation{Key: bd + "/" + thread, Binding: bd, Channel: bd[len("slack/"):], Thread: thread,
			Host: "build-1", State: []string{"idle", "running", "requires_action"}[i%3], Queued: i % 4, Model: "claude-opus-4-5",
			ContextPct: i % 100, CostUSD: float64(i) / 100, LastActivity: now.Add(-time.Duration(i) * time.Minute)})
	}
	srv := New(Settings{BaseURL: "https://cc.example.com", SessionTTL: time.Hour}, be)
	h := srv.Handler()
	link, err := srv.Issue(Identity{Platform: "slack", UserID: "U1"})
	if err != nil {
		b.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, link[len("https://cc.example.com"):], nil))
	cookie := rec.Result().Cookies()[0]
	var size int
	cpu0 := cpuTime(b)
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("the page: %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/page")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
	b.ReportMetric(float64(size), "bytes/page")
}

// cpuTime is the process's CPU time (user and system) so far: on a shared
// machine it moves less with the load than the wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
