// Package fakediscord is a fake Discord for tests, served on 127.0.0.1: the
// REST API under /api/v9 (messages, with files as multipart attachments,
// edits, deletes, reactions, typing, threads, channels, a channel's messages
// and one message read back, interaction callbacks, gateway discovery) and the gateway
// websocket (HELLO, IDENTIFY → READY, heartbeats and their ACKs, RESUME →
// the missed events then RESUMED, dispatches). It keeps the channels and
// their messages, so a test can ask what the bot posted, edited and reacted
// to, and it holds the client to Discord's real limits and error bodies:
// content over 2,000 characters is HTTP 400 {"code":50035,"message":"Invalid
// Form Body","errors":{...}}, an unknown channel or message is 404 with
// code 10003 or 10008, the files of a message over 10 MiB are 413 with
// code 40005, a page of history holds at most 100 messages, a channel the
// bot may not see is 403 Missing Access (50001) and one whose history it
// may not read shows none, a rate limit is HTTP 429 with retry_after and the
// X-RateLimit headers (once, or standing: SetEditLimit holds each channel's
// edits to Discord's bucket), an interaction answered after 3 s or twice is
// refused, and select menus are held to their limits.
//
// Like Discord it sends the bot's own posts back as MESSAGE_CREATE, reads
// a channel's messages back (GET one, or the latest, newest first), and
// under enforce_nonce answers a post whose nonce the bot used within the
// last few minutes with that earlier message, creating none (AdvanceClock
// moves past the window). For
// every message the bot posts or edits it works out whom Discord would
// notify from the content and allowed_mentions (Call.Pings).
// Tests wait on what the fake records (Next, WaitPost, WaitMessage,
// WaitConnected, …), never on time. The fake is for tests only and imports
// nothing of cc-connect's but its test helpers (testenv, fakekit): its
// limits are Discord's numbers, not the adapter's.
//
// The machinery under it (change notification and waits, the call log, the
// message store, overrides, rate limiters, id sequences) is
// internal/fakekit's, shared with the other fakes; this package keeps
// Discord's wire protocol and rules.
package fakediscord

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakekit"
	"github.com/gorilla/websocket"
)

// Credentials and identity the fake accepts and reports.
const (
	Token     = "TEST.discord.secret"
	BotID     = "900"
	BotName   = "ccbot"
	SessionID = "sess-1"
)

// maxUnread is how many REST calls may wait unread by Next: more is a
// client in a retry loop.
const maxUnread = 10000

// Server is one fake Discord.
type Server struct {
	tb  testing.TB
	srv *httptest.Server
	sig *fakekit.Signal // every change the fake records

	calls     *fakekit.Log[Call]    // every REST request, in order; Next reads it as a queue
	frames    *fakekit.Log[GWFrame] // every IDENTIFY and RESUME, for Frame
	overrides fakekit.Overrides[Answer]
	ids       fakekit.Seq // snowflakes

	mu           sync.Mutex // guards everything below, and msgs
	msgs         *fakekit.Store[string, Message]
	conn         *gwConn
	seq          int
	events       []dispatched // every dispatch, for RESUME's replay
	channels     map[string]Channel
	files        map[string]string // CDN path -> content
	interactions map[string]*interaction
	heartbeats   int
	connects     int // READY or RESUMED sent
	overlaps     int // connections opened while another was open
	closeCode    int
	silent       int
	noAck        int
	echo         bool
	hbInterval   int
	editLimit    int // edits per editPer in each channel; 0 = none
	editPer      time.Duration
	editBuckets  map[string]*fakekit.Bucket
	clock        time.Duration // added to the time: AdvanceClock
	// uploadLimit is the most bytes of files one message may carry;
	// noHistory and hidden the channels whose history the bot may not
	// read, or that it may not see at all (history.go).
	uploadLimit int
	noHistory   map[string]bool
	hidden      map[string]bool
	noDMs       map[string]bool // DM channels whose user refuses the bot's posts (direct.go)
}

// Call is one REST request.
type Call struct {
	Method string
	Path   string // without /api/v9
	Body   map[string]any
	// Files are the files a multipart request carried (files[n]), in order.
	Files  []Attachment
	Status int // the HTTP status answered
	// Pings are whom Discord would notify for the message the call posts
	// or edits (POST and PATCH of a channel's messages), accepted or
	// refused, by the content and allowed_mentions: "@everyone", "@here",
	// "user 123", "role 456", "replied user". Empty for other calls.
	Pings []string
}

