package console

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/cc-connect/cc-connect/activity"
)

//go:embed web
var webFS embed.FS

// cookieName is the session cookie's. It holds a random token whose hash
// is the session's key; HttpOnly, Secure, SameSite=Strict.
const cookieName = "cc_console"

// csp allows only the console's own script and style: nothing a chat
// message or a tool input smuggles into a page runs, even if an escape
// were missed.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Handler is the console's routes behind its security headers and the
// trusted-proxy check.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /signin", s.signIn)
	mux.HandleFunc("GET /{$}", s.signedIn(s.index))
	mux.HandleFunc("GET /c", s.signedIn(s.conversation))
	mux.HandleFunc("GET /events", s.signedIn(s.events))
	mux.HandleFunc("POST /answer", s.changing(s.answer))
	mux.HandleFunc("POST /stop", s.changing(s.stop))
	mux.HandleFunc("POST /revert", s.changing(s.revert))
	mux.HandleFunc("GET /diff", s.signedIn(s.diff))
	mux.HandleFunc("POST /signout", s.changing(s.signOut))
	mux.HandleFunc("GET /schedules", s.signedIn(s.schedules))
	mux.HandleFunc("POST /schedules", s.changing(s.pause))
	mux.HandleFunc("GET /spend", s.signedIn(s.spend))
	mux.HandleFunc("GET /audit", s.signedIn(s.audit))
	mux.HandleFunc("GET /cluster", s.signedIn(s.cluster))
	return s.guard(mux)
}

// guard sets the security headers on every answer and refuses a peer
// that is not a trusted proxy when the console sits behind one.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// A sign-in link never leaves in a Referer to another site; a
		// same-origin one keeps the browser's Origin header on our own
		// POSTs (no-referrer would make it "null").
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if s.set.TLSCert != "" {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if !s.trusted(r.RemoteAddr) {
			s.log.Warn("Console request refused: not from a trusted proxy", "remote", r.RemoteAddr)
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) trusted(remote string) bool {
	if len(s.set.TrustedProxies) == 0 {
		return true
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	for _, p := range s.set.TrustedProxies {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// signIn redeems a one-time link: a session cookie, then a redirect that
// takes the token out of the address bar.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	cookie, sess, ok := s.auth.redeem(r.URL.Query().Get("t"))
	if !ok {
		s.log.Info("Console sign-in refused: link unknown, used or expired", "remote", r.RemoteAddr)
		s.page(w, http.StatusForbidden, "message", pageData{Title: "Sign-in link not valid",
			Message: "This sign-in link was used already, has expired, or is not one. Send !console in chat for a new one."})
		return
	}
	s.log.Info("Console signed in", "platform", sess.who.Platform, "user_id", sess.who.UserID)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: cookie, Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sess.expires.Sub(s.now()).Seconds())})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signedIn runs h for a signed-in browser; others get the page that says
// how to sign in.
func (s *Server) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.sessionOf(r)
		if sess == nil {
			s.page(w, http.StatusUnauthorized, "message", pageData{Title: "Sign in",
				Message: "You are not signed in. Send !console to the bot in chat: it sends you a one-time link by direct message."})
			return
		}
		h(w, r, sess)
	}
}

func (s *Server) sessionOf(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	return s.auth.session(c.Value)
}

// changing runs h for a state-changing request: signed in, from the
// console's own origin, with the session's CSRF token.
func (s *Server) changing(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.sessionOf(r)
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		switch {
		case sess == nil:
			http.Error(w, "Not signed in", http.StatusUnauthorized)
		case !s.sameOrigin(r):
			s.log.Warn("Console request refused: another origin", "origin", r.Header.Get("Origin"), "user_id", sess.who.UserID)
			http.Error(w, "Forbidden", http.StatusForbidden)
		case r.ParseForm() != nil || !sess.csrfOK(r.PostForm.Get("csrf")):
			s.log.Warn("Console request refused: CSRF token missing or wrong", "user_id", sess.who.UserID)
			http.Error(w, "Forbidden", http.StatusForbidden)
		default:
			h(w, r, sess)
		}
	}
}

