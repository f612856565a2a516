// Package fakeslack is a fake Slack for tests, served on 127.0.0.1: the Web
// API methods cc-connect calls (auth.test, apps.connections.open,
// chat.postMessage (with metadata), chat.update, chat.delete,
// reactions.add/remove, users.info, conversations.replies and
// conversations.history in pages (a post's metadata only with
// include_all_metadata), the three steps of a file upload:
// files.getUploadURLExternal, the upload URL, files.completeUploadExternal),
// file downloads, and Socket Mode (a websocket carrying envelopes that the client
// must ack). It keeps the messages of the channels it serves, so a test can
// ask what the bot posted, edited and reacted to, and it holds the client to
// Slack's real limits and error bodies: text over 40,000 characters is
// msg_too_long, malformed or oversized blocks are invalid_blocks, an edit or
// a reaction on a message that does not exist is message_not_found, a
// missing channel is channel_not_found, a rate limit is HTTP 429 ratelimited
// with Retry-After (once, or standing: chat.update is held to Tier 3, 50
// calls in any minute across the workspace, bursts allowed, and
// SetWindowLimit or SetRateLimit hold a method to another rate).
//
// Like Slack it sends the bot's own posts back as message events, delivers a
// mention twice (message and app_mention), and, when SetRedeliverAfter is
// set, redelivers an envelope that was not acked in time (Slack waits 3 s)
// with retry_attempt counting up, on the next connection when none is open;
// a thread reply's event names its root's author (parent_user_id). For every post and update it works out
// whom and what Slack would notify or link (Call.Pings): the control
// sequences in the text and blocks, and "@name" words where link_names or a
// block's missing verbatim makes Slack look for names.
//
// Tests wait on what the fake records (WaitAck, WaitPost, WaitCalls, …),
// never on time. The fake is for tests only and imports nothing of
// cc-connect's: its limits are Slack's numbers, not the adapter's.
package fakeslack

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Credentials and identity the fake accepts and reports.
const (
	BotToken  = "xoxb-test-token"
	AppToken  = "xapp-test-token"
	BotUserID = "UBOT"
	BotID     = "BBOT"
	TeamID    = "T1"
	AppID     = "A1"
)

// waitLimit bounds every wait: generous, for -race on a busy machine.
const waitLimit = 15 * time.Second

// Server is one fake Slack workspace.
type Server struct {
	waitFor atomic.Int64 // SetWaitLimit; 0 is waitLimit
	tb      testing.TB
	srv     *httptest.Server

	mu         sync.Mutex // guards everything below
	changed    chan struct{}
	calls      []Call
	held       map[string]int // calls of a method that reached a hold
	holds      []*hold        // holds in force, the newest last
	acks       []string
	deliveries []Delivery
	conns      []*Conn
	ts         int                 // the last ts handed out
	newest     string              // the newest ts of any message kept
	msgs       map[string]*Message // by channel + "/" + ts
	order      []string            // message keys in posting order
	missing    map[string]bool     // channels that do not exist
	limited    map[string]int      // method -> Retry-After seconds for its next call
	buckets    map[string]*bucket  // method -> its standing rate limit
	windows    map[string]windowLimit
	fail       map[string]string
	down       map[string]int
	overrides  map[string][]answer // canned answers to give first
	files      map[string]string   // download path -> content
	downloads  []string            // Authorization headers of file downloads
	pending    map[string]*pendingEnvelope
	parked     []*pendingEnvelope // redeliveries waiting for a connection
	nEnvelope  int
	nEvent     int
	redeliver  time.Duration
	retries    int // how often an unacked event is sent again
	echo       bool
	onAck      func(envelopeID string)
	// uploads are the bot's files by id (upload.go); uploadLimit the
	// largest file the workspace takes; noScope the scope each method
	// lacks (MissingScope).
	uploads     map[string]*Upload
	nUpload     int
	uploadLimit int64
	noScope     map[string]string
}

// Call is one Web API request as the fake answered it.
type Call struct {
	Method string
	Auth   string            // the Authorization header, or "Bearer <token form field>"
	Form   map[string]string // first value of each form field
	// Error is "" when the answer was ok:true, else Slack's error code, or
	// "HTTP 429" / "HTTP 503" for a refusal without a body.
	Error string
	// Pings are what Slack would act on in a chat.postMessage or
	// chat.update, posted or refused: mentions (<@U1>, <!here>, and
	// "@name" where Slack finds names itself, see link_names and
	// verbatim) and channel links (<#C1>). Empty for other methods.
	Pings []string
	// At is when the fake answered it (limits count calls by it).
	At time.Time
}

// Message is one message in a channel: a user's (delivered as an event) or
// the bot's (posted through the API).
type Message struct {
	Channel  string
	TS       string
	ThreadTS string // "" for a top-level message
	User     string
	BotID    string // BotID for the bot's posts
	Text     string
	Blocks   string // JSON, as posted or last updated
	// Files are the names of the files posted with the message: a user's
	// (the event's files) or the bot's (an upload shared here).
	Files []string
	Edits []Edit // chat.update calls applied, oldest first
	// Deleted says chat.delete removed it (it stays listed, for tests).
	Deleted bool
	// Reactions are the bot's reactions on the message, in the order added.
	Reactions []string
	// Metadata is what a post of the bot carried (chat.postMessage's
	// metadata), nil when none.
	Metadata *Metadata
}

