package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

func TestRoutingAndMentions(t *testing.T) {
	e := startEnv(t)
	tests := []struct {
		name       string
		event      map[string]any
		wantThread string
		wantDM     bool
		wantMent   bool
		wantText   string
	}{
		{
			name:       "top-level channel message starts a thread",
			event:      fakeslack.MsgEvent("C1", "1700000001.000100", "U1", "hello", nil),
			wantThread: "1700000001.000100", wantText: "hello",
		},
		{
			name:       "reply in a thread continues it",
			event:      fakeslack.MsgEvent("C1", "1700000002.000100", "U1", "more", map[string]any{"thread_ts": "1700000001.000100"}),
			wantThread: "1700000001.000100", wantText: "more",
		},
		{
			name:       "thread reply also sent to the channel stays in the thread",
			event:      fakeslack.MsgEvent("C1", "1700000002.000200", "U1", "bcast", map[string]any{"thread_ts": "1700000001.000100", "subtype": "thread_broadcast"}),
			wantThread: "1700000001.000100", wantText: "bcast",
		},
		{
			name:   "direct message is one conversation",
			event:  fakeslack.MsgEvent("D1", "1700000003.000100", "U1", "hi bot", map[string]any{"channel_type": "im"}),
			wantDM: true, wantThread: "", wantText: "hi bot",
		},
		{
			name:   "threaded direct message is its own conversation",
			event:  fakeslack.MsgEvent("D1", "1700000004.000100", "U1", "in thread", map[string]any{"channel_type": "im", "thread_ts": "1700000003.000100"}),
			wantDM: true, wantThread: "1700000003.000100", wantText: "in thread",
		},
		{
			name:       "group DM is a channel, not a DM",
			event:      fakeslack.MsgEvent("G1", "1700000005.000100", "U1", "group", map[string]any{"channel_type": "mpim"}),
			wantThread: "1700000005.000100", wantText: "group",
		},
		{
			name:       "message mentioning the bot is Mentioned, mention stripped",
			event:      fakeslack.MsgEvent("C1", "1700000006.000100", "U1", "<@UBOT> run the tests", nil),
			wantThread: "1700000006.000100", wantMent: true, wantText: "run the tests",
		},
		{
			name:       "app_mention is Mentioned",
			event:      fakeslack.MsgEvent("C2", "1700000007.000100", "U1", "hey <@UBOT|ccbot> look", map[string]any{"type": "app_mention", "channel_type": nil}),
			wantThread: "1700000007.000100", wantMent: true, wantText: "hey look",
		},
		{
			name:       "reply in a thread the bot started counts as a mention",
			event:      fakeslack.MsgEvent("C1", "1700000008.000100", "U1", "thanks", map[string]any{"thread_ts": "1700000000.000001", "parent_user_id": "UBOT"}),
			wantThread: "1700000000.000001", wantMent: true, wantText: "thanks",
		},
		{
			name:       "other users' mentions stay, escapes are undone",
			event:      fakeslack.MsgEvent("C1", "1700000009.000100", "U1", "ask <@U2> if a &lt; b &amp;&amp; <https://x.io/a?b=1&amp;c=2|the doc>", nil),
			wantThread: "1700000009.000100", wantText: "ask <@U2> if a < b && the doc (https://x.io/a?b=1&c=2)",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			e.deliver("EvRoute"+string(rune('A'+i)), 0, tt.event)
			m := e.rec.Message(t)
			ch, ts := tt.event["channel"].(string), tt.event["ts"].(string)
			want := platform.Target{Platform: "slack-test", Channel: ch, Thread: tt.wantThread, MessageID: ts}
			if m.Target != want {
				t.Errorf("Target = %+v, want %+v", m.Target, want)
			}
			if m.ID != ch+":"+ts {
				t.Errorf("ID = %q, want %q", m.ID, ch+":"+ts)
			}
			if m.IsDM != tt.wantDM || m.Mentioned != tt.wantMent {
				t.Errorf("IsDM, Mentioned = %v, %v; want %v, %v", m.IsDM, m.Mentioned, tt.wantDM, tt.wantMent)
			}
			if m.Text != tt.wantText {
				t.Errorf("Text = %q, want %q", m.Text, tt.wantText)
			}
			// The event names its sender by id; the engine reads the
			// name later (UserName), never before the ack.
			if m.UserID != "U1" || m.UserName != "" || m.IsBot {
				t.Errorf("UserID, UserName, IsBot = %q, %q, %v; want U1 and no name", m.UserID, m.UserName, m.IsBot)
			}
			if sec := ts[:strings.Index(ts, ".")]; m.Received.UTC().Format("20060102") != "20231114" || m.Received.Unix() < 1700000000 || sec != strconv.FormatInt(m.Received.Unix(), 10) {
				t.Errorf("Received = %v, want the time of ts %s", m.Received, ts)
			}
			if m.Seq != tsSeq(ts) || m.Seq == 0 {
				t.Errorf("Seq = %d, want the ts %s in microseconds", m.Seq, ts)
			}
		})
	}
	if n := len(e.f.Calls("users.info")); n != 0 {
		t.Errorf("users.info called %d times before the handler, want none", n)
	}
}

