package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"ok", Config{Name: "dc", Token: "abc"}, ""},
		{"bot prefix accepted", Config{Name: "dc", Token: "Bot abc"}, ""},
		{"no name", Config{Token: "abc"}, "name is required"},
		{"no token", Config{Name: "dc"}, "token is required"},
		{"bad url", Config{Name: "dc", Token: "abc", APIURL: "discord.com"}, "api_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, nil)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestIdentifyAndRouting(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	f.AddChannel(thread)
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	runConnected(t, f, a, h)

	id := f.Frame(t)
	if id.Op != 2 || id.D["token"] != "Bot "+fakediscord.Token || int(id.D["intents"].(float64)) != int(Intents) {
		t.Fatalf("IDENTIFY = %+v, want the bot token and intents %d", id, Intents)
	}

	botUser := map[string]any{"id": fakediscord.BotID, "username": "ccbot", "bot": true}
	tests := []struct {
		name string
		ev   map[string]any
		want *platform.Message
	}{
		{
			name: "channel mention stripped",
			ev:   fakediscord.MessageEvent("1", "C1", "G1", "7", "<@900> run the tests", map[string]any{"mentions": []any{botUser}}),
			want: &platform.Message{ID: "C1:1", Target: platform.Target{Channel: "C1", MessageID: "1"}, Text: "run the tests", Mentioned: true, UserID: "7"},
		},
		{
			name: "nickname mention form",
			ev:   fakediscord.MessageEvent("2", "C1", "G1", "7", "hey <@!900>\nsecond line", map[string]any{"mentions": []any{botUser}}),
			want: &platform.Message{ID: "C1:2", Target: platform.Target{Channel: "C1", MessageID: "2"}, Text: "hey\nsecond line", Mentioned: true, UserID: "7"},
		},
		{
			name: "thread message belongs to the thread",
			ev:   fakediscord.MessageEvent("3", "T1", "G1", "7", "in the thread", nil),
			want: &platform.Message{ID: "T1:3", Target: platform.Target{Channel: "C1", Thread: "T1", MessageID: "3"}, Text: "in the thread", UserID: "7"},
		},
		{
			name: "direct message",
			ev:   fakediscord.MessageEvent("4", "D1", "", "8", "hello", nil),
			want: &platform.Message{ID: "D1:4", Target: platform.Target{Channel: "D1", MessageID: "4"}, Text: "hello", IsDM: true, UserID: "8"},
		},
		{
			name: "reply to the bot",
			ev: fakediscord.MessageEvent("5", "C1", "G1", "7", "and then?", map[string]any{"type": 19,
				"referenced_message": map[string]any{"id": "0", "channel_id": "C1", "content": "x", "author": botUser}}),
			want: &platform.Message{ID: "C1:5", Target: platform.Target{Channel: "C1", MessageID: "5"}, Text: "and then?", Mentioned: true, UserID: "7"},
		},
		{name: "other bot ignored", ev: fakediscord.MessageEvent("6", "C1", "G1", "55", "beep", map[string]any{"author": map[string]any{"id": "55", "username": "b", "bot": true}})},
		{name: "own message ignored", ev: fakediscord.MessageEvent("7", "C1", "G1", fakediscord.BotID, "mine", nil)},
		{name: "join notice ignored", ev: fakediscord.MessageEvent("8", "C1", "G1", "7", "", map[string]any{"type": 7})},
		{name: "webhook ignored", ev: fakediscord.MessageEvent("9", "C1", "G1", "7", "hook", map[string]any{"webhook_id": "W"})},
		{
			// The engine's one duplicate check catches it, on the id.
			name: "redelivery handed over with the same id",
			ev:   fakediscord.MessageEvent("1", "C1", "G1", "7", "<@900> run the tests", map[string]any{"mentions": []any{botUser}}),
			want: &platform.Message{ID: "C1:1", Target: platform.Target{Channel: "C1", MessageID: "1"}, Text: "run the tests", Mentioned: true, UserID: "7"},
		},
	}
	for _, tt := range tests {
		f.Post(t, tt.ev)
	}
	// Conversations are handled side by side: a sentinel closes each, and
	// all are counted in; a filtered message would take a sentinel's place.
	sentinels := []string{"C1", "T1", "D1"}
	for i, ch := range sentinels {
		guild := "G1"
		if ch == "D1" {
			guild = ""
		}
		f.Post(t, fakediscord.MessageEvent(fmt.Sprint(90+i), ch, guild, "8", "sentinel", nil))
	}
	got := map[string]platform.Message{}
	wanted := 0
	for _, tt := range tests {
		if tt.want != nil {
			wanted++
		}
	}
	for range wanted + len(sentinels) {
		m := h.Message(t)
		got[m.ID] = m
	}
	for _, tt := range tests {
		if tt.want == nil {
			continue
		}
		w := *tt.want
		w.Target.Platform = "dc-test"
		got := got[w.ID]
		if got.ID != w.ID || got.Target != w.Target || got.Text != w.Text || got.IsDM != w.IsDM ||
			got.Mentioned != w.Mentioned || got.UserID != w.UserID || got.IsBot ||
			got.UserName != "user"+w.UserID || got.Received.IsZero() {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, w)
		}
	}
	for i, ch := range sentinels {
		if m, ok := got[fmt.Sprintf("%s:%d", ch, 90+i)]; !ok || m.Text != "sentinel" {
			t.Errorf("the sentinel of %s did not come among the first %d messages: a filtered message reached the handler (%v)", ch, len(got), got)
		}
	}
	if s := a.Status(); s.State != platform.Connected {
		t.Errorf("status = %q", s)
	}
}