// Edit is one chat.update applied to a message.
type Edit struct {
	Text   string
	Blocks string
}

// Delivery is one envelope sent over Socket Mode.
type Delivery struct {
	EnvelopeID string
	EventID    string // "" for envelopes that are not events_api
	Retry      int
}

// New starts a fake Slack that stops when tb ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{
		tb:        tb,
		changed:   make(chan struct{}),
		held:      map[string]int{},
		msgs:      map[string]*Message{},
		missing:   map[string]bool{},
		limited:   map[string]int{},
		buckets:   map[string]*bucket{},
		windows:   map[string]windowLimit{"chat.update": {n: Tier3PerMinute, d: time.Minute}},
		fail:      map[string]string{},
		down:      map[string]int{},
		overrides: map[string][]answer{},
		files:     map[string]string{},
		pending:   map[string]*pendingEnvelope{},
		retries:   3,
		echo:      true,

		uploads:     map[string]*Upload{},
		uploadLimit: maxUploadBytes,
		noScope:     map[string]string{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/socket", s.serveSocket)
	mux.HandleFunc("/files-pri/", s.serveFile)
	mux.HandleFunc("/upload/v1/", s.serveUpload)
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server: it releases held calls, drops the sockets and
// stops redeliveries. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	conns := s.conns
	for _, h := range s.holds {
		h.open()
	}
	s.holds = nil
	for _, p := range s.pending {
		p.timer.Stop()
	}
	clear(s.pending)
	s.parked = nil
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	s.srv.Close()
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return s.srv.URL }

// APIURL is what a client's api_url should be: URL + "/api/".
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// notify wakes waiters; callers hold s.mu.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Wait blocks until cond holds, failing tb after a generous limit. cond
// runs without the fake's lock (it may call the fake's accessors) and is
// tried again after every change the fake records.
func (s *Server) Wait(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	s.WaitWithin(tb, s.waitLimit(), what, cond)
}