// TestCopiesKeepTheirID: a redelivery and both copies of a mention
// (message and app_mention, in either order) reach the engine with one id,
// on which its one duplicate check catches every copy after the first.
func TestCopiesKeepTheirID(t *testing.T) {
	e := startEnv(t)
	mention := "<@UBOT> deploy"

	ev := fakeslack.MsgEvent("C1", "1700000010.000100", "U1", "once", nil)
	e.deliver("EvRetry", 0, ev)
	e.deliver("EvRetry", 1, ev)
	for range 2 {
		if m := e.rec.Message(t); m.Text != "once" || m.ID != "C1:1700000010.000100" {
			t.Fatalf("got %+v", m)
		}
	}
	e.sentinel("1700000010.900000")

	orders := []struct {
		name  string
		first string
	}{
		{"message first", "message"},
		{"app_mention first", "app_mention"},
	}
	for i, o := range orders {
		t.Run(o.name, func(t *testing.T) {
			e.t = t
			ts := "17000000" + string(rune('2'+i)) + "0.000100"
			msg := fakeslack.MsgEvent("C1", ts, "U1", mention, nil)
			app := fakeslack.MsgEvent("C1", ts, "U1", mention, map[string]any{"type": "app_mention", "channel_type": nil})
			pair := []map[string]any{msg, app}
			if o.first == "app_mention" {
				pair = []map[string]any{app, msg}
			}
			e.deliver("EvPairA"+ts, 0, pair[0])
			e.deliver("EvPairB"+ts, 0, pair[1])
			for range 2 {
				if m := e.rec.Message(t); !m.Mentioned || m.Text != "deploy" || m.ID != "C1:"+ts {
					t.Errorf("got %+v, want the mentioned message C1:%s", m, ts)
				}
			}
			e.sentinel(ts + "9")
		})
	}
}

func TestFiltering(t *testing.T) {
	e := startEnv(t)
	dropped := []struct {
		name  string
		extra map[string]any
		user  string
	}{
		{"own message by user id", nil, "UBOT"},
		{"own message by bot id", map[string]any{"bot_id": "BBOT"}, "UOTHER"},
		{"other bot", map[string]any{"bot_id": "B2"}, "U9"},
		{"bot_message subtype", map[string]any{"subtype": "bot_message", "bot_id": "B2"}, ""},
		{"edit", map[string]any{"subtype": "message_changed"}, "U1"},
		{"delete", map[string]any{"subtype": "message_deleted"}, "U1"},
		{"join", map[string]any{"subtype": "channel_join"}, "U1"},
		{"topic", map[string]any{"subtype": "channel_topic"}, "U1"},
		{"hidden", map[string]any{"hidden": true}, "U1"},
		{"not a message", map[string]any{"type": "reaction_added"}, "U1"},
	}
	for i, d := range dropped {
		e.deliver("EvDrop"+string(rune('A'+i)), 0, fakeslack.MsgEvent("C1", "1700000100.00010"+string(rune('0'+i)), d.user, d.name, d.extra))
	}
	// Everything above was acked (deliver waits for it) and none reached
	// the engine: the next message is the sentinel.
	e.sentinel("1700000199.000000")

	// A file_share message is a user message.
	e.deliver("EvFile", 0, fakeslack.MsgEvent("C1", "1700000200.000100", "U1", "see file", map[string]any{
		"subtype": "file_share",
		"files":   []any{e.f.AddFile("F1", "a.txt", "text/plain", "abc").Object()},
	}))
	m := e.rec.Message(t)
	if m.Text != "see file" || len(m.Attachments) != 1 {
		t.Fatalf("file_share message = %+v", m)
	}
}

