package main

import (
	"os"
	"path/filepath"
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
func writeConfig(tb testing.TB, dir, text string) string {
	tb.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
