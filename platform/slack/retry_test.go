package slack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestFileDownloadRetries: a download that meets a 429 waits its
// Retry-After, one that meets a 5xx is retried (a GET is safe to repeat),
// and a 404 is final. fakeslack cannot answer a download with an error, so
// a server of the test's own stands in for Slack's file host.
func TestFileDownloadRetries(t *testing.T) {
	answers := make(chan func(w http.ResponseWriter), 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(<-answers)(w)
	}))
	t.Cleanup(srv.Close)
	status := func(code int, retryAfter string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
		}
	}
	cfg := testConfig(fakeslack.New(t))
	cfg.APIURL = srv.URL + "/api/"
	a, _, sleeps := newAdapter(t, cfg)

	answers <- status(429, "3")
	answers <- status(503, "")
	answers <- func(w http.ResponseWriter) { _, _ = io.WriteString(w, "content") }
	rc, err := a.files.open(context.Background(), srv.URL+"/files-pri/T1-F1/x.bin", "application/octet-stream")
	if err != nil {
		t.Fatalf("openFile: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "content" {
		t.Errorf("downloaded %q", b)
	}
	if got := []time.Duration{<-sleeps, <-sleeps}; !slices.Equal(got, []time.Duration{3 * time.Second, time.Second}) {
		t.Errorf("waits %v, want [3s 1s]: the Retry-After, then the first backoff", got)
	}

	answers <- status(404, "")
	if _, err := a.files.open(context.Background(), srv.URL+"/files-pri/T1-F2/y.bin", "application/octet-stream"); err == nil {
		t.Error("openFile of a missing file succeeded")
	}
	select {
	case d := <-sleeps:
		t.Errorf("waited %v before giving up on a 404", d)
	default:
	}
}