func TestAcksEveryEnvelope(t *testing.T) {
	e := startEnv(t)
	envelopes := map[string]map[string]any{
		"env-slash":        {"envelope_id": "env-slash", "type": "slash_commands", "payload": map[string]any{"command": "/x", "text": "y"}},
		"env-unknown-type": {"envelope_id": "env-unknown-type", "type": "something_new", "payload": map[string]any{}},
		"env-unparsable-event": {"envelope_id": "env-unparsable-event", "type": "events_api",
			"payload": map[string]any{"type": "event_callback", "event_id": "EvOdd", "event": map[string]any{"type": "message", "channel": 5}}},
		"env-view": {"envelope_id": "env-view", "type": "interactive", "payload": map[string]any{"type": "view_closed", "user": map[string]any{"id": "U1"}}},
	}
	for id, env := range envelopes {
		if err := e.conn.Send(env); err != nil {
			t.Fatal(err)
		}
		e.f.WaitAck(t, id)
	}
	e.sentinel("1700000300.000000")
}

func TestFileDownload(t *testing.T) {
	e := startEnv(t)
	report := e.f.AddFile("F1", "report.txt", "text/plain", "quarterly numbers")
	e.deliver("EvFile1", 0, fakeslack.MsgEvent("D1", "1700000400.000100", "U1", "", map[string]any{
		"subtype": "file_share", "channel_type": "im",
		"files": []any{
			report.Object(),
			map[string]any{"id": "F2", "name": "gone.txt", "mode": "tombstone"},
			map[string]any{"id": "F3", "name": "evil.txt", "mimetype": "text/plain", "url_private_download": "https://attacker.example/steal"},
		},
	}))
	m := e.rec.Message(t)
	if len(m.Attachments) != 2 {
		t.Fatalf("got %d attachments, want 2 (tombstone skipped)", len(m.Attachments))
	}
	att := m.Attachments[0]
	if att.Name != "report.txt" || att.Size != 17 || att.Mime != "text/plain" {
		t.Errorf("attachment = %+v", att)
	}
	rc, err := att.Open(context.Background())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "quarterly numbers" {
		t.Errorf("body = %q", body)
	}
	// A replay after a restart fetches it again from its Ref alone.
	rc, err = e.a.OpenAttachment(context.Background(), platform.Attachment{Name: att.Name, Mime: att.Mime, Ref: att.Ref})
	if err != nil {
		t.Fatalf("OpenAttachment: %v", err)
	}
	body, _ = io.ReadAll(rc)
	rc.Close()
	if string(body) != "quarterly numbers" || strings.Contains(att.Ref, fakeslack.BotToken) {
		t.Errorf("again: body = %q, ref %q", body, att.Ref)
	}
	auth := e.f.Downloads()[0]
	if auth != "Bearer "+fakeslack.BotToken {
		t.Errorf("download Authorization = %q, want the bot token", auth)
	}

	// The token never goes to a host that is not Slack's.
	if _, err := m.Attachments[1].Open(context.Background()); !errors.Is(err, ErrUntrustedFileURL) {
		t.Errorf("Open of a foreign URL = %v, want ErrUntrustedFileURL", err)
	}
	if _, err := e.a.OpenAttachment(context.Background(), m.Attachments[1]); !errors.Is(err, ErrUntrustedFileURL) {
		t.Errorf("OpenAttachment of a foreign URL = %v, want ErrUntrustedFileURL", err)
	}
	if strings.Contains(e.logs.all(), fakeslack.BotToken) {
		t.Error("bot token appears in the logs")
	}
}

func TestFileDownloadSignInPage(t *testing.T) {
	f := fakeslack.New(t)
	a, _, _ := newAdapter(t, testConfig(f))
	a.files.token = "xoxb-wrong"
	rc, err := a.files.open(context.Background(), f.AddFile("F1", "x.bin", "application/octet-stream", "x").URL, "application/octet-stream")
	if err == nil {
		rc.Close()
		t.Fatal("want an error when Slack serves its sign-in page")
	}
	if !strings.Contains(err.Error(), "files:read") || strings.Contains(err.Error(), "xoxb-wrong") {
		t.Errorf("error = %v", err)
	}
}

