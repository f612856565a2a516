package config

// The tokens of a [[platforms]] entry: which keys hold one, what each
// platform type needs and what form it has. The loader's checks, doctor's,
// the secret scans and the per-bot locks all ask here, so that a platform's
// credentials are described once.

// Slack's token prefixes: the one place cc-connect knows them.
const (
	SlackBotTokenPrefix = "xoxb-"
	SlackAppTokenPrefix = "xapp-"
)

// Token is one credential of a [[platforms]] entry.
type Token struct {
	Key    string // the config key: "bot_token", "app_token" or "token"
	Value  Secret
	Prefix string // what the platform starts it with; "" when it has no fixed prefix
	What   string // what it is and where to find it, for messages
}

// Tokens returns the tokens p's type needs, in the order the docs list
// them; none for the local platform or an unknown type. A value may be
// empty: the caller checks.
func (p Platform) Tokens() []Token {
	switch p.Type {
	case TypeSlack:
		return []Token{
			{Key: "bot_token", Value: p.BotToken, Prefix: SlackBotTokenPrefix,
				What: "the Slack bot token (OAuth & Permissions, starts with " + SlackBotTokenPrefix + ")"},
			{Key: "app_token", Value: p.AppToken, Prefix: SlackAppTokenPrefix,
				What: "the Slack app-level token with connections:write (Basic Information, starts with " + SlackAppTokenPrefix + ")"},
		}
	case TypeDiscord:
		return []Token{{Key: "token", Value: p.Token, What: "the Discord bot token (Developer Portal, Bot tab)"}}
	case TypeTelegram:
		return []Token{{Key: "token", Value: p.Token, What: "the Telegram bot token from @BotFather"}}
	}
	return nil
}

// IdentityToken is the token that identifies p's bot, as the per-bot lock
// takes it: two cc-connects using it would steal each other's events.
// Slack's app token (it opens the Socket Mode connections), else the bot
// token; "" for the local platform.
func (p Platform) IdentityToken() Secret {
	switch p.Type {
	case TypeSlack:
		return p.AppToken
	case TypeDiscord, TypeTelegram:
		return p.Token
	}
	return ""
}

// setTokens returns every token key p sets, whatever its type uses: for
// the checks that no token reaches a log or the agent.
func (p Platform) setTokens() []Token {
	var out []Token
	for _, t := range []Token{{Key: "bot_token", Value: p.BotToken}, {Key: "app_token", Value: p.AppToken}, {Key: "token", Value: p.Token}} {
		if t.Value != "" {
			out = append(out, t)
		}
	}
	return out
}
