package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// auth holds the sign-in links and the browser sessions. Only hashes of
// their tokens are kept: a memory dump or a log of the map gives nobody
// a working link or cookie. A link works once and for LinkTTL; a session
// for the configured TTL, or until signed out.
type auth struct {
	now func() time.Time
	ttl time.Duration

	mu       sync.Mutex // guards links and sessions
	links    map[[32]byte]pendingLink
	sessions map[[32]byte]*session
}

type pendingLink struct {
	who     Identity
	expires time.Time
}

// session is one signed-in browser.
type session struct {
	who     Identity
	csrf    string // the token every state-changing request carries
	expires time.Time
	// notice is what the next page of a conversation says once (how a
	// press from the page ended), guarded by auth.mu.
	notice struct{ key, text string }
}

// maxPending bounds the links and sessions kept: a flood of !console
// cannot grow memory without end (the oldest go first).
const maxPending = 4096

func newAuth(now func() time.Time, ttl time.Duration) *auth {
	if ttl <= 0 {
		ttl = 12 * time.Hour
	}
	return &auth{now: now, ttl: ttl, links: map[[32]byte]pendingLink{}, sessions: map[[32]byte]*session{}}
}

// token is 32 random bytes, URL-safe.
func token() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func hash(tok string) [32]byte { return sha256.Sum256([]byte(tok)) }

// issue makes a one-time link token for who.
func (a *auth) issue(who Identity) (string, error) {
	tok, err := token()
	if err != nil {
		return "", err
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked(now)
	a.links[hash(tok)] = pendingLink{who: who, expires: now.Add(LinkTTL)}
	return tok, nil
}

// redeem uses a link token up and opens a session for its person; it
// returns the session's cookie value. ok is false for a token unknown,
// used or expired.
func (a *auth) redeem(tok string) (cookie string, s *session, ok bool) {
	now := a.now()
	h := hash(tok)
	a.mu.Lock()
	l, found := a.links[h]
	delete(a.links, h) // used, whatever comes next
	a.mu.Unlock()
	if !found || !now.Before(l.expires) {
		return "", nil, false
	}
	cookie, err := token()
	if err != nil {
		return "", nil, false
	}
	csrf, err := token()
	if err != nil {
		return "", nil, false
	}
	s = &session{who: l.who, csrf: csrf, expires: now.Add(a.ttl)}
	a.mu.Lock()
	a.sweepLocked(now)
	a.sessions[hash(cookie)] = s
	a.mu.Unlock()
	return cookie, s, true
}

// session is the live session of a cookie, nil when none.
func (a *auth) session(cookie string) *session {
	if cookie == "" {
		return nil
	}
	now := a.now()
	h := hash(cookie)
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[h]
	if s == nil {
		return nil
	}
	if !now.Before(s.expires) {
		delete(a.sessions, h)
		return nil
	}
	return s
}

// end signs a cookie's session out.
func (a *auth) end(cookie string) {
	a.mu.Lock()
	delete(a.sessions, hash(cookie))
	a.mu.Unlock()
}

// sweepLocked drops what expired and, past maxPending, others at random.
func (a *auth) sweepLocked(now time.Time) {
	for h, l := range a.links {
		if !now.Before(l.expires) || len(a.links) > maxPending {
			delete(a.links, h)
		}
	}
	for h, s := range a.sessions {
		if !now.Before(s.expires) || len(a.sessions) > maxPending {
			delete(a.sessions, h)
		}
	}
}

// csrfOK compares a request's CSRF token with the session's in constant
// time.
func (s *session) csrfOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// setNotice keeps text for s's next page of the conversation key.
func (a *auth) setNotice(s *session, key, text string) {
	a.mu.Lock()
	s.notice.key, s.notice.text = key, text
	a.mu.Unlock()
}

// takeNotice is the notice kept for s's page of key, once.
func (a *auth) takeNotice(s *session, key string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.notice.key != key {
		return ""
	}
	text := s.notice.text
	s.notice.key, s.notice.text = "", ""
	return text
}