func TestButtonsToActionAndResolution(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000500.000100"}
	prompt, err := e.a.AskPermission(ctx, to, platform.PermissionPrompt{RequestID: "req-7", Tool: "Bash",
		Text: "**Permission needed**: `Bash`\nCommand:\n```\ngo test ./... && rm -rf <tmp>\n```"})
	if err != nil {
		t.Fatal(err)
	}
	post := e.f.Succeeded("chat.postMessage")[0]
	if post.Form["thread_ts"] != to.Thread || prompt.MessageID == "" || prompt.Thread != to.Thread {
		t.Errorf("prompt posted with %v, returned %+v", post.Form, prompt)
	}
	for _, want := range []string{`"cc_perm_allow"`, `"cc_perm_always"`, `"cc_perm_deny"`, `"value":"req-7"`, "&amp;&amp; rm -rf &lt;tmp&gt;"} {
		if !strings.Contains(unJSON(post.Form["blocks"]), want) {
			t.Errorf("blocks lack %s: %s", want, post.Form["blocks"])
		}
	}
	msg, ok := e.f.Message("C1", prompt.MessageID)
	if !ok {
		t.Fatalf("no prompt message %s in the channel", prompt.MessageID)
	}

	// Each button, pressed on the fake as Slack renders it, comes back as
	// the choice it stands for.
	for _, c := range []struct {
		action string
		want   platform.Choice
	}{{"cc_perm_allow", platform.ChoiceAllow}, {"cc_perm_always", platform.ChoiceAlwaysAllow}, {"cc_perm_deny", platform.ChoiceDeny}} {
		e.f.WaitAck(t, e.f.Press(t, msg, c.action, "U1"))
		got := e.rec.Action(t)
		// The press's id (action_ts, the button, the user): what a
		// cluster's stream dedupes a redelivered press by.
		if !strings.HasSuffix(got.ID, ":"+c.action+":U1") || strings.HasPrefix(got.ID, ":") {
			t.Errorf("action id %q, want <action_ts>:%s:U1", got.ID, c.action)
		}
		got.ID = ""
		want := platform.Action{Target: prompt, UserID: "U1", UserName: "u1", RequestID: "req-7", Choice: c.want}
		if got != want {
			t.Errorf("action = %+v, want %+v", got, want)
		}
	}

	if err := e.a.ResolvePermission(ctx, prompt, "Allowed by ann"); err != nil {
		t.Fatal(err)
	}
	upd := e.f.Succeeded("chat.update")[0]
	if upd.Form["ts"] != prompt.MessageID || upd.Form["channel"] != "C1" {
		t.Errorf("update = %v", upd.Form)
	}
	resolved, _ := e.f.Message("C1", prompt.MessageID)
	if strings.Contains(resolved.Blocks, "cc_perm_allow") || !strings.Contains(resolved.Blocks, "Allowed by ann") ||
		!strings.Contains(resolved.Blocks, "Permission needed") || len(resolved.Edits) != 1 {
		t.Errorf("resolved message = %+v", resolved)
	}
}

func TestReconnectAfterDrop(t *testing.T) {
	e := startEnv(t)
	if got := e.a.Status(); got.State != platform.Connected {
		t.Errorf("Status = %q, want connected", got)
	}
	e.conn.Close()
	e.conn = e.f.WaitConn(t, 2)
	e.logs.waitFor(t, "Slack reconnecting")
	e.deliver("EvAfter", 0, fakeslack.MsgEvent("C1", "1700000600.000100", "U1", "after reconnect", nil))
	if m := e.rec.Message(t); m.Text != "after reconnect" {
		t.Errorf("got %q", m.Text)
	}
	e.logs.waitFor(t, "Slack connected")
	if got := e.a.Status(); got.State != platform.Connected {
		t.Errorf("Status after reconnect = %q, want connected", got)
	}

	// Slack asks clients to reconnect from time to time.
	if err := e.conn.Send(map[string]any{"type": "disconnect", "reason": "refresh_requested"}); err != nil {
		t.Fatal(err)
	}
	e.conn = e.f.WaitConn(t, 3)
	e.deliver("EvAfterRefresh", 0, fakeslack.MsgEvent("C1", "1700000601.000100", "U1", "after refresh", nil))
	if m := e.rec.Message(t); m.Text != "after refresh" {
		t.Errorf("got %q", m.Text)
	}
}