// sameOrigin checks the Origin a browser sends with a POST, when it sends
// one, against the console's own.
func (s *Server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	base, err := url.Parse(s.set.BaseURL)
	if err != nil {
		return false
	}
	return origin == base.Scheme+"://"+base.Host
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request, sess *session) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.auth.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	s.log.Info("Console signed out", "platform", sess.who.Platform, "user_id", sess.who.UserID)
	s.page(w, http.StatusOK, "message", pageData{Title: "Signed out", Message: "You are signed out."})
}

// group is a binding's conversations on the index page.
type group struct {
	Binding       string
	Conversations []Conversation
}

func (s *Server) index(w http.ResponseWriter, r *http.Request, sess *session) {
	convs, err := s.backend.Conversations(sess.who)
	if err != nil {
		s.log.Warn("Listing conversations for the console failed", "error", err)
		http.Error(w, "Could not list the conversations (the log has the details).", http.StatusInternalServerError)
		return
	}
	s.page(w, http.StatusOK, "index", pageData{Title: "Conversations", Session: sess, Groups: groupByBinding(convs)})
}

func groupByBinding(convs []Conversation) []group {
	by := map[string]int{}
	var out []group
	for _, c := range convs {
		i, ok := by[c.Binding]
		if !ok {
			i = len(out)
			by[c.Binding] = i
			out = append(out, group{Binding: c.Binding})
		}
		out[i].Conversations = append(out[i].Conversations, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Binding < out[j].Binding })
	return out
}

func (s *Server) conversation(w http.ResponseWriter, r *http.Request, sess *session) {
	key := r.URL.Query().Get("k")
	c, ok := s.backend.Conversation(sess.who, key)
	if !ok {
		s.page(w, http.StatusNotFound, "message", pageData{Title: "Not found", Session: sess,
			Message: "There is no such conversation, or you may not see it."})
		return
	}
	v := s.hub.view(key)
	s.page(w, http.StatusOK, "conversation", pageData{Title: "Conversation", Session: sess, Conv: &c, Live: &v,
		Changes: s.changesOf(sess.who, key), Notice: s.auth.takeNotice(sess, key)})
}

// answer answers a pending request from the page, as its button in the
// chat would; only an approver of the binding in force gets this far.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, sess *session) {
	key, req, choice := r.PostForm.Get("k"), r.PostForm.Get("request"), r.PostForm.Get("choice")
	c, ok := s.backend.Conversation(sess.who, key)
	if !ok || !c.Rights.Approve {
		s.log.Warn("Console answer refused: not an approver", "user_id", sess.who.UserID, "session_key", key, "request_id", req)
		http.Error(w, "Forbidden: you may not answer requests here", http.StatusForbidden)
		return
	}
	ask, waiting := s.hub.asks(key, req)
	presses, err := pressesOf(ask, waiting, req, choice, r.PostForm)
	if err != nil {
		http.Error(w, "Bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	for _, p := range presses {
		if err := s.backend.Answer(r.Context(), sess.who, key, p); err != nil {
			s.fail(w, "Answering", err)
			return
		}
	}
	http.Redirect(w, r, "/c?k="+url.QueryEscape(key), http.StatusSeeOther)
}

