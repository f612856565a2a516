package fakediscord

import (
	"encoding/json"
	"testing"

	"github.com/bwmarrin/discordgo"
)

// noncePost is a message body with Discord's nonce fields, which
// discordgo's MessageSend predates.
type noncePost struct {
	Content      string `json:"content"`
	Nonce        string `json:"nonce,omitempty"`
	EnforceNonce bool   `json:"enforce_nonce,omitempty"`
}

// posted is the part of a message object these tests read, with the
// nonce discordgo's Message has no field for.
type posted struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Nonce   string `json:"nonce"`
}

func postWithNonce(t *testing.T, d *discordgo.Session, channel string, p noncePost) (*posted, error) {
	t.Helper()
	body, err := d.RequestWithBucketID("POST", discordgo.EndpointChannelMessages(channel), p, discordgo.EndpointChannelMessages(channel))
	if err != nil {
		return nil, err
	}
	var m posted
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return &m, nil
}

// TestEnforceNonce: with enforce_nonce a repeated nonce returns the earlier
// message and posts nothing, within the window; after it, or without
// enforce_nonce, a new message is posted. A nonce over 25 characters is
// refused.
func TestEnforceNonce(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	first, err := postWithNonce(t, d, "C1", noncePost{Content: "part 1", Nonce: "k1-0", EnforceNonce: true})
	if err != nil {
		t.Fatal(err)
	}
	if first.Nonce != "k1-0" {
		t.Errorf("the create answer's nonce = %q", first.Nonce)
	}
	again, err := postWithNonce(t, d, "C1", noncePost{Content: "part 1", Nonce: "k1-0", EnforceNonce: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || len(s.Posts()) != 1 {
		t.Errorf("a repeated nonce gave message %s (first %s) and %d posts, want the first and one post", again.ID, first.ID, len(s.Posts()))
	}
	if _, err := postWithNonce(t, d, "C1", noncePost{Content: "part 1", Nonce: "k1-0"}); err != nil || len(s.Posts()) != 2 {
		t.Errorf("without enforce_nonce: %v, %d posts, want a second post", err, len(s.Posts()))
	}
	s.AdvanceClock(nonceWindow)
	late, err := postWithNonce(t, d, "C1", noncePost{Content: "part 1", Nonce: "k1-0", EnforceNonce: true})
	if err != nil || late.ID == first.ID || len(s.Posts()) != 3 {
		t.Errorf("after the window: %v, message %s, %d posts, want a new one", err, late.ID, len(s.Posts()))
	}
	if _, err := postWithNonce(t, d, "C1", noncePost{Content: "x", Nonce: "12345678901234567890123456", EnforceNonce: true}); err == nil {
		t.Error("a 26-character nonce was accepted")
	} else if status, code := restErr(err); status != 400 || code != 50035 {
		t.Errorf("a 26-character nonce: %d %d, want 400 50035", status, code)
	}
	raw, err := d.RequestWithBucketID("GET", discordgo.EndpointChannelMessage("C1", first.ID), nil, discordgo.EndpointChannelMessage("C1", ""))
	var got posted
	if err != nil || json.Unmarshal(raw, &got) != nil || got.Content != "part 1" || got.Nonce != "" {
		t.Errorf("fetched message = %s, %v; want it without its nonce", raw, err)
	}
}

// TestHistory: GET a channel's messages lists them newest first, before
// a message when asked; GET one message finds it in its channel only.
func TestHistory(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "T1", Type: 11, GuildID: "G1", ParentID: "C1"})
	d := session(t, s, Token)
	s.SetEcho(false)
	for _, text := range []string{"one", "two", "three"} {
		if _, err := d.ChannelMessageSend("T1", text); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := d.ChannelMessages("T1", 2, "", "", "")
	if err != nil || len(msgs) != 2 || msgs[0].Content != "three" || msgs[1].Content != "two" {
		t.Fatalf("latest two = %+v, %v", msgs, err)
	}
	older, err := d.ChannelMessages("T1", 10, msgs[1].ID, "", "")
	if err != nil || len(older) != 1 || older[0].Content != "one" {
		t.Errorf("before %s = %+v, %v", msgs[1].ID, older, err)
	}
	if _, err := d.ChannelMessage("C9", msgs[0].ID); err == nil {
		t.Error("a message fetched from a channel it is not in")
	}
}
