package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/gorilla/websocket"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

const (
	testToken = "TEST.discord.secret"
	botID     = "900"
)

// fakeDiscord is a Discord REST API and gateway on 127.0.0.1, speaking the
// wire protocol discordgo uses: JSON REST under /api/v9 with the bot token
// in Authorization, and a JSON websocket gateway (HELLO, IDENTIFY/RESUME,
// READY/RESUMED, heartbeats, dispatches).
type fakeDiscord struct {
	t   *testing.T
	srv *httptest.Server

	rest    chan restCall // every REST request, in order
	gateway chan gwFrame  // every IDENTIFY and RESUME received

	mu        sync.Mutex // guards the fields below
	conn      *websocket.Conn
	writeMu   *sync.Mutex
	seq       int
	nextID    int
	overrides map[string][]fakeResp // "METHOD /path" -> answers to give first
	channels  map[string]string     // channel id -> JSON of GET /channels/{id}
	files     map[string]string
	connected chan struct{} // signalled after each READY or RESUMED
	closeCode int           // when set, the gateway closes with it after IDENTIFY
	silent    int           // this many connections get no HELLO
	noAck     int           // this many connections get no heartbeat ACKs

	heartbeats chan struct{} // every heartbeat received
}

type restCall struct {
	Method string
	Path   string
	Body   map[string]any
	// Pings are who Discord would notify for a message posted or edited
	// (see discordPings).
	Pings []string
}

type gwFrame struct {
	Op int
	D  map[string]any
}

type fakeResp struct {
	status int
	body   string
}