// pressesOf are the presses of the chat's buttons an answer from the page
// stands for: one for a permission request, a plan or a dismissal; one
// per question for a question set's options (form fields q0, q1…, each
// an option's index), each as the button of that option would.
func pressesOf(ask Ask, waiting bool, req, choice string, form url.Values) ([]Answer, error) {
	one := []Answer{{Request: req, Choice: choice}}
	switch {
	case waiting && ask.Question():
		switch {
		case choice == "dismiss":
			return one, nil
		case choice != "answer":
			return nil, errors.New("a question is answered with its options, or dismissed")
		case len(ask.Questions) == 0:
			return nil, errors.New("answer this question in the chat")
		}
		var out []Answer
		for i, q := range ask.Questions {
			var opts []int
			for _, v := range form[fmt.Sprintf("q%d", i)] {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 || n >= len(q.Options) || slices.Contains(opts, n) {
					return nil, fmt.Errorf("question %d: %q is not one of its options", i+1, v)
				}
				opts = append(opts, n)
			}
			switch {
			case len(opts) == 0:
				return nil, fmt.Errorf("question %d: choose an option", i+1)
			case len(opts) > 1 && !q.Multi:
				return nil, fmt.Errorf("question %d: choose one option", i+1)
			}
			out = append(out, Answer{Request: req, Choice: "answer", Question: i, Options: opts})
		}
		return out, nil
	case waiting && ask.Plan():
		if choice != "plan_default" && choice != "deny" {
			return nil, errors.New("a plan is approved (plan_default) or rejected (deny)")
		}
		return one, nil
	case choice != "allow" && choice != "deny":
		return nil, errors.New("choice must be allow or deny")
	}
	return one, nil
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request, sess *session) {
	key := r.PostForm.Get("k")
	if _, ok := s.backend.Conversation(sess.who, key); !ok {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	if err := s.backend.Stop(r.Context(), sess.who, key); err != nil {
		s.fail(w, "Stopping", err)
		return
	}
	http.Redirect(w, r, "/c?k="+url.QueryEscape(key), http.StatusSeeOther)
}

func (s *Server) fail(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, ErrNotAllowed) {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	s.log.Warn("Console action failed", "action", what, "error", err)
	http.Error(w, what+" failed (the log has the details).", http.StatusInternalServerError)
}

// liveEvent is what the browser gets of an activity event.
type liveEvent struct {
	Text    string          `json:"text,omitempty"`
	Input   string          `json:"input,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Todos   []activity.Todo `json:"todos,omitempty"`
	Request string          `json:"request,omitempty"`
	Outcome string          `json:"outcome,omitempty"`
	Asks    []string        `json:"asks,omitempty"` // snapshot: the requests waiting
	Tools   []string        `json:"tools,omitempty"`
}

// keepAlive is how often an idle stream gets a comment line, so that
// proxies do not close it.
const keepAlive = 25 * time.Second

// events streams a conversation's live events (SSE): first a snapshot,
// then each event, each time after reading the person's rights again.
func (s *Server) events(w http.ResponseWriter, r *http.Request, sess *session) {
	key := r.URL.Query().Get("k")
	if _, ok := s.backend.Conversation(sess.who, key); !ok {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	watch, cancel := s.hub.watch(key)
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	v := s.hub.view(key)
	snap := liveEvent{Text: v.Text, Tools: v.Tools, Todos: v.Todos, Outcome: v.Outcome, Asks: []string{}}
	for _, a := range v.Asks {
		snap.Asks = append(snap.Asks, a.Request)
	}
	writeEvent(w, "snapshot", snap)
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			_, _ = io.WriteString(w, ": keep-alive\n\n")
		case e := <-watch.ch:
			if _, ok := s.backend.Conversation(sess.who, key); !ok || s.auth.session(cookieOf(r)) == nil {
				writeEvent(w, "gone", liveEvent{})
				flusher.Flush()
				return
			}
			if s.hub.overflowed(watch) {
				writeEvent(w, "resync", liveEvent{})
				flusher.Flush()
				return
			}
			writeEvent(w, string(e.Kind), liveEvent{Text: e.Text, Input: e.Input, Tool: e.Tool, Todos: e.Todos,
				Request: e.Request, Outcome: e.Outcome})
		}
		flusher.Flush()
	}
}

func cookieOf(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	return c.Value
}

// writeEvent writes one SSE event; its data is JSON, which escapes <, >
// and & as well.
func writeEvent(w io.Writer, kind string, e liveEvent) {
	b, _ := json.Marshal(e)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b)
}
