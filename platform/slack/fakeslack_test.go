package slack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

const (
	testBotToken = "xoxb-test-token"
	testAppToken = "xapp-test-token"
	testBotUser  = "UBOT"
	testBotID    = "BBOT"
)

// fakeSlack serves the parts of Slack's Web API and Socket Mode the adapter
// uses, on 127.0.0.1, and records what the adapter did.
type fakeSlack struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex // guards everything below
	changed chan struct{}
	calls   []apiCall
	acks    []string
	conns   []*fakeConn
	ts      int
	// limitOnce answers the next call of a method with 429 Retry-After: 1.
	limitOnce map[string]bool
	// gate, when set for a method, holds its calls until the channel closes.
	gate map[string]chan struct{}
	// fail answers a method with {"ok":false,"error":...}.
	fail map[string]string
	// down answers this many calls of a method with HTTP 503.
	down      map[string]int
	reactions map[string]bool // channel:ts:name
	files     map[string]string
	downloads []string // Authorization headers of file downloads
}

type apiCall struct {
	Method string
	Auth   string
	Form   map[string]string
	// Pings are the control sequences Slack would act on in a posted or
	// updated message (see slackPings): mentions and channel links.
	Pings []string
}

func newFakeSlack(t *testing.T) *fakeSlack {
	t.Helper()
	f := &fakeSlack{
		t:         t,
		changed:   make(chan struct{}),
		limitOnce: map[string]bool{},
		gate:      map[string]chan struct{}{},
		fail:      map[string]string{},
		down:      map[string]int{},
		reactions: map[string]bool{},
		files:     map[string]string{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", f.serveAPI)
	mux.HandleFunc("/ws", f.serveWS)
	mux.HandleFunc("/files/", f.serveFile)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.mu.Lock()
		conns := f.conns
		for _, g := range f.gate {
			select {
			case <-g:
			default:
				close(g)
			}
		}
		f.mu.Unlock()
		for _, c := range conns {
			c.close()
		}
		f.srv.Close()
	})
	return f
}

func (f *fakeSlack) apiURL() string { return f.srv.URL + "/api/" }

// notify wakes waiters; callers hold f.mu.
func (f *fakeSlack) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitFor blocks until cond (run under f.mu) holds, failing the test after
// a generous deadline. It wakes on every recorded change, not on a timer.
func (f *fakeSlack) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		ok := cond()
		ch := f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			f.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// callsOf returns the recorded calls of one method.
func (f *fakeSlack) callsOf(method string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.callsOfLocked(method)
}

func (f *fakeSlack) callsOfLocked(method string) []apiCall {
	var out []apiCall
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSlack) waitCalls(method string, n int) []apiCall {
	f.t.Helper()
	f.waitFor(fmt.Sprintf("%d %s calls", n, method), func() bool { return len(f.callsOfLocked(method)) >= n })
	return f.callsOf(method)
}

func (f *fakeSlack) waitAck(envelopeID string) {
	f.t.Helper()
	f.waitFor("ack of "+envelopeID, func() bool {
		for _, a := range f.acks {
			if a == envelopeID {
				return true
			}
		}
		return false
	})
}

// waitConn returns the n-th (1-based) Socket Mode connection.
func (f *fakeSlack) waitConn(n int) *fakeConn {
	f.t.Helper()
	f.waitFor(fmt.Sprintf("socket connection %d", n), func() bool { return len(f.conns) >= n })
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns[n-1]
}

func (f *fakeSlack) holdMethod(method string) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := make(chan struct{})
	f.gate[method] = g
	var once sync.Once
	return func() { once.Do(func() { close(g) }) }
}