func TestBadTokenStopsRun(t *testing.T) {
	f := fakeslack.New(t)
	f.Fail("auth.test", "invalid_auth")
	a, _, _ := newAdapter(t, testConfig(f))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := a.Run(ctx, platformtest.NewHandler())
	if err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("Run = %v, want invalid_auth", err)
	}
	if s := a.Status(); s.State != platform.BadCredentials || !strings.Contains(s.Detail, "invalid_auth") {
		t.Errorf("Status = %v", s)
	}
	if strings.Contains(err.Error(), fakeslack.BotToken) {
		t.Error("error carries the token")
	}
}

func TestBadAppTokenStopsRun(t *testing.T) {
	f := fakeslack.New(t)
	f.Fail("apps.connections.open", "invalid_auth")
	a, _, _ := newAdapter(t, testConfig(f))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Run(ctx, platformtest.NewHandler()); err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("Run = %v, want invalid_auth", err)
	}
}

func TestUnreachableSlackRetriesUntilCancel(t *testing.T) {
	f := fakeslack.New(t)
	cfg := testConfig(f)
	f.Close() // nothing listens any more
	a, _, sleeps := newAdapter(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, platformtest.NewHandler()) }()
	// Three backoff waits prove it keeps trying, within its bounds.
	for range 3 {
		select {
		case d := <-sleeps:
			if d < cfg.ReconnectMin/2 || d > cfg.ReconnectMax {
				t.Errorf("backoff %v outside [%v, %v]", d, cfg.ReconnectMin/2, cfg.ReconnectMax)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no retry")
		}
	}
	if s := a.Status(); s.State != platform.TransientDisconnect {
		t.Errorf("Status = %q, want reconnecting", s)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel = %v", err)
	}
}

func TestConnectFailuresBackOffWithJitter(t *testing.T) {
	f := fakeslack.New(t)
	f.Down("apps.connections.open", 4)
	cfg := testConfig(f)
	cfg.ReconnectMin, cfg.ReconnectMax = 100*time.Millisecond, 400*time.Millisecond
	e := startEnvWith(t, f, cfg)
	if n := len(f.Calls("apps.connections.open")) - len(f.Succeeded("apps.connections.open")); n != 4 {
		t.Errorf("%d failed attempts, want 4", n)
	}
	// One backoff per failure, growing and capped, each within [d/2, d].
	ceilings := []time.Duration{100, 200, 400, 400}
	for i, ceil := range ceilings {
		ceil *= time.Millisecond
		select {
		case d := <-e.sleeps:
			if d < ceil/2 || d > ceil {
				t.Errorf("backoff %d = %v, want within [%v, %v]", i, d, ceil/2, ceil)
			}
		default:
			t.Fatalf("only %d backoffs recorded, want %d", i, len(ceilings))
		}
	}
	if s := e.a.Status(); s.State != platform.Connected {
		t.Errorf("Status = %q, want connected", s)
	}
	if !strings.Contains(e.logs.all(), "503") {
		t.Errorf("the failure reason is not logged:\n%s", e.logs.all())
	}
	e.deliver("EvAfterOutage", 0, fakeslack.MsgEvent("C1", "1700000700.000100", "U1", "back", nil))
	if m := e.rec.Message(t); m.Text != "back" {
		t.Errorf("got %q", m.Text)
	}
}

func TestStatusDuringOutage(t *testing.T) {
	f := fakeslack.New(t)
	f.Down("apps.connections.open", 1<<30)
	a, logs, sleeps := newAdapter(t, testConfig(f))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, platformtest.NewHandler()) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	for range 3 {
		select {
		case <-sleeps:
		case <-time.After(10 * time.Second):
			t.Fatal("no backoff")
		}
	}
	if s := a.Status(); s.State != platform.TransientDisconnect || !strings.Contains(s.Detail, "503") {
		t.Errorf("Status during outage = %q, want reconnecting with the reason", s)
	}
	f.Down("apps.connections.open", 0)
	f.WaitConn(t, 1)
	logs.waitFor(t, "Slack connected")
	if s := a.Status(); s.State != platform.Connected {
		t.Errorf("Status after the outage = %q", s)
	}
}

// TestUserName: the engine reads a sender's display name through
// platform.UserNamer; users.info is asked once per user and cached, and a
// failed lookup (no users:read scope) is remembered too, the name then
// being the id.
func TestUserName(t *testing.T) {
	for _, tt := range []struct {
		name, fail, want string
	}{
		{"the profile's display name", "", "Display U7"},
		{"the id when Slack gives none", "missing_scope", "U7"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := fakeslack.New(t)
			a, _, _ := newAdapter(t, testConfig(f))
			if tt.fail != "" {
				f.Fail("users.info", tt.fail)
			}
			for range 2 {
				if got := a.UserName(context.Background(), "U7"); got != tt.want {
					t.Errorf("UserName = %q, want %q", got, tt.want)
				}
			}
			if n := len(f.Calls("users.info")); n != 1 {
				t.Errorf("users.info called %d times, want 1 (the answer cached)", n)
			}
		})
	}
}

