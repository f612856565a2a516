package config

import (
	"strings"
	"testing"
)

// TestTokens: each platform type names the tokens it needs, Slack's with
// its prefixes; the identity token is the one the per-bot lock takes.
func TestTokens(t *testing.T) {
	tests := []struct {
		p        Platform
		keys     string // the keys Tokens lists, with their prefixes
		identity Secret
	}{
		{Platform{Type: TypeSlack, BotToken: "xoxb-b", AppToken: "xapp-a"}, "bot_token=xoxb- app_token=xapp-", "xapp-a"},
		{Platform{Type: TypeDiscord, Token: "d"}, "token=", "d"},
		{Platform{Type: TypeTelegram, Token: "1:t"}, "token=", "1:t"},
		{Platform{Type: TypeLocal, Token: "stray"}, "", ""},
	}
	for _, tt := range tests {
		var got []string
		for _, tok := range tt.p.Tokens() {
			got = append(got, tok.Key+"="+tok.Prefix)
			if tok.What == "" {
				t.Errorf("%s %s: no description", tt.p.Type, tok.Key)
			}
		}
		if strings.Join(got, " ") != tt.keys {
			t.Errorf("%s: Tokens() = %q, want %q", tt.p.Type, got, tt.keys)
		}
		if id := tt.p.IdentityToken(); id != tt.identity {
			t.Errorf("%s: IdentityToken() = %q, want %q", tt.p.Type, id.Reveal(), tt.identity.Reveal())
		}
	}
	// Every key set counts for the secret checks, used by the type or not.
	set := Platform{Type: TypeDiscord, Token: "d", BotToken: "xoxb-stray"}.setTokens()
	if len(set) != 2 || set[0].Key != "bot_token" || set[1].Key != "token" {
		t.Errorf("setTokens() = %+v", set)
	}
}
