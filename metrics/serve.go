package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrNotLoopback means the address would expose metrics beyond this host
// and the admin has not allowed it (metrics.allow_remote). The metrics name
// workspaces' activity and platforms; the caller refuses to start.
var ErrNotLoopback = errors.New("metrics address is not a loopback address")

// shutdownGrace bounds how long a scrape in flight may finish once ctx is
// cancelled.
const shutdownGrace = 5 * time.Second

// Handler serves /metrics (Prometheus text format) and /healthz.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	if m == nil {
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "ok")
		})
		return mux
	}
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := m.health(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "unhealthy: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// IsLoopback reports whether addr (host:port) can only be reached from
// this host: a loopback IP or "localhost". An empty host means every
// interface, so it is not loopback; other host names are not resolved
// (what they resolve to can change), so they are not loopback either.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("metrics address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// Listen opens addr for Serve. Unless allowRemote, an address reachable from
// other hosts is refused with ErrNotLoopback before anything is opened.
// Listening before serving lets the binary fail at start (port in use)
// rather than in a goroutine later.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	loop, err := IsLoopback(addr)
	if err != nil {
		return nil, err
	}
	if !loop && !allowRemote {
		return nil, fmt.Errorf("%w: %s (use 127.0.0.1:PORT, or set metrics.allow_remote = true)", ErrNotLoopback, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for metrics on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve listens on addr, which must be a loopback address, and serves
// until ctx is cancelled. To allow a remote address, or to fail at start
// when the port is taken, use Listen and ServeListener.
func (m *Metrics) Serve(ctx context.Context, addr string) error {
	ln, err := Listen(addr, false)
	if err != nil {
		return err
	}
	return m.ServeListener(ctx, ln)
}

// ServeListener serves Handler on ln until ctx is cancelled, then shuts
// down, letting scrapes in flight finish briefly. It closes ln and returns
// nil after a cancel, or the error that stopped serving.
func (m *Metrics) ServeListener(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           m.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving metrics on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving metrics on %s: %w", ln.Addr(), err)
	}
	return nil
}