// unJSON undoes the HTML-safe escapes encoding/json applies to &, < and >.
func unJSON(s string) string {
	return strings.NewReplacer(`\u0026`, "&", `\u003c`, "<", `\u003e`, ">").Replace(s)
}

// blockingHandler holds every message until release is closed, then
// returns err (nil: queued).
type blockingHandler struct {
	*platformtest.Handler
	release chan struct{}
	err     error
}

func (b blockingHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	b.Msgs <- m
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	if b.err != nil {
		return platform.Result{}, b.err
	}
	return platform.Result{Status: platform.Queued}, nil
}

// startBlocking runs an adapter whose handler holds each message until
// h.release is closed and then returns handleErr, with acks falling back
// after ackWait.
func startBlocking(t *testing.T, ackWait time.Duration, handleErr error) (*env, blockingHandler) {
	t.Helper()
	f := fakeslack.New(t)
	a, logs, _ := newAdapter(t, testConfig(f))
	a.socket.ackWait = ackWait
	h := blockingHandler{Handler: platformtest.NewHandler(), release: make(chan struct{}), err: handleErr}
	platformtest.Run(t, 10*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
	return &env{t: t, a: a, f: f, rec: h.Handler, logs: logs, conn: f.WaitConn(t, 1)}, h
}

// TestAckAfterTheHandlerAccepted: a message's envelope is acked only once
// the handler returned (the engine journals the message first), so a crash
// before that leaves the event unacknowledged and Slack delivers it again.
func TestAckAfterTheHandlerAccepted(t *testing.T) {
	e, h := startBlocking(t, time.Hour, nil)
	f := e.f
	const envID = "env-accept-1"
	if err := e.conn.Send(fakeslack.EventEnvelope(envID, "EvAccept1", 0, fakeslack.MsgEvent("C1", "1700000900.000100", "U1", "journal me", nil))); err != nil {
		t.Fatal(err)
	}
	if m := h.Message(t); m.Text != "journal me" {
		t.Fatalf("got %q", m.Text)
	}
	if f.Acked(envID) {
		t.Fatal("the envelope was acked while the handler had not accepted the message")
	}
	close(h.release)
	f.WaitAck(t, envID)
	// Whatever is not a message for the engine is acked at once.
	e.deliver("EvEdit", 0, map[string]any{"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "1700000901.000100"})
}

// TestNoAckWhenNotHandled: a message the handler returns an error for
// (ctx ended while its other copy was being accepted, say) is not
// acknowledged, so that Slack delivers it again; the envelopes after it
// are acked as usual.
func TestNoAckWhenNotHandled(t *testing.T) {
	e, h := startBlocking(t, time.Hour, errors.New("not handled"))
	close(h.release)
	const envID = "env-unhandled-1"
	if err := e.conn.Send(fakeslack.EventEnvelope(envID, "EvUnhandled1", 0, fakeslack.MsgEvent("C1", "1700000950.000100", "U1", "not now", nil))); err != nil {
		t.Fatal(err)
	}
	h.Message(t)
	e.deliver("EvEdit2", 0, map[string]any{"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "1700000951.000100"})
	// The dispatcher runs in order: the edit's ack comes after the first
	// message's handler returned.
	if e.f.Acked(envID) {
		t.Error("the envelope of a message the handler did not handle was acked")
	}
}

// TestAckDeadlineWhenHandlingIsSlow: Slack wants an ack within 3 s, so a
// handler that takes longer (a disk that stalls) does not hold the ack:
// the envelope is acked at the deadline while the handler still runs. The
// envelopes behind it reach the handler after it, in order, each acked.
func TestAckDeadlineWhenHandlingIsSlow(t *testing.T) {
	e, h := startBlocking(t, 20*time.Millisecond, nil)
	e.deliver("EvSlow1", 0, fakeslack.MsgEvent("C1", "1700000800.000100", "U1", "slow", nil))
	if m := h.Message(t); m.Text != "slow" {
		t.Fatalf("got %q", m.Text)
	}
	for i := range 5 {
		e.send(fmt.Sprintf("env-queued-%d", i), fmt.Sprintf("EvSlow%d", i+2), fakeslack.MsgEvent("C1", fmt.Sprintf("1700000801.00010%d", i), "U1", fmt.Sprintf("queued %d", i), nil))
	}
	close(h.release)
	for i := range 5 {
		if m := h.Message(t); m.Text != fmt.Sprintf("queued %d", i) {
			t.Errorf("got %q, want queued %d", m.Text, i)
		}
		e.f.WaitAck(t, fmt.Sprintf("env-queued-%d", i))
	}
}

// TestNoDeadlineAckInACluster: with AckHandledOnly (a cluster host, whose
// handler publishes the message to the cluster's stream) a message is
// acked only once the handler took it, never at the ack deadline: one it
// could not publish must come again from Slack.
func TestNoDeadlineAckInACluster(t *testing.T) {
	f := fakeslack.New(t)
	cfg := testConfig(f)
	cfg.AckHandledOnly = true
	a, logs, _ := newAdapter(t, cfg)
	a.socket.ackWait = time.Nanosecond // a deadline would ack at once
	h := blockingHandler{Handler: platformtest.NewHandler(), release: make(chan struct{})}
	platformtest.Run(t, 10*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
	e := &env{t: t, a: a, f: f, rec: h.Handler, logs: logs, conn: f.WaitConn(t, 1)}
	const envID = "env-cluster-1"
	e.send(envID, "EvCluster1", fakeslack.MsgEvent("C1", "1700000970.000100", "U1", "publish me", nil))
	h.Message(t)
	// Nothing to wait on for an ack that must not come: a deadline's ack
	// would be here long before this.
	time.Sleep(200 * time.Millisecond)
	if f.Acked(envID) {
		t.Fatal("the envelope was acked at the deadline while the handler held the message")
	}
	close(h.release)
	f.WaitAck(t, envID)
}

// TestLateAckRedeliveryWaitsForTheFirst: while the engine still holds a
// message (its ack not sent), Slack delivers the event again. The copy is
// not acknowledged before the first is: acking it while the first may
// still be lost with a crash would lose the message, since Slack retries
// no event it has an ack for. It reaches the engine after the first, with
// the same id, and the engine's duplicate check answers it.
func TestLateAckRedeliveryWaitsForTheFirst(t *testing.T) {
	e, h := startBlocking(t, time.Hour, nil)
	f := e.f
	f.SetRedeliverAfter(time.Millisecond)
	first := f.Deliver(t, fakeslack.MsgEvent("C1", "1700001000.000100", "U1", "once", nil))
	if m := h.Message(t); m.Text != "once" {
		t.Fatalf("got %q", m.Text)
	}
	var retry string
	f.Wait(t, "a redelivery", func() bool {
		for _, d := range f.Deliveries() {
			if d.Retry > 0 {
				retry = d.EnvelopeID
				return true
			}
		}
		return false
	})
	f.SetRedeliverAfter(0)
	// The dispatcher still holds the first: neither can have been acked.
	if f.Acked(first) || f.Acked(retry) {
		t.Fatalf("acked while the handler held the first copy: first %v, retry %v", f.Acked(first), f.Acked(retry))
	}
	close(h.release)
	f.WaitAck(t, first)
	if m := h.Message(t); m.Text != "once" || m.ID != "C1:1700001000.000100" {
		t.Fatalf("the redelivery reached the handler as %+v, want the same message", m)
	}
	f.WaitAck(t, retry)
}

// TestTSSeq: a ts orders as Slack hands them out, microseconds included;
// one that does not parse claims no order.
func TestTSSeq(t *testing.T) {
	for _, tc := range []struct {
		ts   string
		want uint64
	}{
		{"1700000000.000100", 1700000000000100},
		{"1700000000.1", 1700000000100000},
		{"1700000001", 1700000001000000},
		{"", 0},
		{"abc.000001", 0},
		{"1700000000.x", 0},
		{"1700000000.0000001", 0},
		{"99999999999999999999.000001", 0},
	} {
		if got := tsSeq(tc.ts); got != tc.want {
			t.Errorf("tsSeq(%q) = %d, want %d", tc.ts, got, tc.want)
		}
	}
	if !(tsSeq("1700000000.000099") < tsSeq("1700000000.000100") && tsSeq("1700000000.999999") < tsSeq("1700000001.000000")) {
		t.Error("ts out of order")
	}
}