func TestOwnRoleMention(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	runConnected(t, f, a, h)
	f.Dispatch(t, "GUILD_CREATE", map[string]any{
		"id": "G1", "name": "team",
		"roles": []any{
			map[string]any{"id": "R1", "name": "ccbot", "managed": true},
			map[string]any{"id": "R2", "name": "devs", "managed": false},
		},
		"members":  []any{map[string]any{"user": map[string]any{"id": fakediscord.BotID, "username": "ccbot", "bot": true}, "roles": []any{"R1", "R2"}}},
		"channels": []any{map[string]any{"id": "C1", "type": 0, "guild_id": "G1"}},
	})
	tests := []struct {
		content, roles string
		want           string
		mentioned      bool
	}{
		{"<@&R1> deploy it", "R1", "deploy it", true},             // the bot's own managed role
		{"<@&R2> standup now", "R2", "<@&R2> standup now", false}, // a human role the bot also has
	}
	for i, tt := range tests {
		f.Post(t, fakediscord.MessageEvent(fmt.Sprint(10+i), "C1", "G1", "7", tt.content, map[string]any{"mention_roles": []any{tt.roles}}))
		m := h.Message(t)
		if m.Text != tt.want || m.Mentioned != tt.mentioned {
			t.Errorf("%q: got text %q mentioned %v, want %q %v", tt.content, m.Text, m.Mentioned, tt.want, tt.mentioned)
		}
	}
}

func TestThreadPerMessage(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, func(c *Config) { c.ThreadPerMessage = true })
	h := platformtest.NewHandler()
	runConnected(t, f, a, h)

	f.Post(t, fakediscord.MessageEvent("42", "C1", "G1", "7", "Fix the flaky test\nin pkg/x", nil))
	m := h.Message(t)
	if m.Target != (platform.Target{Platform: "dc-test", Channel: "C1", Thread: "42", MessageID: "42"}) {
		t.Fatalf("target = %+v, want a thread named after the message", m.Target)
	}
	reply := platform.Target{Platform: "dc-test", Channel: "C1", Thread: "42"}
	if _, err := a.Send(context.Background(), reply, "on it"); err != nil {
		t.Fatal(err)
	}
	th := f.Next(t, "POST", "/channels/")
	if th.Path != "/channels/C1/messages/42/threads" || th.Body["name"] != "Fix the flaky test" {
		t.Fatalf("thread start = %+v", th)
	}
	if c := f.Next(t, "POST", "/channels/"); c.Path != "/channels/42/messages" || c.Body["content"] != "on it" {
		t.Fatalf("reply = %+v", c)
	}
	if _, err := a.Send(context.Background(), reply, "done"); err != nil {
		t.Fatal(err)
	}
	if c := f.Next(t, "POST", "/channels/"); c.Path != "/channels/42/messages" {
		t.Fatalf("second reply opened another thread: %+v", c)
	}
	// The reaction on the starter message goes to the parent channel.
	if err := a.React(context.Background(), m.Target, "eyes"); err != nil {
		t.Fatal(err)
	}
	if c := f.Next(t, "PUT", "/channels/"); c.Path != "/channels/C1/messages/42/reactions/👀/@me" {
		t.Fatalf("reaction = %+v", c)
	}
}

