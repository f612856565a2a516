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
// cc-connect's but its test helpers (testenv, fakekit): its limits are
// Slack's numbers, not the adapter's.
//
// The machinery under it (change notification and waits, the call log, the
// message store, overrides, rate limiters, id sequences) is
// internal/fakekit's, shared with the other fakes; this package keeps
// Slack's wire protocol and rules.
package fakeslack

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakekit"
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

// Server is one fake Slack workspace.
type Server struct {
	tb  testing.TB
	srv *httptest.Server
	sig *fakekit.Signal // every change the fake records

	calls      *fakekit.Log[Call]
	acks       *fakekit.Log[string]
	deliveries *fakekit.Log[Delivery]
	downloads  *fakekit.Log[string] // Authorization headers of file downloads
	holds      *fakekit.Holds[map[string]string]
	overrides  fakekit.Overrides[answer] // Override: canned answers, first of all
	limited    fakekit.Overrides[answer] // RateLimit: a 429 for the next call
	down       fakekit.Overrides[answer] // Down: 503s for the next calls
	nEnvelope  fakekit.Seq
	nEvent     fakekit.Seq
	nUpload    fakekit.Seq

	mu        sync.Mutex // guards everything below, and msgs
	msgs      *fakekit.Store[msgKey, Message]
	ts        fakekit.Seq // message ts in microseconds: past every ts kept
	conns     []*Conn
	missing   map[string]bool            // channels that do not exist
	buckets   map[string]*fakekit.Bucket // method -> its standing rate limit
	windows   map[string]*fakekit.Window // method -> its standing window
	fail      map[string]string
	files     map[string]string // download path -> content
	pending   map[string]*pendingEnvelope
	parked    []*pendingEnvelope // redeliveries waiting for a connection
	redeliver time.Duration
	retries   int // how often an unacked event is sent again
	echo      bool
	spread    *rand.Rand // SetSpread; nil: the newest connection gets every envelope
	onAck     func(envelopeID string)
	// uploads are the bot's files by id (upload.go); uploadLimit the
	// largest file the workspace takes; noScope the scope each method
	// lacks (MissingScope).
	uploads     map[string]*Upload
	uploadLimit int64
	noScope     map[string]string
}

// msgKey is where a message is: its channel and ts.
type msgKey struct{ channel, ts string }

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
	sig := fakekit.NewSignal("fakeslack")
	s := &Server{
		tb:         tb,
		sig:        sig,
		calls:      fakekit.NewLog[Call](sig),
		acks:       fakekit.NewLog[string](sig),
		deliveries: fakekit.NewLog[Delivery](sig),
		downloads:  fakekit.NewLog[string](sig),
		holds:      fakekit.NewHolds[map[string]string](sig),
		missing:    map[string]bool{},
		buckets:    map[string]*fakekit.Bucket{},
		windows:    map[string]*fakekit.Window{"chat.update": {N: Tier3PerMinute, D: time.Minute}},
		fail:       map[string]string{},
		files:      map[string]string{},
		pending:    map[string]*pendingEnvelope{},
		retries:    3,
		echo:       true,

		uploads:     map[string]*Upload{},
		uploadLimit: maxUploadBytes,
		noScope:     map[string]string{},
	}
	s.msgs = fakekit.NewStore[msgKey](&s.mu, sig, (*Message).clone)
	s.ts.Past(firstTS)
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
	s.holds.ReleaseAll()
	s.mu.Lock()
	conns := s.conns
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

// Changed returns a channel closed at the next change the fake records:
// for a wait that must not fail the test when its time is up (a soak
// counts what never came instead).
func (s *Server) Changed() <-chan struct{} { return s.sig.Changed() }

// Wait blocks until cond holds, failing tb after a generous limit. cond
// runs without the fake's lock (it may call the fake's accessors) and is
// tried again after every change the fake records.
func (s *Server) Wait(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	s.sig.Wait(tb, what, cond)
}

// WaitWithin is Wait with a limit of the caller's: a turn of the real
// claude CLI on a loaded machine takes many times the fake's own limit,
// and its tests wait as long as their run allows (testenv.HangLimit).
func (s *Server) WaitWithin(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	s.sig.WaitWithin(tb, limit, what, cond)
}

// SetWaitLimit sets how long the fake's waits (Wait and the waits built on
// it) last before they fail the test, instead of its default: tests that
// drive the real claude CLI, whose start alone takes seconds on a loaded
// machine, wait as long as the engine's own real-CLI tests do.
func (s *Server) SetWaitLimit(d time.Duration) { s.sig.SetLimit(d) }

// Calls returns every request of method, in the order answered.
func (s *Server) Calls(method string) []Call {
	return s.calls.Select(func(c Call) bool { return c.Method == method })
}

// Succeeded returns the requests of method answered ok:true.
func (s *Server) Succeeded(method string) []Call {
	return s.calls.Select(func(c Call) bool { return c.Method == method && c.Error == "" })
}

// WaitCalls waits until n requests of method were answered and returns
// them all.
func (s *Server) WaitCalls(tb testing.TB, method string, n int) []Call {
	tb.Helper()
	s.Wait(tb, fmt.Sprintf("%d %s calls", n, method), func() bool { return len(s.Calls(method)) >= n })
	return s.Calls(method)
}

// Held reports how many calls of method reached a Hold so far.
func (s *Server) Held(method string) int { return s.holds.Held(method) }

