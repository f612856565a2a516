// Package console is the console in the browser: the conversations a
// person may see, one conversation live (the reply as it streams, the
// tool log, the todo list, what waits for an answer), answers and !stop
// from the page, schedules and spend. People sign in through chat: the
// engine's !console asks Issue for a one-time link and sends it by direct
// message; the browser session then carries that platform identity, and
// every request reads its rights from the Backend (the bindings in force,
// through the engine's one gate), never from a copy the console keeps.
//
// It owns HTTP, sign-in, sessions, CSRF and the pages; it must not reach
// into the engine: everything it knows of conversations comes through
// Backend, and what happens in them through the activity events it
// receives as an activity.Sink.
package console

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/activity"
)

// Identity is who a browser session acts as: a person on a platform
// instance (the adapter's name in the config), as the chat knows them.
type Identity struct {
	Platform string
	UserID   string
	UserName string
}

// Name is how the pages name the person.
func (id Identity) Name() string {
	if id.UserName != "" {
		return id.UserName
	}
	return id.UserID
}

// Rights are what the person may do in a conversation, beyond seeing it
// and stopping its turn (which the allow list gives).
type Rights struct {
	Approve bool // answer permission requests and plans
	Admin   bool // pause and resume schedules
}

// Conversation is one conversation as the pages show it.
type Conversation struct {
	Key          string
	Binding      string // "platform/channel"
	Channel      string
	Thread       string
	Host         string // the cluster host serving it; "" alone
	State        string // idle, running, requires_action
	Queued       int
	Model        string
	ContextPct   int // 0 when unknown
	CostUSD      float64
	LastActivity time.Time
	Rights       Rights
}

// Backend is what the console needs of the engine; each call reads the
// bindings in force, so a right taken away applies to the next request.
// Errors wrapping ErrNotAllowed answer 403.
type Backend interface {
	// Conversations are those of the bindings that allow who.
	Conversations(who Identity) ([]Conversation, error)
	// Conversation is key's, when who may see it.
	Conversation(who Identity, key string) (Conversation, bool)
	// Answer answers a pending request as a press of its button would.
	Answer(ctx context.Context, who Identity, key string, a Answer) error
	// Stop stops key's running turn as !stop sent there would.
	Stop(ctx context.Context, who Identity, key string) error
}

// Answer is a press on the page: Choice is allow or deny (a permission
// request), plan_default or deny (a plan), answer (Question's Options,
// by index) or dismiss (a question).
type Answer struct {
	Request  string
	Choice   string
	Question int
	Options  []int
}

// ErrNotAllowed is what a Backend wraps when the person may not act.
var ErrNotAllowed = errors.New("not allowed")

// Settings configure a Server.
type Settings struct {
	// BaseURL is the address people open ("https://cc.example.com");
	// sign-in links start with it, and a state-changing request must come
	// from its origin.
	BaseURL    string
	SessionTTL time.Duration
	// TrustedProxies, when set, are the only peers served (a reverse
	// proxy in front of the console).
	TrustedProxies []netip.Prefix
	// TLS serves HTTPS with these, when both are set.
	TLSCert, TLSKey string
	Log             *slog.Logger
	Now             func() time.Time // nil: time.Now
}

// LinkTTL is how long a sign-in link works.
const LinkTTL = 5 * time.Minute

// Server is the console. New has no side effects; Serve listens.
type Server struct {
	set     Settings
	log     *slog.Logger
	now     func() time.Time
	auth    *auth
	hub     *hub
	backend Backend
	// revertWait is how long a Revert press waits for its outcome
	// (revertWait; tests shorten it).
	revertWait time.Duration
}

var _ activity.Sink = (*Server)(nil)

// New builds a Server; backend is read at every request.
func New(s Settings, backend Backend) *Server {
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	s.BaseURL = strings.TrimRight(s.BaseURL, "/")
	return &Server{set: s, log: s.Log, now: s.Now, auth: newAuth(s.Now, s.SessionTTL), hub: newHub(), backend: backend,
		revertWait: revertWait}
}

// Issue makes a one-time sign-in link for who (the engine's !console).
func (s *Server) Issue(who Identity) (string, error) {
	if who.Platform == "" || who.UserID == "" {
		return "", errors.New("issuing a console link: no identity")
	}
	tok, err := s.auth.issue(who)
	if err != nil {
		return "", fmt.Errorf("issuing a console link: %w", err)
	}
	s.log.Info("Console sign-in link issued", "platform", who.Platform, "user_id", who.UserID)
	return s.set.BaseURL + "/signin?t=" + tok, nil
}

// Record implements activity.Sink: the live views' events. It never
// blocks (a slow browser loses events, then resynchronises).
func (s *Server) Record(e activity.Event) { s.hub.record(e) }

// Serve serves on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	if s.set.TLSCert != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	var err error
	if s.set.TLSCert != "" {
		err = srv.ServeTLS(ln, s.set.TLSCert, s.set.TLSKey)
	} else {
		err = srv.Serve(ln)
	}
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// BaseURL is the address the sign-in links start with.
func (s *Server) BaseURL() string { return s.set.BaseURL }
