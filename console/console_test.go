package console

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/activity"
)

// clock is a settable time for the links' and sessions' expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type rig struct {
	srv   *Server
	ts    *httptest.Server
	be    *fakeBackend
	clock *clock
}

const convKey = "slack/C1/1.2"

func newRig(t *testing.T) *rig {
	t.Helper()
	be := &fakeBackend{convs: []Conversation{{Key: convKey, Binding: "slack/C1", Channel: "C1", Thread: "1.2", State: "running"}},
		allowed: map[string]bool{"UAPPROVER": true, "UUSER": true}, approve: map[string]bool{"UAPPROVER": true}}
	ck := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	r := &rig{be: be, clock: ck}
	r.ts = httptest.NewUnstartedServer(nil)
	r.ts.StartTLS() // Go's cookie jar sends a Secure cookie over TLS only
	r.srv = New(Settings{BaseURL: r.ts.URL, SessionTTL: time.Hour, Now: ck.now}, be)
	r.ts.Config.Handler = r.srv.Handler()
	be.record = r.srv.Record
	t.Cleanup(r.ts.Close)
	return r
}

// client is a browser's cookies, trusting the test server's certificate.
func (r *rig) client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	c := *r.ts.Client()
	c.Jar = jar
	return &c
}

func (r *rig) signIn(t *testing.T, c *http.Client, user string) {
	t.Helper()
	link, err := r.srv.Issue(Identity{Platform: "slack", UserID: user})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
		t.Fatalf("sign-in: %d at %s", resp.StatusCode, resp.Request.URL)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (r *rig) get(t *testing.T, c *http.Client, path string) (int, string) {
	t.Helper()
	resp, err := c.Get(r.ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestLinkWorksOnceAndExpires(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	link, _ := r.srv.Issue(Identity{Platform: "slack", UserID: "UUSER"})
	c := r.client(t)
	if resp, _ := c.Get(link); resp.StatusCode != http.StatusOK {
		t.Fatalf("first use: %d", resp.StatusCode)
	}
	if resp, _ := r.client(t).Get(link); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("second use: %d, want 403", resp.StatusCode)
	}
	late, _ := r.srv.Issue(Identity{Platform: "slack", UserID: "UUSER"})
	r.clock.add(LinkTTL)
	if resp, _ := r.client(t).Get(late); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("expired link: %d, want 403", resp.StatusCode)
	}
	if resp, _ := r.client(t).Get(r.ts.URL + "/signin?t=guess"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("made-up link: %d, want 403", resp.StatusCode)
	}
	// The session ends with its TTL.
	if code, _ := r.get(t, c, "/"); code != http.StatusOK {
		t.Fatalf("signed in: %d", code)
	}
	r.clock.add(time.Hour)
	if code, _ := r.get(t, c, "/"); code != http.StatusUnauthorized {
		t.Fatalf("after the session's TTL: %d, want 401", code)
	}
}

func TestCookieAndHeaders(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	link, _ := r.srv.Issue(Identity{Platform: "slack", UserID: "UUSER"})
	c := *r.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sc := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "Secure", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(sc, want) {
			t.Errorf("cookie %q lacks %s", sc, want)
		}
	}
	if strings.Contains(sc, strings.TrimPrefix(link, r.ts.URL+"/signin?t=")) {
		t.Error("the cookie is the link's token")
	}
	for h, want := range map[string]string{"Content-Security-Policy": "script-src 'self'", "X-Frame-Options": "DENY",
		"Referrer-Policy": "same-origin", "X-Content-Type-Options": "nosniff"} {
		if got := resp.Header.Get(h); !strings.Contains(got, want) {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
}

func TestStateChangesNeedCSRFAndRights(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	approver, user := r.client(t), r.client(t)
	r.signIn(t, approver, "UAPPROVER")
	r.signIn(t, user, "UUSER")
	r.srv.Record(activity.Event{Kind: activity.Asking, Conversation: convKey, Request: "req-1", Tool: "Write", Input: "x.txt"})

	_, page := r.get(t, approver, "/c?k="+url.QueryEscape(convKey))
	if !strings.Contains(page, `value="allow"`) {
		t.Fatalf("the approver's page has no Allow button:\n%s", page)
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]
	_, upage := r.get(t, user, "/c?k="+url.QueryEscape(convKey))
	if strings.Contains(upage, `value="allow"`) {
		t.Fatal("a non-approver's page shows the Allow button")
	}
	ucsrf := csrfRE.FindStringSubmatch(upage)[1]

	post := func(c *http.Client, form url.Values, origin string) int {
		req, _ := http.NewRequest("POST", r.ts.URL+"/answer", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		c2 := *c
		c2.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c2.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	form := func(csrf string) url.Values {
		return url.Values{"csrf": {csrf}, "k": {convKey}, "request": {"req-1"}, "choice": {"allow"}}
	}
	for _, tt := range []struct {
		name   string
		c      *http.Client
		form   url.Values
		origin string
		want   int
	}{
		{"no csrf", approver, form(""), "", http.StatusForbidden},
		{"another session's csrf", approver, form(ucsrf), "", http.StatusForbidden},
		{"another origin", approver, form(csrf), "https://evil.example", http.StatusForbidden},
		{"non-approver forging", user, form(ucsrf), "", http.StatusForbidden},
		{"not signed in", r.ts.Client(), form(csrf), "", http.StatusUnauthorized},
		{"approver", approver, form(csrf), r.ts.URL, http.StatusSeeOther},
	} {
		if got := post(tt.c, tt.form, tt.origin); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	if len(r.be.answers) != 1 || r.be.answers[0] != "UAPPROVER "+convKey+" req-1 allow" {
		t.Errorf("answers = %q, want the approver's one", r.be.answers)
	}
}

func TestRevokedAtNextRequest(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	c := r.client(t)
	r.signIn(t, c, "UUSER")
	if code, _ := r.get(t, c, "/c?k="+url.QueryEscape(convKey)); code != http.StatusOK {
		t.Fatalf("allowed: %d", code)
	}
	r.be.mu.Lock()
	r.be.allowed["UUSER"] = false
	r.be.mu.Unlock()
	if code, _ := r.get(t, c, "/c?k="+url.QueryEscape(convKey)); code != http.StatusNotFound {
		t.Fatalf("after revoking: %d, want 404", code)
	}
}

func TestPagesEscapeChatText(t *testing.T) {
	t.Parallel()
	hostile := `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	var b bytes.Buffer
	if err := renderPage(&b, "conversation", hostileData(hostile, hostile)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>alert") || strings.Contains(b.String(), "<img") {
		t.Fatalf("hostile text reached the page unescaped:\n%s", b.String())
	}
}

func hostileData(text, input string) pageData {
	return pageData{Title: text, Session: &session{who: Identity{UserName: text}, csrf: "c"},
		Conv: &Conversation{Key: text, Binding: text, Channel: text, Thread: text, Model: text, Rights: Rights{Approve: true}},
		Live: &liveView{Text: text, Tools: []string{input}, Todos: []activity.Todo{{Text: text, Status: input}},
			Asks: []Ask{{Request: input, Tool: text, Input: input}, {Request: text, Tool: "AskUserQuestion", Input: input,
				Questions: []activity.Question{{Header: text, Text: input, Options: []string{text, input}, Multi: true}}},
				{Request: input, Tool: "ExitPlanMode", Input: text}}},
		Changes: &changesView{TurnChanges: TurnChanges{Turn: text, Files: []string{text, input}, Diff: input, DiffKept: true}, Shown: input},
		Notice:  text}
}

func TestSchedulesAndSpendPages(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	admin, user := r.client(t), r.client(t)
	r.signIn(t, admin, "UAPPROVER")
	r.signIn(t, user, "UUSER")
	_, page := r.get(t, admin, "/schedules")
	if !strings.Contains(page, "nightly&lt;b&gt;") || !strings.Contains(page, `value="pause"`) ||
		!strings.Contains(page, "2026-01-01 03:00 UTC</time>: the run was refused: &lt;i&gt;over the cap&lt;/i&gt;") {
		t.Fatalf("the admin's schedules page:\n%s", page)
	}
	_, upage := r.get(t, user, "/schedules")
	if strings.Contains(upage, `value="pause"`) || !strings.Contains(upage, "admins only") {
		t.Fatalf("a non-admin's schedules page offers a pause:\n%s", upage)
	}
	ucsrf := csrfRE.FindStringSubmatch(upage)[1]
	c := *user
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.PostForm(r.ts.URL+"/schedules", url.Values{"csrf": {ucsrf}, "name": {"nightly<b>"}, "verb": {"pause"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a non-admin's pause: %d, want 403", resp.StatusCode)
	}
	if _, spend := r.get(t, user, "/spend"); !strings.Contains(spend, "$1.50") || !strings.Contains(spend, "UUSER") ||
		!regexp.MustCompile(`2025-12-31</time></td><td>slack/C1</td><td>&lt;b&gt;UUSER&lt;/b&gt;</td><td>\$0.50</td>`).MatchString(spend) {
		t.Errorf("the spend page:\n%s", spend)
	}
}

func TestAuditPage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	c := r.client(t)
	r.signIn(t, c, "UUSER")
	code, page := r.get(t, c, "/audit?user="+url.QueryEscape("<b>bob</b>"))
	if code != http.StatusOK || strings.Contains(page, "<script>x") || !strings.Contains(page, "&lt;script&gt;x") ||
		!strings.Contains(page, `value="&lt;b&gt;bob&lt;/b&gt;"`) {
		t.Fatalf("the audit page (%d):\n%s", code, page)
	}
}

func TestQuestionsAreAnsweredInChat(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	c := r.client(t)
	r.signIn(t, c, "UAPPROVER")
	r.srv.Record(activity.Event{Kind: activity.Asking, Conversation: convKey, Request: "q-1", Tool: "AskUserQuestion", Input: "A or B?"})
	_, page := r.get(t, c, "/c?k="+url.QueryEscape(convKey))
	if strings.Contains(page, `value="allow"`) || !strings.Contains(page, "Answer this question in the chat") {
		t.Fatalf("a question offers Allow/Deny:\n%s", page)
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]
	resp, err := c.PostForm(r.ts.URL+"/answer", url.Values{"csrf": {csrf}, "k": {convKey}, "request": {"q-1"}, "choice": {"allow"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || len(r.be.answers) != 0 {
		t.Errorf("a question answered Allow from the page: %d, %q", resp.StatusCode, r.be.answers)
	}
}

func TestClusterPage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	c := r.client(t)
	r.signIn(t, c, "UUSER")
	if code, page := r.get(t, c, "/cluster"); code != http.StatusOK || !strings.Contains(page, "runs alone") {
		t.Fatalf("the cluster page alone (%d):\n%s", code, page)
	}
	hostile := `<script>alert(1)</script>`
	v := &ClusterView{Reader: hostile, Hosts: []ClusterHost{{Name: hostile, Version: hostile, Seen: true, Up: true, Draining: true}},
		Bindings:      []ClusterBinding{{Binding: hostile, Owner: hostile, Standby: []string{hostile}, ClusterLease: ClusterLease{Holder: hostile, Token: 4}}},
		Leases:        []ClusterLease{{Key: hostile, Holder: hostile, Expired: true, Token: 2}},
		Conversations: []ClusterConversation{{Key: hostile, Binding: hostile, Channel: hostile, ServedBy: hostile, LastAnswered: hostile}}}
	var b bytes.Buffer
	if err := renderPage(&b, "cluster", pageData{Title: "Cluster", Cluster: v}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script>alert") {
		t.Fatalf("a host's name reached the page unescaped:\n%s", page)
	}
	for _, want := range []string{"draining: serves nothing until it restarts", "EXPIRED", "renewed just now (token 4)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the cluster page lacks %q:\n%s", want, page)
		}
	}
}

// TestQuestionsAndPlansFromThePage: an approver answers Claude's questions
// with their options (one press per question, as the chat's buttons), or
// dismisses them, and approves or rejects a plan; a bad form answers 400
// and sends nothing; a non-approver sees the questions and no form.
func TestQuestionsAndPlansFromThePage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	approver, user := r.client(t), r.client(t)
	r.signIn(t, approver, "UAPPROVER")
	r.signIn(t, user, "UUSER")
	r.srv.Record(activity.Event{Kind: activity.Asking, Conversation: convKey, Request: "q-1", Tool: "AskUserQuestion", Input: "questions=…",
		Questions: []activity.Question{{Header: "Color", Text: "Which <b>color</b>?", Options: []string{"Red", "Blue"}},
			{Text: "Which sizes?", Options: []string{"S", "M", "L"}, Multi: true}}})
	r.srv.Record(activity.Event{Kind: activity.Asking, Conversation: convKey, Request: "p-1", Tool: "ExitPlanMode", Input: "plan=# Plan"})

	_, page := r.get(t, approver, "/c?k="+url.QueryEscape(convKey))
	for _, want := range []string{`<legend>Color: Which &lt;b&gt;color&lt;/b&gt;?</legend>`, `<input type="radio" name="q0" value="1"> Blue`,
		`<input type="checkbox" name="q1" value="2"> L`, `value="dismiss"`, `value="plan_default"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the approver's page lacks %s:\n%s", want, page)
		}
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]
	post := func(c *http.Client, form url.Values) int {
		c2 := *c
		c2.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c2.PostForm(r.ts.URL+"/answer", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	form := func(request, choice string, kv ...string) url.Values {
		f := url.Values{"csrf": {csrf}, "k": {convKey}, "request": {request}, "choice": {choice}}
		for i := 0; i < len(kv); i += 2 {
			f.Add(kv[i], kv[i+1])
		}
		return f
	}
	for _, tt := range []struct {
		name string
		form url.Values
		want int
	}{
		{"a question left open", form("q-1", "answer", "q0", "1"), http.StatusBadRequest},
		{"two options of a single choice", form("q-1", "answer", "q0", "0", "q0", "1", "q1", "0"), http.StatusBadRequest},
		{"an option it does not have", form("q-1", "answer", "q0", "2", "q1", "0"), http.StatusBadRequest},
		{"allow on a question", form("q-1", "allow"), http.StatusBadRequest},
		{"allow-always on a plan", form("p-1", "always"), http.StatusBadRequest},
		{"the answers", form("q-1", "answer", "q0", "1", "q1", "0", "q1", "2"), http.StatusSeeOther},
		{"dismissed", form("q-1", "dismiss"), http.StatusSeeOther},
		{"the plan approved", form("p-1", "plan_default"), http.StatusSeeOther},
		{"the plan rejected", form("p-1", "deny"), http.StatusSeeOther},
	} {
		if got := post(approver, tt.form); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	want := []string{"UAPPROVER " + convKey + " q-1 answer q0 [1]", "UAPPROVER " + convKey + " q-1 answer q1 [0 2]",
		"UAPPROVER " + convKey + " q-1 dismiss", "UAPPROVER " + convKey + " p-1 plan_default", "UAPPROVER " + convKey + " p-1 deny"}
	if !slices.Equal(r.be.answers, want) {
		t.Errorf("presses %q, want %q", r.be.answers, want)
	}

	_, upage := r.get(t, user, "/c?k="+url.QueryEscape(convKey))
	if !strings.Contains(upage, "Which &lt;b&gt;color&lt;/b&gt;?") || strings.Contains(upage, `name="q0"`) || strings.Contains(upage, `value="plan_default"`) {
		t.Errorf("a non-approver's page shows no questions, or forms to answer:\n%s", upage)
	}
	ucsrf := csrfRE.FindStringSubmatch(upage)[1]
	f := form("q-1", "answer", "q0", "0", "q1", "0")
	f.Set("csrf", ucsrf)
	if got := post(user, f); got != http.StatusForbidden {
		t.Errorf("a non-approver's forged answer: %d, want 403", got)
	}
}

// TestTrustedProxiesOnly: behind a proxy, only the proxies' addresses are
// served, whatever X-Forwarded-* a peer sends (the console reads none of
// them): another peer that claims to come through a trusted proxy is
// refused, and a forwarded host or scheme changes neither the origin a
// POST must come from nor the links.
func TestTrustedProxiesOnly(t *testing.T) {
	t.Parallel()
	be := &fakeBackend{allowed: map[string]bool{"UAPPROVER": true}, approve: map[string]bool{"UAPPROVER": true}}
	srv := New(Settings{BaseURL: "https://cc.example.com", SessionTTL: time.Hour,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.7/32"), netip.MustParsePrefix("fd00::/8")}}, be)
	h := srv.Handler()
	serve := func(method, target, remote string, header map[string]string, cookie *http.Cookie, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.RemoteAddr = remote
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	spoof := map[string]string{"X-Forwarded-For": "10.0.0.7", "X-Real-IP": "10.0.0.7", "Forwarded": "for=10.0.0.7;proto=https",
		"X-Forwarded-Proto": "https", "X-Forwarded-Host": "cc.example.com"}
	link, _ := srv.Issue(Identity{Platform: "slack", UserID: "UAPPROVER"})
	path := strings.TrimPrefix(link, "https://cc.example.com")
	for _, remote := range []string{"203.0.113.5:4444", "127.0.0.1:5555", "[::1]:5555", "10.0.0.8:80", "[fe80::1]:80"} {
		if rec := serve(http.MethodGet, path, remote, spoof, nil, ""); rec.Code != http.StatusForbidden || rec.Header().Get("Set-Cookie") != "" {
			t.Errorf("a sign-in from %s claiming to be forwarded by a trusted proxy: %d, cookie %q; want 403 and none",
				remote, rec.Code, rec.Header().Get("Set-Cookie"))
		}
	}
	// The link was not used up by the refused peers: the proxy redeems it.
	rec := serve(http.MethodGet, path, "10.0.0.7:40000", nil, nil, "")
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("a sign-in through the trusted proxy: %d, want 303", rec.Code)
	}
	cookie := rec.Result().Cookies()[0]
	if rec := serve(http.MethodGet, "/", "[fd00::2]:1", nil, cookie, ""); rec.Code != http.StatusOK {
		t.Errorf("a page through a trusted IPv6 proxy: %d", rec.Code)
	}
	if rec := serve(http.MethodGet, "/", "[::ffff:10.0.0.7]:1", nil, cookie, ""); rec.Code != http.StatusOK {
		t.Errorf("a page through the trusted proxy as an IPv4-mapped address: %d", rec.Code)
	}
	// With the session's cookie, another peer is still refused.
	if rec := serve(http.MethodGet, "/", "203.0.113.5:1", spoof, cookie, ""); rec.Code != http.StatusForbidden {
		t.Errorf("a signed-in page from another peer: %d, want 403", rec.Code)
	}
	// A forwarded host does not make another origin the console's.
	page := serve(http.MethodGet, "/schedules", "10.0.0.7:1", nil, cookie, "").Body.String()
	csrf := csrfRE.FindStringSubmatch(page)[1]
	form := url.Values{"csrf": {csrf}, "name": {"nightly<b>"}, "verb": {"pause"}}.Encode()
	forged := map[string]string{"Origin": "https://evil.example", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}
	if rec := serve(http.MethodPost, "/schedules", "10.0.0.7:1", forged, cookie, form); rec.Code != http.StatusForbidden {
		t.Errorf("a POST from another origin with a forwarded host naming it: %d, want 403", rec.Code)
	}
	if rec := serve(http.MethodPost, "/schedules", "10.0.0.7:1", map[string]string{"Origin": "https://cc.example.com"}, cookie, form); rec.Code != http.StatusSeeOther {
		t.Errorf("the same POST from the console's origin: %d, want 303", rec.Code)
	}
	if again, _ := srv.Issue(Identity{Platform: "slack", UserID: "UAPPROVER"}); !strings.HasPrefix(again, "https://cc.example.com/signin?t=") {
		t.Errorf("a link %q does not start with the configured url", again)
	}
}
