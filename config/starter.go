package config

import (
	"bytes"
	_ "embed"
	"fmt"
	"path/filepath"
	"strings"
	"text/template"
)

// The starter config `cc-connect init` writes: the least a first run needs,
// for one platform, commented for someone who has only the binary. It is a
// template of this package because it is the file format's to keep valid:
// TestStarterLoads loads what it renders for every platform.

//go:embed starter.toml.tmpl
var starterText string

var starterTemplate = template.Must(template.New("starter").Funcs(template.FuncMap{"quote": tomlQuote}).Parse(starterText))

// starterPlatforms are the platforms a starter config can be written for,
// with the variables their secrets are read from and how their ids look.
var starterPlatforms = map[string]struct {
	vars      []string
	channelID string
	userIDs   string
}{
	TypeLocal:    {},
	TypeSlack:    {[]string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"}, `channel id ("C0123456789")`, `Slack member ids ("U0123ABCD")`},
	TypeDiscord:  {[]string{"DISCORD_BOT_TOKEN"}, `channel id ("123456789012345678")`, `Discord user ids ("987654321098765432")`},
	TypeTelegram: {[]string{"TELEGRAM_BOT_TOKEN"}, `chat id ("-1001234567890" for a group)`, `Telegram user ids ("123456789")`},
}

// Starter is a starter config to write.
type Starter struct {
	// Text is the file's content.
	Text []byte
	// Vars are the environment variables the file reads the platform's
	// secrets from, which must be set before it loads.
	Vars []string
}

// NewStarter renders the starter config for platform (one of the platform
// types) binding workspace, an absolute path.
func NewStarter(platform, workspace string) (Starter, error) {
	p, ok := starterPlatforms[platform]
	if !ok {
		return Starter{}, fmt.Errorf("platform %q is not one of %s", platform, strings.Join(platformTypes, ", "))
	}
	if !filepath.IsAbs(workspace) {
		// Relative paths are taken from the config file's folder, which
		// need not be the folder init ran in.
		return Starter{}, fmt.Errorf("workspace %q is not an absolute path", workspace)
	}
	var b bytes.Buffer
	err := starterTemplate.Execute(&b, map[string]any{
		"Platform":  platform,
		"Workspace": workspace,
		"Vars":      p.vars,
		"ChannelID": p.channelID,
		"UserIDs":   p.userIDs,
	})
	if err != nil {
		return Starter{}, fmt.Errorf("rendering the starter config: %w", err)
	}
	return Starter{Text: b.Bytes(), Vars: p.vars}, nil
}

// tomlQuote writes s as a TOML basic string that loads back as s: TOML's
// escapes, and "$" doubled since every string may hold ${NAME}.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '$':
			b.WriteString("$$")
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