// Calls returns every request of method, in the order answered.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Succeeded returns the requests of method answered ok:true.
func (s *Server) Succeeded(method string) []Call {
	var out []Call
	for _, c := range s.Calls(method) {
		if c.Error == "" {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits until n requests of method were answered and returns
// them all.
func (s *Server) WaitCalls(tb testing.TB, method string, n int) []Call {
	tb.Helper()
	s.Wait(tb, fmt.Sprintf("%d %s calls", n, method), func() bool { return len(s.Calls(method)) >= n })
	return s.Calls(method)
}

// Held reports how many calls of method reached a Hold so far.
func (s *Server) Held(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[method]
}

// WaitHeld waits until n calls of method are (or were) held.
func (s *Server) WaitHeld(tb testing.TB, method string, n int) {
	tb.Helper()
	s.Wait(tb, fmt.Sprintf("%d held %s calls", n, method), func() bool { return s.Held(method) >= n })
}

// Posts returns the bot's messages in the order posted (with their edits
// and reactions so far).
func (s *Server) Posts() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, k := range s.order {
		if m := s.msgs[k]; m.BotID == BotID {
			out = append(out, m.clone())
		}
	}
	return out
}

// WaitPost waits for a post of the bot that match accepts and returns it.
func (s *Server) WaitPost(tb testing.TB, what string, match func(Message) bool) Message {
	tb.Helper()
	var found Message
	s.Wait(tb, "a post: "+what, func() bool {
		for _, m := range s.Posts() {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// Message returns the message at channel and ts, if there is one.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.msgs[channel+"/"+ts]
	if !ok {
		return Message{}, false
	}
	return m.clone(), true
}

// WaitMessage waits until the message at channel and ts satisfies cond.
func (s *Server) WaitMessage(tb testing.TB, channel, ts, what string, cond func(Message) bool) Message {
	tb.Helper()
	var found Message
	s.Wait(tb, fmt.Sprintf("message %s/%s: %s", channel, ts, what), func() bool {
		m, ok := s.Message(channel, ts)
		found = m
		return ok && cond(m)
	})
	return found
}

// AddMessage puts a user's message into a channel without delivering an
// event (one written before the test started, say), so that the bot can
// react to it or reply in its thread.
func (s *Server) AddMessage(channel, ts, user, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addMessageLocked(&Message{Channel: channel, TS: ts, User: user, Text: text})
}

func (s *Server) addMessageLocked(m *Message) {
	k := m.Channel + "/" + m.TS
	if _, ok := s.msgs[k]; !ok {
		s.order = append(s.order, k)
	}
	s.msgs[k] = m
	if s.newest == "" || tsBefore(s.newest, m.TS) {
		s.newest = m.TS
	}
	s.notify()
}

func (m *Message) clone() Message {
	c := *m
	c.Edits = slices.Clone(m.Edits)
	c.Reactions = slices.Clone(m.Reactions)
	c.Files = slices.Clone(m.Files)
	return c
}

// DeleteChannel makes channel unknown: calls naming it answer
// channel_not_found.
func (s *Server) DeleteChannel(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.missing[channel] = true
}

// RateLimit answers the next call of method with HTTP 429, Retry-After
// retryAfter seconds and {"ok":false,"error":"ratelimited"}.
func (s *Server) RateLimit(method string, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited[method] = retryAfter
}

// Fail answers every call of method with {"ok":false,"error":code} until
// Fail(method, "").
func (s *Server) Fail(method, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == "" {
		delete(s.fail, method)
		return
	}
	s.fail[method] = code
}

// Override answers the next call of method with status and the JSON body
// (a Slack answer the fake has no helper for); several queue up.
func (s *Server) Override(method string, status int, body map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.overrides[method] = append(s.overrides[method], answer{status: status, body: body})
}

// Down answers the next n calls of method with HTTP 503.
func (s *Server) Down(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down[method] = n
}

// Hold makes calls of method wait until release is called (or the server
// closes). WaitHeld tells when one arrived.
func (s *Server) Hold(method string) (release func()) { return s.HoldWhere(method, nil) }

// HoldWhere is Hold for the calls of method whose form match accepts (nil:
// every call): a chat.postMessage to one channel, say, while the others
// go through. Method Download holds file downloads (the form has the
// file's "path").
func (s *Server) HoldWhere(method string, match func(form map[string]string) bool) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &hold{method: method, match: match, gate: make(chan struct{})}
	s.holds = append(s.holds, h)
	return func() {
		s.mu.Lock()
		s.holds = slices.DeleteFunc(s.holds, func(x *hold) bool { return x == h })
		s.mu.Unlock()
		h.open()
	}
}

// hold is one Hold in force.
type hold struct {
	method string
	match  func(map[string]string) bool
	gate   chan struct{}
	once   sync.Once
}

func (h *hold) open() { h.once.Do(func() { close(h.gate) }) }

// gateLocked returns the gate a call must wait at, or nil; callers hold
// s.mu.
func (s *Server) gateLocked(method string, form map[string]string) chan struct{} {
	for i := len(s.holds) - 1; i >= 0; i-- { // the newest hold first
		if h := s.holds[i]; h.method == method && (h.match == nil || h.match(form)) {
			return h.gate
		}
	}
	return nil
}

// SetEcho chooses whether the bot's own posts come back as message events
// (Slack's behaviour, and the default).
func (s *Server) SetEcho(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.echo = on
}

// SetRedeliverAfter makes the fake send an events_api envelope again, as a
// new envelope with retry_attempt one higher and retry_reason "timeout",
// when it was not acked within d; up to three retries, as Slack does
// (SetRetries changes that). A retry due while no connection is open waits
// for the next one, as Slack keeps trying a while. Zero (the default) turns
// redelivery off.
func (s *Server) SetRedeliverAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redeliver = d
}

// SetRetries sets how often an unacked event is sent again (three, as
// Slack, unless set): a soak that kills the client again and again may
// want Slack to keep trying longer than a few times.
func (s *Server) SetRetries(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retries = n
}

// OnAck sets a function called with each acked envelope id as soon as the
// ack is read, before waiters are woken: a test can look at the world at the
// moment of the ack.
func (s *Server) OnAck(f func(envelopeID string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onAck = f
}

// Acked reports whether envelopeID was acked.
func (s *Server) Acked(envelopeID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.acks, envelopeID)
}

// Acks returns the acked envelope ids in order.
func (s *Server) Acks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acks)
}

// WaitAck waits until envelopeID is acked.
func (s *Server) WaitAck(tb testing.TB, envelopeID string) {
	tb.Helper()
	s.Wait(tb, "the ack of "+envelopeID, func() bool { return s.Acked(envelopeID) })
}

// Deliveries returns every envelope sent, in order.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deliveries)
}

// Downloads returns the Authorization header of every file download.
func (s *Server) Downloads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.downloads)
}

// nextTS hands out a fresh message ts; callers hold s.mu.
func (s *Server) nextTSLocked() string {
	s.ts++
	ts := fmt.Sprintf("1700000100.%06d", s.ts)
	// As on Slack, a post is newer than every message before it, those a
	// test delivered with its own ts included.
	if s.newest != "" && !tsBefore(s.newest, ts) {
		k := tsKey(s.newest)
		ts = fmt.Sprintf("%d.%06d", k[0]+(k[1]+1)/1000000, (k[1]+1)%1000000)
	}
	return ts
}

// knownChannel reports whether channel exists; callers hold s.mu.
func (s *Server) knownChannelLocked(channel string) bool {
	return channel != "" && !s.missing[channel] && strings.IndexFunc(channel, func(r rune) bool {
		return (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	}) < 0
}