func newFakeDiscord(t *testing.T) *fakeDiscord {
	f := &fakeDiscord{
		t:          t,
		rest:       make(chan restCall, 1000),
		gateway:    make(chan gwFrame, 100),
		nextID:     5000,
		overrides:  make(map[string][]fakeResp),
		channels:   make(map[string]string),
		files:      make(map[string]string),
		connected:  make(chan struct{}, 10),
		heartbeats: make(chan struct{}, 1000),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/gw/", f.serveGateway) // discordgo adds a trailing slash
	mux.HandleFunc("/files/", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		c, ok := f.files[r.URL.Path]
		f.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, c)
	})
	mux.HandleFunc("/api/v9/", f.serveREST)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.mu.Lock()
		if f.conn != nil {
			f.conn.Close()
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

func (f *fakeDiscord) override(key string, status int, body string) {
	f.mu.Lock()
	f.overrides[key] = append(f.overrides[key], fakeResp{status, body})
	f.mu.Unlock()
}

func (f *fakeDiscord) serveREST(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v9")
	if r.Header.Get("Authorization") != "Bot "+testToken {
		writeJSON(w, 401, `{"message":"401: Unauthorized","code":0}`)
		return
	}
	var body map[string]any
	if b, _ := io.ReadAll(r.Body); len(b) > 0 {
		if err := json.Unmarshal(b, &body); err != nil {
			f.t.Errorf("fake discord: %s %s: bad JSON: %v", r.Method, path, err)
		}
	}
	call := restCall{Method: r.Method, Path: path, Body: body}
	if (r.Method == "POST" || r.Method == "PATCH") && strings.Contains(path, "/messages") {
		call.Pings = discordPings(body)
	}
	select {
	case f.rest <- call:
	default:
		f.t.Errorf("fake discord: REST call log full at %s %s (a retry loop?)", r.Method, path)
	}

	key := r.Method + " " + path
	f.mu.Lock()
	if q := f.overrides[key]; len(q) > 0 {
		f.overrides[key] = q[1:]
		f.mu.Unlock()
		writeJSON(w, q[0].status, q[0].body)
		return
	}
	f.mu.Unlock()

	parts := strings.Split(strings.Trim(path, "/"), "/")
	if content, _ := body["content"].(string); len(utf16.Encode([]rune(content))) > 2000 && (r.Method == "POST" || r.Method == "PATCH") {
		// Discord's answer to content over its limit.
		writeJSON(w, 400, `{"message":"Invalid Form Body","code":50035,"errors":{"content":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH","message":"Must be 2000 or fewer in length."}]}}}`)
		return
	}
	wsURL := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/gw"
	switch {
	case path == "/gateway/bot":
		writeJSON(w, 200, fmt.Sprintf(`{"url":%q,"shards":1,"session_start_limit":{"total":1000,"remaining":999,"reset_after":0,"max_concurrency":1}}`, wsURL))
	case r.Method == "GET" && len(parts) == 2 && parts[0] == "channels":
		f.mu.Lock()
		c, ok := f.channels[parts[1]]
		f.mu.Unlock()
		if !ok {
			writeJSON(w, 404, `{"message":"Unknown Channel","code":10003}`)
			return
		}
		writeJSON(w, 200, c)
	case r.Method == "POST" && len(parts) == 3 && parts[2] == "messages":
		f.mu.Lock()
		f.nextID++
		id := f.nextID
		f.mu.Unlock()
		content, _ := body["content"].(string)
		writeJSON(w, 200, fmt.Sprintf(`{"id":"%d","channel_id":%q,"content":%q,"type":0}`, id, parts[1], content))
	case r.Method == "PATCH" && len(parts) == 4 && parts[2] == "messages":
		content, _ := body["content"].(string)
		writeJSON(w, 200, fmt.Sprintf(`{"id":%q,"channel_id":%q,"content":%q,"type":0}`, parts[3], parts[1], content))
	case r.Method == "POST" && len(parts) == 5 && parts[4] == "threads":
		writeJSON(w, 201, fmt.Sprintf(`{"id":%q,"type":11,"parent_id":%q,"name":"t"}`, parts[3], parts[1]))
	case r.Method == "POST" && len(parts) == 3 && parts[2] == "typing":
		w.WriteHeader(204)
	case r.Method == "POST" && parts[0] == "interactions":
		w.WriteHeader(204)
	case (r.Method == "PUT" || r.Method == "DELETE") && strings.Contains(path, "/reactions/"):
		w.WriteHeader(204)
	default:
		writeJSON(w, 404, `{"message":"404: Not Found","code":0}`)
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

var upgrader = websocket.Upgrader{}

func (f *fakeDiscord) serveGateway(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		f.t.Errorf("fake gateway upgrade: %v", err)
		return
	}
	wmu := &sync.Mutex{}
	write := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		return c.WriteJSON(v)
	}
	f.mu.Lock()
	f.conn, f.writeMu = c, wmu
	f.mu.Unlock()
	defer c.Close()

	f.mu.Lock()
	silent := f.silent > 0
	if silent {
		f.silent--
	}
	ack := f.noAck == 0
	if !ack {
		f.noAck--
	}
	f.mu.Unlock()
	if silent {
		_, _, _ = c.ReadMessage() // until the client gives up
		return
	}
	if write(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 100}}) != nil {
		return
	}
	for {
		var fr struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := c.ReadJSON(&fr); err != nil {
			return
		}
		switch fr.Op {
		case 1:
			select {
			case f.heartbeats <- struct{}{}:
			default:
			}
			if ack {
				_ = write(map[string]any{"op": 11})
			}
		case 2, 6:
			var d map[string]any
			_ = json.Unmarshal(fr.D, &d)
			f.gateway <- gwFrame{Op: fr.Op, D: d}
			f.mu.Lock()
			code := f.closeCode
			f.mu.Unlock()
			if code != 0 {
				wmu.Lock()
				_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, "Disallowed intent(s)."))
				wmu.Unlock()
				return
			}
			if fr.Op == 2 {
				f.mu.Lock()
				f.seq = 1
				f.mu.Unlock()
				_ = write(map[string]any{"op": 0, "t": "READY", "s": 1, "d": map[string]any{
					"v": 9, "session_id": "sess-1", "user": map[string]any{"id": botID, "username": "ccbot", "bot": true}, "guilds": []any{},
				}})
			} else {
				f.mu.Lock()
				f.seq++
				s := f.seq
				f.mu.Unlock()
				_ = write(map[string]any{"op": 0, "t": "RESUMED", "s": s, "d": map[string]any{}})
			}
			f.connected <- struct{}{}
		}
	}
}

