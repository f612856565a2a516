package discord

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// discordOrigin is what discordgo's endpoint variables start with. They are
// fixed at start-up, so another API base is reached by rewriting requests
// in the transport instead.
const discordOrigin = "https://discord.com"

// rewriteTransport sends requests for https://discord.com/api/... to base
// (scheme, host and path prefix), leaving every other URL (the CDN,
// attachments) alone.
type rewriteTransport struct {
	base *url.URL // nil: no rewriting
	next http.RoundTripper
}

func (t *rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.base != nil && req.URL.Scheme == "https" && req.URL.Host == "discord.com" && strings.HasPrefix(req.URL.Path, "/api/") {
		r := req.Clone(req.Context())
		u := *req.URL
		u.Scheme = t.base.Scheme
		u.Host = t.base.Host
		u.Path = strings.TrimRight(t.base.Path, "/") + req.URL.Path
		u.RawPath = ""
		r.URL = &u
		r.Host = u.Host
		req = r
	}
	return t.next.RoundTrip(req)
}

// connTracker dials gateway connections and closes them all when Run ends,
// which unblocks a discordgo Open waiting for HELLO or READY (it has no
// context of its own).
type connTracker struct {
	mu     sync.Mutex // guards conns and closed
	conns  map[net.Conn]struct{}
	closed bool
	dialer net.Dialer

	openTimeout time.Duration
}

func newConnTracker() *connTracker {
	return &connTracker{conns: make(map[net.Conn]struct{}), dialer: net.Dialer{Timeout: 30 * time.Second}, openTimeout: time.Minute}
}

func (t *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := t.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	// Open waits for HELLO and READY with no timeout of its own (and the
	// websocket library clears conn deadlines after its handshake), so a
	// timer closes a connection that is not up in time; opened stops it.
	tc := &trackedConn{Conn: c, t: t}
	tc.openTimer = time.AfterFunc(t.openTimeout, func() { c.Close() })
	t.conns[tc] = struct{}{}
	return tc, nil
}

// closeAll closes every open gateway connection and refuses new ones until
// reset.
func (t *connTracker) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for c := range t.conns {
		c.(*trackedConn).Conn.Close()
	}
	clear(t.conns)
}

// opened stops the open timers of the live connections; from then on
// heartbeats detect a dead gateway.
func (t *connTracker) opened() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.conns {
		c.(*trackedConn).openTimer.Stop()
	}
}

func (t *connTracker) reset() {
	t.mu.Lock()
	t.closed = false
	t.mu.Unlock()
}

type trackedConn struct {
	net.Conn
	t         *connTracker
	once      sync.Once
	openTimer *time.Timer
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.openTimer.Stop()
		c.t.mu.Lock()
		delete(c.t.conns, c)
		c.t.mu.Unlock()
	})
	return c.Conn.Close()
}

// backoff is exponential from min, capped at max, with up to 50% jitter.
func backoff(attempt int, min, max time.Duration) time.Duration {
	d := min
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