// GWFrame is an IDENTIFY (op 2) or RESUME (op 6) the client sent.
type GWFrame struct {
	Op int
	D  map[string]any
}

// Answer is a canned REST answer (see Override).
type Answer = fakekit.Answer

// Channel is a channel the fake knows. Type is Discord's: 0 a guild text
// channel, 1 a DM, 11 a public thread.
type Channel struct {
	ID       string
	Type     int
	GuildID  string
	ParentID string
	Name     string
}

// Message is one message in a channel, the bot's or a user's.
type Message struct {
	ID        string
	ChannelID string
	AuthorID  string
	// AuthorBot marks a post of another bot (the fake's own bot is
	// AuthorID BotID).
	AuthorBot bool
	Content   string
	// Components is the JSON of the message's components ("" or "[]" for
	// none), as posted or last edited.
	Components string
	// Attachments are the files posted with the message.
	Attachments []Attachment
	Edits       []Edit
	// Reactions are the bot's reactions, in the order added.
	Reactions []string
	// Deleted says the bot deleted it (it stays listed, for tests).
	Deleted bool
	// Nonce is what the post's nonce was ("" when none), and Created when
	// the fake took it (its clock, see AdvanceClock).
	Nonce   string
	Created time.Time
}

// Edit is one PATCH applied to a message.
type Edit struct {
	Content    string
	Components string
}

// New starts a fake Discord that stops when tb ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	sig := fakekit.NewSignal("fakediscord")
	s := &Server{
		tb:           tb,
		sig:          sig,
		calls:        fakekit.NewLog[Call](sig),
		frames:       fakekit.NewLog[GWFrame](sig),
		channels:     map[string]Channel{},
		files:        map[string]string{},
		interactions: map[string]*interaction{},
		echo:         true,
		hbInterval:   defaultHeartbeat,
		uploadLimit:  maxUploadBytes,
		noHistory:    map[string]bool{},
		hidden:       map[string]bool{},
		noDMs:        map[string]bool{},
	}
	s.msgs = fakekit.NewStore[string](&s.mu, sig, (*Message).clone)
	s.ids.Past(5000)
	mux := http.NewServeMux()
	mux.HandleFunc("/gateway", s.serveGateway)
	mux.HandleFunc("/gateway/", s.serveGateway) // discordgo adds a slash and a query
	mux.HandleFunc("/attachments/", s.serveFile)
	mux.HandleFunc("/api/v9/", s.serveREST)
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(s.Close)
	return s
}

// AdvanceClock moves the fake's clock on by d: posts older than Discord's
// nonce window (nonceWindow) no longer answer a repeated nonce.
func (s *Server) AdvanceClock(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock += d
}

// nowLocked is the fake's time; callers hold s.mu.
func (s *Server) nowLocked() time.Time { return time.Now().Add(s.clock) }

// Close drops the gateway and stops the server; safe to call twice.
func (s *Server) Close() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		c.ws.Close()
	}
	s.srv.Close()
}

// URL is the server's base URL: what a client's api_url should be.
func (s *Server) URL() string { return s.srv.URL }

// Wait blocks until cond holds, failing tb after a generous limit. cond
// runs without the fake's lock and is tried again after every change.
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

// SetWaitLimit sets how long the fake's waits (Wait, Next, Frame and the
// waits built on them) last before they fail the test, instead of its
// default: tests that drive the real claude CLI, whose start alone takes
// seconds on a loaded machine, wait as long as the engine's own real-CLI
// tests do.
func (s *Server) SetWaitLimit(d time.Duration) { s.sig.SetLimit(d) }

// Next returns the next REST call (in the order received, each once)
// whose method is method and whose path starts with pathPrefix, skipping
// the others.
func (s *Server) Next(tb testing.TB, method, pathPrefix string) Call {
	tb.Helper()
	return s.calls.Next(tb, fmt.Sprintf("a %s %s call", method, pathPrefix), func(c Call) bool {
		return c.Method == method && strings.HasPrefix(c.Path, pathPrefix)
	})
}

// Calls returns every REST call so far.
func (s *Server) Calls() []Call { return s.calls.All() }

// Override makes the next call of key ("POST /channels/C1/messages")
// answer a instead of the default; several queue up.
func (s *Server) Override(key string, a Answer) { s.overrides.Add(key, a) }