func TestSendSplitsAndWaitsOutRateLimit(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	f.RateLimit("POST /channels/C1/messages", 0.05)
	var b strings.Builder
	b.WriteString("Result:\n```go\n")
	for b.Len() < 4500 {
		b.WriteString("x := compute(a, b) // @everyone\n")
	}
	b.WriteString("```\nAll good.")
	text := b.String()
	start := time.Now()
	got, err := a.Send(context.Background(), platform.Target{Platform: "dc-test", Channel: "C1"}, text)
	if err != nil {
		t.Fatal(err)
	}
	parts := splitForDiscord(text)
	if len(parts) < 3 {
		t.Fatalf("only %d parts", len(parts))
	}
	limited := f.Next(t, "POST", "/channels/C1/messages")
	var sent []string
	for range parts {
		c := f.Next(t, "POST", "/channels/C1/messages")
		am, _ := c.Body["allowed_mentions"].(map[string]any)
		if p, ok := am["parse"].([]any); !ok || len(p) != 0 {
			t.Errorf("allowed_mentions = %v, want no pings", c.Body["allowed_mentions"])
		}
		sent = append(sent, c.Body["content"].(string))
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Error("retried before retry_after")
	}
	if limited.Body["content"] != sent[0] {
		t.Error("the rate-limited part was not the one retried")
	}
	for i, s := range sent {
		if n := len(utf16.Encode([]rune(s))); n > messageLimit {
			t.Errorf("part %d is %d long", i, n)
		}
		if strings.Count(s, "```")%2 != 0 {
			t.Errorf("part %d breaks a code block", i)
		}
	}
	if !strings.HasSuffix(sent[len(sent)-1], "All good.") || got.MessageID == "" || got.Channel != "C1" {
		t.Errorf("last part %q, returned %+v", sent[len(sent)-1], got)
	}

	// A rate limit longer than the caller will wait ends with ctx.
	f.RateLimit("POST /channels/C1/messages", 3600)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := a.Send(ctx, platform.Target{Channel: "C1"}, "x"); errc <- err }()
	f.Next(t, "POST", "/channels/C1/messages")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Send during a rate limit after cancel = %v", err)
	}
}

func TestPermissionButtons(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	runConnected(t, f, a, h)

	for _, reqID := range []string{"6088ef75-df8e-4e17-9492-87e166cd0d56", strings.Repeat("r", 120)} {
		to := platform.Target{Platform: "dc-test", Channel: "C1"}
		posted, err := a.AskPermission(context.Background(), to, platform.PermissionPrompt{RequestID: reqID, Tool: "Bash", Text: "**Permission needed**: `Bash`\n```\ngo test ./...\n```"})
		if err != nil {
			t.Fatal(err)
		}
		c := f.Next(t, "POST", "/channels/C1/messages")
		rows, _ := c.Body["components"].([]any)
		if len(rows) != 1 {
			t.Fatalf("components = %v", c.Body["components"])
		}
		buttons := rows[0].(map[string]any)["components"].([]any)
		if len(buttons) != 3 {
			t.Fatalf("buttons = %v", buttons)
		}
		var customIDs []string
		for _, b := range buttons {
			id := b.(map[string]any)["custom_id"].(string)
			if len(id) > maxCustomID {
				t.Fatalf("custom_id %q too long", id)
			}
			customIDs = append(customIDs, id)
		}
		msg, ok := f.Message(posted.MessageID)
		if !ok {
			t.Fatalf("no prompt message %s", posted.MessageID)
		}
		id := f.Click(t, msg, customIDs[2], "7", "alice")
		cb := f.Next(t, "POST", "/interactions/")
		if cb.Path != "/interactions/"+id+"/itok-"+id+"/callback" || cb.Body["type"] != float64(6) || cb.Status != 204 {
			t.Fatalf("interaction answer = %+v, want a deferred update", cb)
		}
		var act platform.Action
		select {
		case act = <-h.Actions:
		case <-time.After(10 * time.Second):
			t.Fatal("no action")
		}
		want := platform.Action{ID: id, Target: posted, UserID: "7", UserName: "alice", RequestID: reqID, Choice: platform.ChoiceDeny}
		if act != want {
			t.Fatalf("action = %+v, want %+v", act, want)
		}
		if err := a.ResolvePermission(context.Background(), posted, "Denied by alice"); err != nil {
			t.Fatal(err)
		}
		e := f.Next(t, "PATCH", "/channels/C1/messages/"+posted.MessageID)
		comps, ok := e.Body["components"].([]any)
		content, _ := e.Body["content"].(string)
		if !ok || len(comps) != 0 || !strings.Contains(content, "Denied by alice") || !strings.Contains(content, "go test ./...") {
			t.Fatalf("resolve = %+v", e.Body)
		}
		if m, _ := f.Message(posted.MessageID); len(m.Edits) != 1 || m.Components != "[]" {
			t.Errorf("the prompt after resolving = %+v", m)
		}
	}
}

