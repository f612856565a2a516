package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/testlog"
)

// served is a Server on a real listener (Serve, with its read deadlines),
// for tests of what connections can do.
type served struct {
	srv    *Server
	sub    *submitter
	logs   *testlog.Buffer
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// serve starts Serve with ciHook; tune changes the Server before it serves.
func serve(t *testing.T, tune func(*Server)) *served {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	s := &served{sub: &submitter{}, logs: &testlog.Buffer{}, addr: ln.Addr().String(), done: make(chan error, 1)}
	s.srv, err = New(Options{Hooks: []Hook{ciHook(t)}, Submitter: s.sub, Replays: openReplaysT(t),
		Logger: slog.New(slog.NewJSONHandler(s.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if tune != nil {
		tune(s.srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { s.done <- s.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	return s
}

// signedPost sends ciHook a signed failed run, and returns the answer.
func (s *served) signedPost(t *testing.T, body []byte) (int, map[string]string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/hooks/ci-failed", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range github(body, "d") {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans map[string]string
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &ans)
	return resp.StatusCode, ans
}

// slowConn opens a connection that sends a hook request's headers and one
// byte of its body, and no more.
func slowConn(t *testing.T, addr, hook string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "POST /hooks/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", hook); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSlowUnsignedConnectionsHoldNoSlot: as many unsigned connections as
// there are slots, each stuck in its body after one byte, do not keep a
// signed delivery out: a slot is taken only once a signature is checked.
// (Before, they held every slot and the delivery got 503 for as long as
// they lasted.)
func TestSlowUnsignedConnectionsHoldNoSlot(t *testing.T) {
	t.Parallel()
	reading := make(chan struct{}, 2*maxInFlight)
	s := serve(t, func(s *Server) {
		s.bodyTimeout = time.Hour // they outlast the test
		s.readingBody = func() { reading <- struct{}{} }
	})
	for range maxInFlight {
		slowConn(t, s.addr, "ci-failed")
	}
	for i := range maxInFlight {
		select {
		case <-reading:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d slow requests reached their body", i, maxInFlight)
		}
	}
	body := payload(t, "failure")
	code, ans := s.signedPost(t, body)
	if code != http.StatusAccepted || ans["status"] != "accepted" {
		t.Fatalf("a signed delivery beside %d slow connections: %d %v, want 202 accepted", maxInFlight, code, ans)
	}
	if n := len(s.sub.taken()); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
	if recs := s.logs.Records("Webhook refused: the body did not arrive in time"); len(recs) != 0 {
		t.Errorf("the slow connections were let go first: %v", recs)
	}
}

// TestInFlightCap: signed requests waiting on the engine hold a slot each;
// one more is answered 503 with Retry-After until one ends.
func TestInFlightCap(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	block, entered := make(chan struct{}), make(chan struct{}, maxInFlight)
	s.sub.mu.Lock()
	s.sub.block, s.sub.entered = block, entered
	s.sub.mu.Unlock()
	var wg sync.WaitGroup
	codes := make(chan int, maxInFlight)
	for i := range maxInFlight {
		body := distinct(t, i)
		wg.Go(func() {
			code, _ := postTo(t, s.addr, body)
			codes <- code
		})
	}
	for range maxInFlight {
		<-entered
	}
	code, ans, hdr := postFull(t, s.addr, distinct(t, maxInFlight))
	if code != http.StatusServiceUnavailable || ans["status"] != "busy" || hdr.Get("Retry-After") == "" {
		t.Errorf("one more than %d in flight: %d %v (Retry-After %q), want 503 busy", maxInFlight, code, ans, hdr.Get("Retry-After"))
	}
	close(block)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusAccepted {
			t.Errorf("a request in flight was answered %d, want 202", c)
		}
	}
	if code, ans := postTo(t, s.addr, distinct(t, maxInFlight)); code != http.StatusAccepted {
		t.Errorf("once they ended: %d %v, want 202", code, ans)
	}
}

// distinct is a failed run's body that no other i makes.
func distinct(t *testing.T, i int) []byte {
	return bytes.Replace(payload(t, "failure"), []byte(`"conclusion": "failure"`), fmt.Appendf(nil, `"conclusion": "failure", "n": %d`, i), 1)
}

// postTo sends ciHook a signed body and returns the answer.
func postTo(t *testing.T, addr string, body []byte) (int, map[string]string) {
	code, ans, _ := postFull(t, addr, body)
	return code, ans
}

func postFull(t *testing.T, addr string, body []byte) (int, map[string]string, http.Header) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/ci-failed", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, nil, nil
	}
	req.Header.Set(HeaderGitHub, Sign([]byte(secret), body))
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ans map[string]string
	_ = json.Unmarshal(b, &ans)
	return resp.StatusCode, ans, resp.Header
}

// TestReadDeadlines: a body that does not arrive within the body timeout
// is answered 408 and its connection closed; headers that do not end
// within the header timeout close the connection.
func TestReadDeadlines(t *testing.T) {
	t.Parallel()
	s := serve(t, func(s *Server) { s.bodyTimeout, s.headerTimeout = 100*time.Millisecond, 100*time.Millisecond })

	c := slowConn(t, s.addr, "ci-failed")
	if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a stalled body: %d, want 408", resp.StatusCode)
	}

	h, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := io.WriteString(h, "POST /hooks/ci-failed HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(h); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Error("a connection whose headers stalled was kept open")
	}
}

// TestShutdown: once Serve's context ends, a new connection is refused,
// and a request in flight still gets its answer from the engine: 202 once
// its run is journaled.
func TestShutdown(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	block, entered := make(chan struct{}), make(chan struct{}, 1)
	s.sub.mu.Lock()
	s.sub.block, s.sub.entered = block, entered
	s.sub.mu.Unlock()
	type answer struct {
		code int
		ans  map[string]string
	}
	got := make(chan answer, 1)
	body := payload(t, "failure")
	go func() {
		code, ans := postTo(t, s.addr, body)
		got <- answer{code, ans}
	}()
	<-entered
	s.cancel()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still takes connections after shutdown began")
		}
		time.Sleep(10 * time.Millisecond) // polling for the listener's close, which has no event
	}
	close(block)
	a := <-got
	if a.code != http.StatusAccepted || a.ans["status"] != "accepted" {
		t.Errorf("the request in flight at shutdown: %d %v, want 202 accepted", a.code, a.ans)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		s.done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// TestUnknownHookAnswersAsABadSignature: a request for a hook that does
// not exist gets, byte for byte, the answer a known hook gives a bad
// signature, after reading the body as it does; so do the method and size
// checks.
func TestUnknownHookAnswersAsABadSignature(t *testing.T) {
	t.Parallel()
	reads := make(chan string, 16)
	s := serve(t, func(s *Server) { s.readingBody = func() { reads <- "" }; s.maxBody = 1024 })
	body := []byte(`{"action":"completed"}`)
	raw := func(method, hook string, b []byte, headers map[string]string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+s.addr+"/hooks/"+hook, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(out)
	}
	for _, tc := range []struct {
		name    string
		method  string
		body    []byte
		headers map[string]string
		reads   bool
	}{
		{"no signature", http.MethodPost, body, nil, true},
		{"a guessed secret", http.MethodPost, body, map[string]string{HeaderGitHub: Sign([]byte("guess"), body)}, true},
		{"garbage", http.MethodPost, body, map[string]string{HeaderGitHub: "sha256=zz", HeaderGeneric: "zz", HeaderTimestamp: "1"}, true},
		{"GET", http.MethodGet, nil, nil, false},
		{"too big", http.MethodPost, bytes.Repeat([]byte("x"), 2048), nil, false},
	} {
		kc, kh, kb := raw(tc.method, "ci-failed", tc.body, tc.headers)
		uc, uh, ub := raw(tc.method, "no-such-hook", tc.body, tc.headers)
		if kc != uc || kb != ub || kh.Get("Content-Type") != uh.Get("Content-Type") || kh.Get("Allow") != uh.Get("Allow") {
			t.Errorf("%s: known hook %d %q, unknown %d %q", tc.name, kc, kb, uc, ub)
		}
		if tc.reads {
			if kc != http.StatusUnauthorized {
				t.Errorf("%s: %d, want 401", tc.name, kc)
			}
			for range 2 {
				select {
				case <-reads:
				default:
					t.Errorf("%s: a body was not read", tc.name)
				}
			}
		}
	}
	// The log, which the admin reads, tells them apart.
	s.logs.WaitRecords(t, 5*time.Second, "Webhook refused: no such hook", 3)
}