func (f *fakeSlack) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	form := map[string]string{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if err := r.ParseForm(); err == nil {
			for k, v := range r.PostForm {
				form[k] = v[0]
			}
		}
	}
	auth := r.Header.Get("Authorization")
	if auth == "" && form["token"] != "" {
		auth = "Bearer " + form["token"]
	}

	f.mu.Lock()
	if f.limitOnce[method] {
		delete(f.limitOnce, method)
		f.calls = append(f.calls, apiCall{Method: method + ":429", Auth: auth, Form: form})
		f.notify()
		f.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if f.down[method] > 0 {
		f.down[method]--
		f.calls = append(f.calls, apiCall{Method: method + ":503", Auth: auth, Form: form})
		f.notify()
		f.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	gate := f.gate[method]
	f.mu.Unlock()
	if gate != nil {
		// Record that the call arrived, then hold it.
		f.mu.Lock()
		f.calls = append(f.calls, apiCall{Method: method + ":held", Auth: auth, Form: form})
		f.notify()
		f.mu.Unlock()
		<-gate
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	call := apiCall{Method: method, Auth: auth, Form: form}
	if method == "chat.postMessage" || method == "chat.update" {
		call.Pings = slackPings(form)
	}
	f.calls = append(f.calls, call)
	f.notify()

	wantToken := testBotToken
	if method == "apps.connections.open" {
		wantToken = testAppToken
	}
	if auth != "Bearer "+wantToken {
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	if e := f.fail[method]; e != "" {
		writeJSON(w, map[string]any{"ok": false, "error": e})
		return
	}
	if method == "chat.postMessage" || method == "chat.update" {
		if e := checkBlocks(form["blocks"]); e != "" {
			writeJSON(w, map[string]any{"ok": false, "error": "invalid_blocks", "errors": []string{e}})
			return
		}
	}
	switch method {
	case "auth.test":
		writeJSON(w, map[string]any{"ok": true, "user_id": testBotUser, "bot_id": testBotID, "team": "Test", "team_id": "T1", "user": "ccbot"})
	case "apps.connections.open":
		writeJSON(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws"})
	case "chat.postMessage":
		f.ts++
		writeJSON(w, map[string]any{"ok": true, "channel": form["channel"], "ts": fmt.Sprintf("1700000100.%06d", f.ts)})
	case "chat.update":
		writeJSON(w, map[string]any{"ok": true, "channel": form["channel"], "ts": form["ts"], "text": form["text"]})
	case "reactions.add", "reactions.remove":
		key := form["channel"] + ":" + form["timestamp"] + ":" + form["name"]
		if method == "reactions.add" && f.reactions[key] {
			writeJSON(w, map[string]any{"ok": false, "error": "already_reacted"})
			return
		}
		if method == "reactions.remove" && !f.reactions[key] {
			writeJSON(w, map[string]any{"ok": false, "error": "no_reaction"})
			return
		}
		f.reactions[key] = method == "reactions.add"
		writeJSON(w, map[string]any{"ok": true})
	case "users.info":
		id := form["user"]
		writeJSON(w, map[string]any{"ok": true, "user": map[string]any{
			"id": id, "name": strings.ToLower(id), "real_name": "Real " + id,
			"profile": map[string]any{"display_name": "Display " + id},
		}})
	default:
		writeJSON(w, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeSlack) serveFile(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.downloads = append(f.downloads, r.Header.Get("Authorization"))
	body, ok := f.files[r.URL.Path]
	f.notify()
	f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+testBotToken {
		// What Slack does without a valid token: a sign-in page.
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>sign in</html>"))
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write([]byte(body))
}

// fakeConn is one Socket Mode websocket.
type fakeConn struct {
	f    *fakeSlack
	ws   *websocket.Conn
	wmu  sync.Mutex // serializes writes
	done chan struct{}
	once sync.Once
}

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com; accept any origin.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (f *fakeSlack) serveWS(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &fakeConn{f: f, ws: ws, done: make(chan struct{})}
	if err := c.send(map[string]any{"type": "hello", "num_connections": 1, "connection_info": map[string]any{"app_id": "A1"}}); err != nil {
		return
	}
	f.mu.Lock()
	f.conns = append(f.conns, c)
	f.notify()
	f.mu.Unlock()

	// Slack pings; without pings the client assumes a dead link and redials.
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			c.wmu.Lock()
			err := ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
			c.wmu.Unlock()
			if err != nil {
				return
			}
			select {
			case <-tick.C:
			case <-c.done:
				return
			}
		}
	}()
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			c.close()
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(data, &ack) == nil && ack.EnvelopeID != "" {
			f.mu.Lock()
			f.acks = append(f.acks, ack.EnvelopeID)
			f.notify()
			f.mu.Unlock()
		}
	}
}

func (c *fakeConn) send(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteJSON(v)
}

// close drops the connection without a goodbye, as a network failure would.
func (c *fakeConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

// eventEnvelope wraps an Events API event as Socket Mode delivers it.
func eventEnvelope(envelopeID, eventID string, retry int, event map[string]any) map[string]any {
	return map[string]any{
		"envelope_id":              envelopeID,
		"type":                     "events_api",
		"accepts_response_payload": false,
		"retry_attempt":            retry,
		"retry_reason":             map[bool]string{true: "timeout", false: ""}[retry > 0],
		"payload": map[string]any{
			"token":      "verification",
			"team_id":    "T1",
			"api_app_id": "A1",
			"type":       "event_callback",
			"event_id":   eventID,
			"event_time": 1700000000,
			"event":      event,
		},
	}
}

// msgEvent builds a message event; extra fields override or add.
func msgEvent(channel, ts, user, text string, extra map[string]any) map[string]any {
	ev := map[string]any{
		"type":         "message",
		"channel":      channel,
		"channel_type": "channel",
		"user":         user,
		"text":         text,
		"ts":           ts,
		"event_ts":     ts,
	}
	for k, v := range extra {
		if v == nil {
			delete(ev, k)
			continue
		}
		ev[k] = v
	}
	return ev
}

// checkBlocks enforces the Block Kit limits Slack answers invalid_blocks
// to: 50 blocks a message, 3,000 characters a section or context text,
// 2,000 a button value.
func checkBlocks(raw string) string {
	if raw == "" {
		return ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Text  json.RawMessage `json:"text"`
			Value string          `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return "blocks are not a JSON array: " + err.Error()
	}
	if len(blocks) > 50 {
		return fmt.Sprintf("%d blocks, more than 50", len(blocks))
	}
	for i, b := range blocks {
		if b.Text != nil && utf8.RuneCountInString(b.Text.Text) > 3000 {
			return fmt.Sprintf("block %d: text over 3000 characters", i)
		}
		for _, e := range b.Elements {
			if len(e.Value) > 2000 {
				return fmt.Sprintf("block %d: button value over 2000 characters", i)
			}
			var t struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(e.Text, &t.Text) != nil {
				_ = json.Unmarshal(e.Text, &t)
			}
			if utf8.RuneCountInString(t.Text) > 3000 {
				return fmt.Sprintf("block %d: element text over 3000 characters", i)
			}
		}
	}
	return ""
}

var (
	// slackControlRE is a control sequence in message text: a special
	// mention (<!here>, <!channel>, <!everyone>, <!subteam^S1>, <!date…>),
	// a user mention (<@U1>) or a channel link (<#C1>).
	slackControlRE = regexp.MustCompile(`<[!@#][^<>]*>`)
	// slackNameRE is what Slack itself turns into a mention when asked to
	// find names (link_names, or a block text that is not verbatim).
	slackNameRE = regexp.MustCompile(`(?:^|[^\w])@(channel|here|everyone|[a-z0-9][a-z0-9._-]*)`)
)

// slackPings lists what Slack would make into mentions or channel links in
// a chat.postMessage or chat.update: control sequences in the text and in
// the blocks' text, and, where Slack finds names itself, "@name" words.
func slackPings(form map[string]string) []string {
	var out []string
	scan := func(text string, findNames bool) {
		out = append(out, slackControlRE.FindAllString(text, -1)...)
		if findNames {
			for _, m := range slackNameRE.FindAllStringSubmatch(text, -1) {
				out = append(out, "@"+m[1])
			}
		}
	}
	linkNames := form["link_names"] == "1" || form["link_names"] == "true"
	scan(form["text"], linkNames)
	var blocks []struct {
		Text *struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Verbatim bool   `json:"verbatim"`
		} `json:"text"`
		Elements []json.RawMessage `json:"elements"`
	}
	_ = json.Unmarshal([]byte(form["blocks"]), &blocks)
	for _, b := range blocks {
		if b.Text != nil {
			scan(b.Text.Text, linkNames || (b.Text.Type == "mrkdwn" && !b.Text.Verbatim))
		}
		for _, raw := range b.Elements {
			var e struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				Verbatim bool   `json:"verbatim"`
			}
			if json.Unmarshal(raw, &e) == nil && e.Type == "mrkdwn" {
				scan(e.Text, linkNames || !e.Verbatim)
			}
		}
	}
	return out
}