// WaitHeld waits until n calls of method are (or were) held.
func (s *Server) WaitHeld(tb testing.TB, method string, n int) {
	tb.Helper()
	s.Wait(tb, fmt.Sprintf("%d held %s calls", n, method), func() bool { return s.Held(method) >= n })
}

// Posts returns the bot's messages in the order posted (with their edits
// and reactions so far).
func (s *Server) Posts() []Message {
	return s.msgs.Select(func(m *Message) bool { return m.BotID == BotID })
}

// WaitPost waits for a post of the bot that match accepts and returns it.
func (s *Server) WaitPost(tb testing.TB, what string, match func(Message) bool) Message {
	tb.Helper()
	return s.msgs.WaitFirst(tb, "a post: "+what, func(m Message) bool { return m.BotID == BotID && match(m) })
}

// Message returns the message at channel and ts, if there is one.
func (s *Server) Message(channel, ts string) (Message, bool) {
	return s.msgs.Get(msgKey{channel, ts})
}

// WaitMessage waits until the message at channel and ts satisfies cond.
func (s *Server) WaitMessage(tb testing.TB, channel, ts, what string, cond func(Message) bool) Message {
	tb.Helper()
	return s.msgs.WaitKey(tb, msgKey{channel, ts}, fmt.Sprintf("message %s/%s: %s", channel, ts, what), cond)
}

// AddMessage puts a user's message into a channel without delivering an
// event (one written before the test started, say), so that the bot can
// react to it or reply in its thread.
func (s *Server) AddMessage(channel, ts, user, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addMessageLocked(&Message{Channel: channel, TS: ts, User: user, Text: text})
}

// addMessageLocked keeps m; callers hold s.mu.
func (s *Server) addMessageLocked(m *Message) {
	s.msgs.PutLocked(msgKey{m.Channel, m.TS}, m)
	// As on Slack, a post is newer than every message before it, those a
	// test delivered with its own ts included.
	s.ts.Past(tsMicros(m.TS))
}

// lookupLocked returns the message at channel and ts; callers hold s.mu.
func (s *Server) lookupLocked(channel, ts string) (*Message, bool) {
	return s.msgs.LookupLocked(msgKey{channel, ts})
}

// changedLocked records that m changed in place; callers hold s.mu.
func (s *Server) changedLocked(m *Message) { s.msgs.ChangedLocked(msgKey{m.Channel, m.TS}) }

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
	s.limited.Set(method, 1, rateLimited(retryAfter))
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
	s.overrides.Add(method, answer{status: status, body: body})
}

// Down answers the next n calls of method with HTTP 503.
func (s *Server) Down(method string, n int) {
	s.down.Set(method, n, answer{status: http.StatusServiceUnavailable})
}

// Hold makes calls of method wait until release is called (or the server
// closes). WaitHeld tells when one arrived.
func (s *Server) Hold(method string) (release func()) { return s.HoldWhere(method, nil) }

// HoldWhere is Hold for the calls of method whose form match accepts (nil:
// every call): a chat.postMessage to one channel, say, while the others
// go through. Method Download holds file downloads (the form has the
// file's "path").
func (s *Server) HoldWhere(method string, match func(form map[string]string) bool) (release func()) {
	return s.holds.Hold(method, match)
}

// SetSpread makes every envelope (a redelivery too) go to one of the open
// Socket Mode connections at random, from seed, as Slack spreads an app's
// envelopes over all of them; by default the newest gets them all.
func (s *Server) SetSpread(seed uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spread = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
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
	return s.acks.Count(func(id string) bool { return id == envelopeID }) > 0
}

// Acks returns the acked envelope ids in order.
func (s *Server) Acks() []string { return s.acks.All() }

// WaitAck waits until envelopeID is acked.
func (s *Server) WaitAck(tb testing.TB, envelopeID string) {
	tb.Helper()
	s.Wait(tb, "the ack of "+envelopeID, func() bool { return s.Acked(envelopeID) })
}

// WaitEventAck waits until the event envelopeID carried is acked, under
// that envelope or a redelivery's: an envelope sent on a connection whose
// client was just killed (the fake had not seen it close) is never acked
// itself, and Slack sends its event again on another connection.
func (s *Server) WaitEventAck(tb testing.TB, envelopeID string) {
	tb.Helper()
	s.Wait(tb, "the ack of the event of "+envelopeID, func() bool {
		event := ""
		for _, d := range s.Deliveries() {
			if d.EnvelopeID == envelopeID {
				event = d.EventID
			}
		}
		if event == "" {
			return s.Acked(envelopeID)
		}
		for _, d := range s.Deliveries() {
			if d.EventID == event && s.Acked(d.EnvelopeID) {
				return true
			}
		}
		return false
	})
}

// Deliveries returns every envelope sent, in order.
func (s *Server) Deliveries() []Delivery { return s.deliveries.All() }

// Downloads returns the Authorization header of every file download.
func (s *Server) Downloads() []string { return s.downloads.All() }

// firstTS is the ts of the fake's first post, in microseconds.
const firstTS = 1700000100 * 1_000_000

// nextTSLocked hands out a fresh message ts, newer than every message
// kept; callers hold s.mu.
func (s *Server) nextTSLocked() string {
	n := s.ts.Next()
	return fmt.Sprintf("%d.%06d", n/1_000_000, n%1_000_000)
}

// knownChannel reports whether channel exists; callers hold s.mu.
func (s *Server) knownChannelLocked(channel string) bool {
	return channel != "" && !s.missing[channel] && strings.IndexFunc(channel, func(r rune) bool {
		return (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	}) < 0
}