// dispatch sends a gateway event to the connected client.
func (f *fakeDiscord) dispatch(typ string, d any) {
	f.t.Helper()
	f.mu.Lock()
	f.seq++
	s := f.seq
	c, wmu := f.conn, f.writeMu
	f.mu.Unlock()
	if c == nil {
		f.t.Fatal("no gateway connection")
	}
	wmu.Lock()
	defer wmu.Unlock()
	if err := c.WriteJSON(map[string]any{"op": 0, "t": typ, "s": s, "d": d}); err != nil {
		f.t.Fatalf("dispatch %s: %v", typ, err)
	}
}

// drop cuts the gateway connection without a close frame, as a network
// failure would.
func (f *fakeDiscord) drop() {
	f.mu.Lock()
	c := f.conn
	f.conn = nil
	f.mu.Unlock()
	if c != nil {
		c.NetConn().Close()
	}
}

func (f *fakeDiscord) waitConnected() {
	f.t.Helper()
	select {
	case <-f.connected:
	case <-time.After(15 * time.Second):
		f.t.Fatal("client never completed the gateway handshake")
	}
}

func (f *fakeDiscord) frame() gwFrame {
	f.t.Helper()
	select {
	case fr := <-f.gateway:
		return fr
	case <-time.After(15 * time.Second):
		f.t.Fatal("no IDENTIFY or RESUME")
	}
	return gwFrame{}
}

// next returns the next REST call matching method and path prefix.
func (f *fakeDiscord) next(method, pathPrefix string) restCall {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-f.rest:
			if c.Method == method && strings.HasPrefix(c.Path, pathPrefix) {
				return c
			}
		case <-deadline:
			f.t.Fatalf("no %s %s call", method, pathPrefix)
		}
	}
}

func newTestAdapter(t *testing.T, f *fakeDiscord, mod func(*Config)) *Adapter {
	t.Helper()
	cfg := Config{Name: "dc-test", Token: testToken, APIURL: f.srv.URL}
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a.backoffMin = time.Millisecond
	a.backoffMax = 5 * time.Millisecond
	a.requestTimeout = 10 * time.Second
	return a
}

// runConnected runs a until the test ends (checking Run returns nil) and
// waits for the first handshake.
func runConnected(t *testing.T, f *fakeDiscord, a *Adapter, h platform.Handler) {
	t.Helper()
	platformtest.Run(t, 15*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
	f.waitConnected()
}

func msgEvent(id, channel, guild, authorID, content string, extra map[string]any) map[string]any {
	m := map[string]any{
		"id": id, "channel_id": channel, "content": content, "type": 0,
		"timestamp": "2026-11-30T12:00:00Z",
		"author":    map[string]any{"id": authorID, "username": "user" + authorID},
		"mentions":  []any{},
	}
	if guild != "" {
		m["guild_id"] = guild
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

var (
	discordEveryoneRE = regexp.MustCompile(`@(everyone|here)`)
	discordUserRE     = regexp.MustCompile(`<@!?(\d+)>`)
	discordRoleRE     = regexp.MustCompile(`<@&(\d+)>`)
)

// discordPings lists who Discord notifies for a message body, by its
// allowed_mentions rules: without the field, every mention in the content
// pings; with it, only the types its parse list names, the users and roles
// it lists, and the author of a replied-to message when replied_user is set.
func discordPings(body map[string]any) []string {
	content, _ := body["content"].(string)
	am, present := body["allowed_mentions"].(map[string]any)
	parse := map[string]bool{"everyone": !present, "users": !present, "roles": !present}
	listed := map[string]bool{}
	if present {
		ps, _ := am["parse"].([]any)
		for _, p := range ps {
			parse[fmt.Sprint(p)] = true
		}
		for _, key := range []string{"users", "roles"} {
			ids, _ := am[key].([]any)
			for _, id := range ids {
				listed[fmt.Sprint(id)] = true
			}
		}
	}
	var out []string
	if parse["everyone"] {
		out = append(out, discordEveryoneRE.FindAllString(content, -1)...)
	}
	for _, m := range discordUserRE.FindAllStringSubmatch(content, -1) {
		if parse["users"] || listed[m[1]] {
			out = append(out, "user "+m[1])
		}
	}
	for _, m := range discordRoleRE.FindAllStringSubmatch(content, -1) {
		if parse["roles"] || listed[m[1]] {
			out = append(out, "role "+m[1])
		}
	}
	if body["message_reference"] != nil && (!present || am["replied_user"] == true) {
		out = append(out, "replied user")
	}
	return out
}