// RateLimit answers the next call of key with HTTP 429 as Discord does:
// {"message":"You are being rate limited.","retry_after":…,"global":false}
// and the X-RateLimit headers of an exhausted per-route bucket.
func (s *Server) RateLimit(key string, retryAfter float64) {
	s.Override(key, Answer{
		Status: http.StatusTooManyRequests,
		Body:   fmt.Sprintf(`{"message":"You are being rate limited.","retry_after":%g,"global":false}`, retryAfter),
		Header: map[string]string{
			"Retry-After":             fmt.Sprint(int(retryAfter + 0.999)),
			"X-RateLimit-Limit":       "5",
			"X-RateLimit-Remaining":   "0",
			"X-RateLimit-Reset-After": fmt.Sprintf("%.3f", retryAfter),
			"X-RateLimit-Reset":       fmt.Sprintf("%.3f", float64(time.Now().UnixMilli())/1000+retryAfter),
			"X-RateLimit-Bucket":      "fakebucket",
			"X-RateLimit-Scope":       "user",
		},
	})
}

// AddChannel makes a channel known (GET /channels/{id}, posting to it).
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = c
}

// SetEcho chooses whether the bot's own posts come back as MESSAGE_CREATE
// (Discord's behaviour, and the default).
func (s *Server) SetEcho(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.echo = on
}

// SetCloseCode makes the gateway close with code after the next IDENTIFY
// or RESUME (4014: disallowed intents); 0 turns it off.
func (s *Server) SetCloseCode(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeCode = code
}

// SetSilent makes the next n gateway connections send no HELLO.
func (s *Server) SetSilent(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silent = n
}

// defaultHeartbeat is the heartbeat interval HELLO asks for, in ms:
// discordgo drops a connection whose ACKs are 5 intervals late, so on a
// busy machine a short one makes clients reconnect (and RESUME) where a
// test counts handshakes. Discord's own is about 41 s.
const defaultHeartbeat = 10_000

// SetHeartbeatInterval sets the heartbeat interval (ms) the next gateway
// connections are asked for: short for a test of heartbeats.
func (s *Server) SetHeartbeatInterval(ms int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hbInterval = ms
}

// SetNoAck makes the next n gateway connections leave heartbeats unacked.
func (s *Server) SetNoAck(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noAck = n
}

// Posts returns the bot's messages in the order posted.
func (s *Server) Posts() []Message {
	return s.msgs.Select(func(m *Message) bool { return m.AuthorID == BotID })
}

// WaitPost waits for a post of the bot that match accepts.
func (s *Server) WaitPost(tb testing.TB, what string, match func(Message) bool) Message {
	tb.Helper()
	return s.msgs.WaitFirst(tb, "a post: "+what, func(m Message) bool { return m.AuthorID == BotID && match(m) })
}

// Message returns the message with id.
func (s *Server) Message(id string) (Message, bool) { return s.msgs.Get(id) }

// WaitMessage waits until the message id satisfies cond.
func (s *Server) WaitMessage(tb testing.TB, id, what string, cond func(Message) bool) Message {
	tb.Helper()
	return s.msgs.WaitKey(tb, id, fmt.Sprintf("message %s: %s", id, what), cond)
}

func (m *Message) clone() Message {
	c := *m
	c.Edits = slices.Clone(m.Edits)
	c.Reactions = slices.Clone(m.Reactions)
	c.Attachments = slices.Clone(m.Attachments)
	return c
}

// AddFile serves content on the fake's CDN and returns the attachment
// object a MESSAGE_CREATE carries for it.
func (s *Server) AddFile(id, name, contentType, content string) map[string]any {
	path := fmt.Sprintf("/attachments/1/%s/%s", id, name)
	s.mu.Lock()
	s.files[path] = content
	s.mu.Unlock()
	return map[string]any{"id": id, "filename": name, "size": len(content), "content_type": contentType,
		"url": s.srv.URL + path, "proxy_url": s.srv.URL + path}
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c, ok := s.files[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write([]byte(c))
}

// nextID hands out a fresh snowflake.
func (s *Server) nextID() string { return fmt.Sprint(s.ids.Next()) }

// gwConn is the gateway connection.
type gwConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	gone chan struct{} // closed when its handler returned
}

func (c *gwConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteJSON(v)
}
