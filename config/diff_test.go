package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	const base = `
[[platforms]]
name = "tg"
type = "telegram"
token = "123:abc"

[[platforms]]
name = "local"
type = "local"

[[bindings]]
platform = "tg"
channel = "C1"
workspace = "ws"
allow_users = ["alice"]
admins = ["alice"]

[[bindings]]
platform = "local"
workspace = "ws"
allow_users = ["*"]
`
	tests := []struct {
		name string
		edit func(string) string
		want Changes
	}{
		{"unchanged", func(s string) string { return s + "\n# a comment\n" }, Changes{}},
		{
			"token changed restarts only that platform",
			func(s string) string { return strings.Replace(s, `"123:abc"`, `"123:xyz"`, 1) },
			Changes{PlatformsChanged: []PlatformChange{{Name: "tg", Keys: []string{"token"}}}},
		},
		{
			"allow list changed",
			func(s string) string {
				return strings.Replace(s, `allow_users = ["alice"]`, `allow_users = ["alice", "bob"]`, 1)
			},
			Changes{Bindings: []BindingChange{{Platform: "tg", Channel: "C1", Kind: Changed, Keys: []string{"allow_users"}}}},
		},
		{
			"workspace changed",
			func(s string) string {
				return strings.Replace(s, "workspace = \"ws\"\nallow_users = [\"alice\"]", "workspace = \"ws2\"\nallow_users = [\"alice\"]", 1)
			},
			Changes{Bindings: []BindingChange{{Platform: "tg", Channel: "C1", Kind: Changed, Keys: []string{"workspace"}}}},
		},
		{
			"binding added and removed",
			func(s string) string { return strings.Replace(s, `channel = "C1"`, `channel = "C2"`, 1) },
			Changes{Bindings: []BindingChange{
				{Platform: "tg", Channel: "C2", Kind: Added},
				{Platform: "tg", Channel: "C1", Kind: Removed},
			}},
		},
		{
			"restart-only keys",
			func(s string) string {
				return "[agent]\nmodel = \"opus\"\nenv = { A = \"1\" }\n[log]\nformat = \"json\"\nlevel = \"debug\"\n[state]\ndir = \"st\"\n" + s
			},
			Changes{LogLevel: true, Restart: []string{"state.dir", "log.format", "agent.env", "agent.model", "audit.path"}}, // the trail's path follows state.dir
		},
		{
			"chat keys apply live",
			func(s string) string {
				return "[chat]\nnotify_after = \"5m\"\nthread_context_on_fresh = true\n" + s
			},
			Changes{Chat: []string{"chat.notify_after", "chat.thread_context_on_fresh"}},
		},
		{
			"platform removed with its binding",
			func(s string) string {
				i := strings.Index(s, "[[platforms]]\nname = \"local\"")
				j := strings.Index(s, "[[bindings]]\nplatform = \"local\"")
				return s[:i] + s[strings.Index(s, "[[bindings]]"):j]
			},
			Changes{PlatformsRemoved: []string{"local"}, Bindings: []BindingChange{{Platform: "local", Channel: "*", Kind: Removed}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeConfig(t, base)
			if err := os.Mkdir(filepath.Join(filepath.Dir(path), "ws2"), 0o755); err != nil {
				t.Fatal(err)
			}
			old, err := load(path, envMap(nil))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tt.edit(base)), 0o600); err != nil {
				t.Fatal(err)
			}
			cur, err := load(path, envMap(nil))
			if err != nil {
				t.Fatal(err)
			}
			got := Diff(old, cur)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Diff:\n got %+v\nwant %+v", got, tt.want)
			}
			if got.Empty() != reflect.DeepEqual(tt.want, Changes{}) {
				t.Errorf("Empty() = %t", got.Empty())
			}
			for _, line := range got.Summary() {
				if strings.Contains(line, "xyz") || strings.Contains(line, "abc") {
					t.Errorf("summary leaks a token: %s", line)
				}
			}
		})
	}
}
