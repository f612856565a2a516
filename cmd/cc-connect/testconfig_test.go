package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// localChatTOML binds the local chat "tty" to the workspace "ws" for
// everyone: the tail of most configs these tests run.
const localChatTOML = `
[[platforms]]
name = "tty"
type = "local"
[[bindings]]
platform = "tty"
workspace = "ws"
allow_users = ["*"]
`

// writeConfig creates dir/ws (and dir) and writes text as
// dir/config.toml, private like an admin's, and returns its path.
//
// The tier runs as root (CI does), where run refuses chat platforms,
// webhooks and clusters served without agent.user unless
// agent.allow_root says the admin accepts it (config.CheckRoot): the
// configs written here say so, as the admin of a throwaway sandbox
// would, unless the text sets allow_root itself.
func writeConfig(tb testing.TB, dir, text string) string {
	tb.Helper()
	text = allowRoot(text)
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// allowRoot adds agent.allow_root = true to a config's text, in its
// [agent] table or in a new one, unless the text sets allow_root.
func allowRoot(text string) string {
	if strings.Contains(text, "allow_root") {
		return text
	}
	const header = "[agent]\n"
	if strings.HasPrefix(text, header) {
		return header + "allow_root = true\n" + text[len(header):]
	}
	if i := strings.Index(text, "\n"+header); i >= 0 {
		i += 1 + len(header)
		return text[:i] + "allow_root = true\n" + text[i:]
	}
	return text + "\n[agent]\nallow_root = true\n"
}
