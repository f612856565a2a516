package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

const testToken = "123456:TEST-secret-token"

// fakeAPI is a Bot API server on 127.0.0.1 speaking the wire protocol the
// real library uses: form-encoded POSTs to /bot<token>/<method>, JSON
// answers {"ok":...}, and file downloads under /file/bot<token>/.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	calls chan apiCall // every request, in order

	mu        sync.Mutex // guards the fields below
	batches   [][]string // getUpdates answers still to give
	overrides map[string][]fakeAnswer
	nextMsgID int
	files     map[string]string // file_path -> content

	fed chan struct{} // signals a new batch to a waiting long poll
}

type apiCall struct {
	Method string
	Form   url.Values
	// Text and Mentions are what Telegram makes of a message's text
	// (sendMessage, editMessageText): the text shown, and the users it
	// notifies (see parseMessage).
	Text     string
	Mentions []string
}

type fakeAnswer struct {
	status int
	body   string
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{
		t:         t,
		calls:     make(chan apiCall, 1000),
		overrides: make(map[string][]fakeAnswer),
		nextMsgID: 100,
		files:     make(map[string]string),
		fed:       make(chan struct{}, 1),
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// feed queues one getUpdates answer holding the given raw updates.
func (f *fakeAPI) feed(updates ...string) {
	f.mu.Lock()
	f.batches = append(f.batches, updates)
	f.mu.Unlock()
	select {
	case f.fed <- struct{}{}:
	default:
	}
}

// override makes the next call of method answer status/body instead of the
// default.
func (f *fakeAPI) override(method string, status int, body string) {
	f.mu.Lock()
	f.overrides[method] = append(f.overrides[method], fakeAnswer{status, body})
	f.mu.Unlock()
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+testToken+"/"); ok {
		f.mu.Lock()
		content, found := f.files[rest]
		f.mu.Unlock()
		if !found {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(content))
		return
	}
	prefix := "/bot" + testToken + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		writeJSON(w, http.StatusUnauthorized, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, prefix)
	if err := r.ParseForm(); err != nil {
		f.t.Errorf("fake API: bad form: %v", err)
	}
	call := apiCall{Method: method, Form: r.PostForm}
	var problem string
	if method == "sendMessage" || method == "editMessageText" {
		call.Text, call.Mentions, problem = parseMessage(r.PostForm.Get("text"), r.PostForm.Get("parse_mode"))
	}
	f.calls <- call
	if problem != "" {
		writeJSON(w, 400, fmt.Sprintf(`{"ok":false,"error_code":400,"description":%q}`, "Bad Request: "+problem))
		return
	}

	f.mu.Lock()
	if q := f.overrides[method]; len(q) > 0 {
		f.overrides[method] = q[1:]
		f.mu.Unlock()
		writeJSON(w, q[0].status, q[0].body)
		return
	}
	f.mu.Unlock()

	switch method {
	case "getMe":
		writeJSON(w, 200, `{"ok":true,"result":{"id":999,"is_bot":true,"first_name":"CC","username":"cc_bot"}}`)
	case "getUpdates":
		f.longPoll(w, r)
	case "sendMessage":
		f.mu.Lock()
		f.nextMsgID++
		id := f.nextMsgID
		f.mu.Unlock()
		chat, _ := strconv.ParseInt(r.PostForm.Get("chat_id"), 10, 64)
		writeJSON(w, 200, fmt.Sprintf(`{"ok":true,"result":{"message_id":%d,"date":1,"chat":{"id":%d,"type":"supergroup"},"text":%q}}`, id, chat, r.PostForm.Get("text")))
	case "editMessageText":
		writeJSON(w, 200, `{"ok":true,"result":true}`)
	case "sendChatAction", "answerCallbackQuery", "setMessageReaction":
		writeJSON(w, 200, `{"ok":true,"result":true}`)
	case "getFile":
		writeJSON(w, 200, fmt.Sprintf(`{"ok":true,"result":{"file_id":%q,"file_unique_id":"u1","file_size":5,"file_path":"documents/file_1.txt"}}`, r.PostForm.Get("file_id")))
	default:
		writeJSON(w, 404, `{"ok":false,"error_code":404,"description":"Not Found: method not found"}`)
	}
}

// longPoll answers the next fed batch, or an empty list when the poll's
// timeout passes, like Telegram does.
func (f *fakeAPI) longPoll(w http.ResponseWriter, r *http.Request) {
	timeout, _ := strconv.Atoi(r.PostForm.Get("timeout"))
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		if len(f.batches) > 0 {
			b := f.batches[0]
			f.batches = f.batches[1:]
			f.mu.Unlock()
			writeJSON(w, 200, `{"ok":true,"result":[`+strings.Join(b, ",")+`]}`)
			return
		}
		f.mu.Unlock()
		select {
		case <-f.fed:
		case <-deadline.C:
			writeJSON(w, 200, `{"ok":true,"result":[]}`)
			return
		case <-r.Context().Done():
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// next returns the next call of method, skipping others (getUpdates polls
// in particular), or fails the test after a generous deadline.
func (f *fakeAPI) next(method string) apiCall {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-f.calls:
			if c.Method == method {
				return c
			}
		case <-deadline:
			f.t.Fatalf("no %s call", method)
		}
	}
}

// newTestAdapter builds an adapter against f with fast retries.
func newTestAdapter(t *testing.T, f *fakeAPI, mod func(*Config)) *Adapter {
	t.Helper()
	cfg := Config{Name: "tg-test", Token: testToken, APIURL: f.srv.URL, PollTimeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a.retryAfterUnit = time.Millisecond
	a.backoffMin = time.Millisecond
	a.backoffMax = 5 * time.Millisecond
	a.requestTimeout = 10 * time.Second
	return a
}

// runAdapter runs a until the test ends and checks that Run returns nil.
func runAdapter(t *testing.T, a *Adapter, h platform.Handler) {
	t.Helper()
	platformtest.Run(t, 10*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
}

// update builds a raw message update.
func update(id int, msg map[string]any) string {
	b, _ := json.Marshal(map[string]any{"update_id": id, "message": msg})
	return string(b)
}

func user(id int64, name string, bot bool) map[string]any {
	return map[string]any{"id": id, "is_bot": bot, "first_name": name, "username": name}
}

var (
	tgTagRE     = regexp.MustCompile(`^<(/?)([a-z-]+)((?:\s+[a-z-]+="[^"]*")*)\s*>`)
	tgHrefRE    = regexp.MustCompile(`href="([^"]*)"`)
	tgMentionRE = regexp.MustCompile(`(?:^|[^\w@])@(\w+)`)
	tgEntityRE  = regexp.MustCompile(`^&(lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);`)
	tgTags      = map[string]bool{"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true,
		"strike": true, "del": true, "a": true, "code": true, "pre": true, "blockquote": true, "tg-spoiler": true, "span": true}
)

// parseMessage reads a message's text as Telegram does: with parse_mode
// HTML, only its tags, balanced, and its four named entities; at most
// 4,096 UTF-16 units of text. It returns the text and the users the
// message would notify: an <a href="tg://user?id=…"> (a text mention) and
// an @username outside code (a mention, found by Telegram itself in any
// text). problem is Telegram's refusal, when it refuses.
func parseMessage(text, mode string) (shown string, mentions []string, problem string) {
	var b strings.Builder
	var stack []string
	code := 0 // depth inside code and pre, where Telegram finds no mentions
	plain := func(s string) {
		if code == 0 {
			for _, m := range tgMentionRE.FindAllStringSubmatch(s, -1) {
				mentions = append(mentions, "@"+m[1])
			}
		}
		b.WriteString(s)
	}
	if mode != "HTML" {
		plain(text)
	} else {
		var run strings.Builder
		flush := func() { plain(run.String()); run.Reset() }
		for i := 0; i < len(text); {
			switch text[i] {
			case '<':
				m := tgTagRE.FindStringSubmatch(text[i:])
				if m == nil || !tgTags[m[2]] {
					return "", nil, "can't parse entities: unsupported start tag at byte offset " + strconv.Itoa(i)
				}
				flush()
				if m[1] == "/" {
					if len(stack) == 0 || stack[len(stack)-1] != m[2] {
						return "", nil, "can't parse entities: unmatched end tag at byte offset " + strconv.Itoa(i)
					}
					stack = stack[:len(stack)-1]
					if m[2] == "code" || m[2] == "pre" {
						code--
					}
				} else {
					stack = append(stack, m[2])
					if m[2] == "code" || m[2] == "pre" {
						code++
					}
					if h := tgHrefRE.FindStringSubmatch(m[3]); m[2] == "a" && h != nil && strings.HasPrefix(strings.ToLower(h[1]), "tg://user") {
						mentions = append(mentions, h[1])
					}
				}
				i += len(m[0])
			case '&':
				m := tgEntityRE.FindStringSubmatch(text[i:])
				if m == nil {
					return "", nil, "can't parse entities: unsupported entity at byte offset " + strconv.Itoa(i)
				}
				run.WriteString(html.UnescapeString(m[0]))
				i += len(m[0])
			default:
				run.WriteByte(text[i])
				i++
			}
		}
		flush()
		if len(stack) > 0 {
			return "", nil, "can't parse entities: can't find end tag corresponding to start tag " + stack[len(stack)-1]
		}
	}
	shown = b.String()
	if n := len(utf16.Encode([]rune(shown))); n > 4096 {
		return "", nil, "message is too long"
	}
	return shown, mentions, ""
}
