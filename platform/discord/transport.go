package discord

import (
	"context"
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
// attachments) alone. It also turns the library's gateway discovery
// (GET /gateway) into the bot form (GET /gateway/bot), which Discord
// recommends for bots and which checks the token; the answer carries the
// same "url" field.
type rewriteTransport struct {
	base *url.URL // nil: Discord itself
	next http.RoundTripper
}

func (t *rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" || req.URL.Host != "discord.com" || !strings.HasPrefix(req.URL.Path, "/api/") {
		return t.next.RoundTrip(req)
	}
	u := *req.URL
	if isGatewayDiscovery(u.Path) {
		u.Path += "/bot"
		u.RawPath = ""
	}
	if t.base != nil {
		u.Scheme = t.base.Scheme
		u.Host = t.base.Host
		u.Path = strings.TrimRight(t.base.Path, "/") + u.Path
		u.RawPath = ""
	}
	r := req
	if u != *req.URL {
		r = req.Clone(req.Context())
		r.URL = &u
		r.Host = u.Host
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		forgetRateLimit(resp.Header)
	}
	return resp, err
}

// forgetRateLimit removes the bucket headers from a 429 answer. The
// library would otherwise note the penalty (for a route, or globally) and
// sleep it out before the next request, holding the bucket and deaf to any
// context: a caller that stopped waiting would leave the next one, and a
// shutdown, stuck for as long as Discord named. rest() waits out the
// retry_after of the body instead, under the caller's context.
func forgetRateLimit(h http.Header) {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
			h.Del(k)
		}
	}
}

// isGatewayDiscovery matches /api/v<n>/gateway.
func isGatewayDiscovery(path string) bool {
	rest, ok := strings.CutPrefix(path, "/api/v")
	if !ok {
		return false
	}
	num, tail, ok := strings.Cut(rest, "/")
	return ok && num != "" && strings.Trim(num, "0123456789") == "" && tail == "gateway"
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