func TestReconnectResumes(t *testing.T) {
	f := fakediscord.New(t)
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	runConnected(t, f, a, h)
	if fr := f.Frame(t); fr.Op != 2 {
		t.Fatalf("first frame op %d", fr.Op)
	}
	f.Post(t, fakediscord.MessageEvent("1", "D1", "", "8", "before", nil))
	if m := h.Message(t); m.Text != "before" {
		t.Fatal(m.Text)
	}

	f.Drop()
	fr := f.Frame(t)
	if fr.Op != 6 || fr.D["session_id"] != "sess-1" || fr.D["token"] != "Bot "+fakediscord.Token || fr.D["seq"].(float64) < 2 {
		t.Fatalf("after a drop the client sent %+v, want RESUME of sess-1", fr)
	}
	f.WaitConnected(t, 2)
	f.Post(t, fakediscord.MessageEvent("2", "D1", "", "8", "after", nil))
	if m := h.Message(t); m.Text != "after" {
		t.Fatal(m.Text)
	}
	// Status has no event of its own; poll it briefly.
	deadline := time.Now().Add(10 * time.Second)
	for a.Status().State != platform.Connected {
		if time.Now().After(deadline) {
			t.Fatalf("status after reconnect = %v", a.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHeartbeats(t *testing.T) {
	// Acknowledged heartbeats keep the session; unacknowledged ones make
	// the client drop the connection and resume.
	f := fakediscord.New(t)
	f.SetHeartbeatInterval(250) // the client gives up after 5 unacked: 1.25 s
	f.SetNoAck(1)
	a := newTestAdapter(t, f, nil)
	runConnected(t, f, a, platformtest.NewHandler())
	if fr := f.Frame(t); fr.Op != 2 {
		t.Fatalf("first frame op %d", fr.Op)
	}
	if fr := f.Frame(t); fr.Op != 6 || fr.D["session_id"] != "sess-1" {
		t.Fatalf("after missed ACKs the client sent %+v, want RESUME", fr)
	}
	f.WaitConnected(t, 2)
	// Then wait longer than the client's patience for ACKs (5 intervals).
	from := f.Heartbeats()
	f.Wait(t, "8 heartbeats on the resumed connection", func() bool { return f.Heartbeats() >= from+8 })
	if fr, ok := f.PendingFrame(); ok {
		t.Fatalf("acknowledged heartbeats still led to op %d", fr.Op)
	}
}

func TestSilentGatewayIsRetried(t *testing.T) {
	f := fakediscord.New(t)
	f.SetSilent(1)
	a := newTestAdapter(t, f, nil)
	a.gateway.conns.openTimeout = 200 * time.Millisecond
	runConnected(t, f, a, platformtest.NewHandler())
	if fr := f.Frame(t); fr.Op != 2 {
		t.Fatalf("after a silent gateway the client sent op %d, want IDENTIFY", fr.Op)
	}
}

func TestGatewayRefusals(t *testing.T) {
	tests := []struct {
		name      string
		token     string
		closeCode int
		want      error
	}{
		{"wrong token", "wrong.secret", 0, ErrUnauthorized},
		{"intent not enabled", fakediscord.Token, 4014, ErrIntentsDisallowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fakediscord.New(t)
			f.SetCloseCode(tt.closeCode)
			a := newTestAdapter(t, f, func(c *Config) { c.Token = tt.token })
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			err := a.Run(ctx, platformtest.NewHandler())
			if !errors.Is(err, tt.want) {
				t.Fatalf("Run = %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(a.Status().String(), "secret") {
				t.Fatalf("token leaked: %v", err)
			}
			want := platform.Failing
			if tt.want == ErrUnauthorized {
				want = platform.BadCredentials
			}
			if s := a.Status(); s.State != want || !strings.HasPrefix(s.String(), "error: ") {
				t.Errorf("status = %v (%d), want %v", s, s.State, want)
			}
		})
	}
}

func TestTypingEditAttachments(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(thread)
	a := newTestAdapter(t, f, nil)
	a.wire.edits = coalesce.New(coalesce.NewInterval(time.Millisecond))
	h := platformtest.NewHandler()
	runConnected(t, f, a, h)
	ctx := context.Background()

	f.Post(t, fakediscord.MessageEvent("3", "T1", "G1", "7", "see file", map[string]any{"attachments": []any{
		f.AddFile("att1", "notes.txt", "text/plain", "hello"),
	}}))
	m := h.Message(t)
	if len(m.Attachments) != 1 || m.Attachments[0].Name != "notes.txt" || m.Attachments[0].Size != 5 {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	rc, err := m.Attachments[0].Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "hello" {
		t.Fatalf("content = %q", body)
	}
	// A replay after a restart fetches it again from its Ref alone.
	rc, err = a.OpenAttachment(ctx, platform.Attachment{Name: "notes.txt", Ref: m.Attachments[0].Ref})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(rc)
	rc.Close()
	if string(body) != "hello" {
		t.Fatalf("content again = %q", body)
	}

	to := platform.Target{Platform: "dc-test", Channel: "C1", Thread: "T1"}
	if err := a.Typing(ctx, to); err != nil {
		t.Fatal(err)
	}
	if c := f.Next(t, "POST", "/channels/"); c.Path != "/channels/T1/typing" {
		t.Fatalf("typing = %+v", c)
	}
	progress, err := a.Send(ctx, to, "Starting")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, progress, "Running: `go test`"); err != nil {
		t.Fatal(err)
	}
	if c := f.Next(t, "PATCH", "/channels/"); c.Path != "/channels/T1/messages/"+progress.MessageID || c.Body["content"] != "Running: `go test`" {
		t.Fatalf("edit = %+v", c)
	}
	if err := a.Unreact(ctx, m.Target, "eyes"); err != nil {
		t.Fatal(err)
	}
	if c := f.Next(t, "DELETE", "/channels/"); c.Path != "/channels/T1/messages/3/reactions/👀/@me" {
		t.Fatalf("unreact = %+v", c)
	}
}

func TestRewriteTransport(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Host+r.URL.Path)
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL + "/proxy")
	tr := &rewriteTransport{base: base, next: http.DefaultTransport}
	c := &http.Client{Transport: tr}
	for _, u := range []string{"https://discord.com/api/v9/channels/1/messages", "https://discord.com/api/v9/gateway"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(got) != 2 || got[0] != base.Host+"/proxy/api/v9/channels/1/messages" || got[1] != base.Host+"/proxy/api/v9/gateway/bot" {
		t.Fatalf("rewritten to %v", got)
	}
	// Other hosts (the CDN) are not rewritten.
	resp, err := c.Get(srv.URL + "/cdn/file")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got[2] != base.Host+"/cdn/file" {
		t.Fatalf("CDN request went to %s", got[2])
	}
}

func TestStripMention(t *testing.T) {
	tests := []struct {
		in, want string
		found    bool
	}{
		{"<@900> hi", "hi", true},
		{"hi <@!900> there", "hi there", true},
		{"<@900> fix:\n```\n    indented\n```", "fix:\n```\n    indented\n```", true},
		{"<@901> hi", "<@901> hi", false},
		{"  plain  ", "plain", false},
	}
	for _, tt := range tests {
		got, found := stripMention(tt.in, "900")
		if got != tt.want || found != tt.found {
			t.Errorf("stripMention(%q) = %q, %v; want %q, %v", tt.in, got, found, tt.want, tt.found)
		}
	}
}

// A press names where it was made, not where the prompt it claims was
// posted: the engine refuses a press from another conversation, so the
// adapter must not hand it the prompt's own target.
func TestPermissionPressFromAnotherChannel(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	f.AddChannel(fakediscord.Channel{ID: "C9", Type: 0, GuildID: "G1"})
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	runConnected(t, f, a, h)
	to := platform.Target{Platform: "dc-test", Channel: "C1"}
	posted, err := a.AskPermission(context.Background(), to, platform.PermissionPrompt{RequestID: "req-1", Tool: "Bash", Text: "**Permission needed**: `Bash`"})
	if err != nil {
		t.Fatal(err)
	}
	f.Next(t, "POST", "/channels/C1/messages")
	// Raw, not Click: Click presses a button where its message is.
	f.Dispatch(t, "INTERACTION_CREATE", map[string]any{
		"id": "I9", "application_id": "A", "type": 3, "token": "itok", "channel_id": "C9", "guild_id": "G1",
		"data":    map[string]any{"custom_id": permbutton.Data(platform.ChoiceAllow, "req-1"), "component_type": 2},
		"member":  map[string]any{"user": map[string]any{"id": "7", "username": "alice"}},
		"message": map[string]any{"id": posted.MessageID, "channel_id": "C9", "content": "x"},
	})
	select {
	case act := <-h.Actions:
		if act.Target.Channel != "C9" || act.Target.Thread != "" || act.RequestID != "req-1" {
			t.Fatalf("action = %+v, want it placed in C9, where the press was made", act)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no action")
	}
}
