package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testlog"
)

// reloadClusterBase is reloadBase on a cluster host: host a owns both
// bindings (of one workspace), b stands by for them.
var reloadClusterBase = `
[cluster]
host = "a"
members = ["a", "b"]
urls = ["nats://127.0.0.1:4222"]
` + strings.ReplaceAll(reloadBase, "workspace = \"ws\"\n", "workspace = \"ws\"\nhost = \"a\"\nstandby = [\"b\"]\n")

// TestReloadOnAClusterHost: a cluster host applies a reload's rights
// (allow lists, admins, approvers, allow_shell) and the binding's other
// keys at once, as a host alone does, and holds until a restart what
// every host must route alike: the [cluster] table, the platforms, which
// bindings exist, and a binding's platform, channel, workspace, host and
// standby.
func TestReloadOnAClusterHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(string) string
		held  []string // the keys logged as held; nil: nothing held
		apply bool     // the engine is reloaded
		check func(t *testing.T, r engine.Reload)
	}{
		{
			name: "an admin taken out of admins and allow_users",
			edit: func(s string) string {
				s = strings.Replace(s, `allow_users = ["alice"]`, `allow_users = ["bob"]`, 1)
				return strings.Replace(s, `admins = ["alice"]`, `admins = ["bob"]`, 1)
			},
			apply: true,
			check: func(t *testing.T, r engine.Reload) {
				if b := r.Bindings[0]; fmt.Sprint(b.AllowUsers, b.Admins) != "[bob] [bob]" {
					t.Errorf("bindings[0] allow_users %v, admins %v; want bob alone", b.AllowUsers, b.Admins)
				}
			},
		},
		{
			name: "approvers and allow_shell",
			edit: func(s string) string {
				return strings.Replace(s, `admins = ["alice"]`, "admins = [\"alice\"]\napprovers = [\"alice\"]\nallow_shell = true", 1)
			},
			apply: true,
			check: func(t *testing.T, r engine.Reload) {
				if b := r.Bindings[0]; fmt.Sprint(b.Approvers) != "[alice]" || !b.AllowShell {
					t.Errorf("bindings[0] approvers %v, allow_shell %v", b.Approvers, b.AllowShell)
				}
			},
		},
		{
			name: "a workspace moved and an admin taken away in one save: the rights apply, the workspace waits",
			edit: func(s string) string {
				s = strings.Replace(s, `workspace = "ws"`, `workspace = "ws2"`, 1)
				return strings.Replace(s, `admins = ["alice"]`, `admins = []`, 1)
			},
			held:  []string{"bindings[0].workspace"},
			apply: true,
			check: func(t *testing.T, r engine.Reload) {
				b := r.Bindings[0]
				if len(b.Admins) != 0 {
					t.Errorf("admins %v: the rights change was held with the workspace", b.Admins)
				}
				if !strings.HasSuffix(b.Workspace, "/ws") {
					t.Errorf("workspace %s: a routing key was applied", b.Workspace)
				}
			},
		},
		{
			name: "host and standby",
			edit: func(s string) string {
				return strings.ReplaceAll(s, `standby = ["b"]`, `standby = []`)
			},
			held: []string{"bindings[0].standby", "bindings[1].standby"},
		},
		{
			name: "a binding added",
			edit: func(s string) string {
				return s + "\n[[bindings]]\nplatform = \"tg\"\nchannel = \"C9\"\nworkspace = \"ws2\"\nallow_users = [\"*\"]\nhost = \"a\"\n"
			},
			held: []string{"bindings[2] (tg/C9 added)"},
		},
		{
			name: "a binding removed, the other's allow list changed",
			edit: func(s string) string {
				s = strings.Replace(s, `allow_users = ["alice"]`, `allow_users = ["alice", "bob"]`, 1)
				return s[:strings.LastIndex(s, "[[bindings]]")]
			},
			held:  []string{"bindings[1] (tg2/* removed)"},
			apply: true,
			check: func(t *testing.T, r engine.Reload) {
				if len(r.Bindings) != 2 || len(r.Bindings[0].AllowUsers) != 2 {
					t.Errorf("bindings %+v: want both, the first with bob", r.Bindings)
				}
			},
		},
		{
			name: "a platform's token",
			edit: func(s string) string { return strings.Replace(s, `"111:aaa`, `"111:new`, 1) },
			held: []string{"platforms"},
		},
		{
			name: "the cluster table",
			edit: func(s string) string {
				return strings.Replace(s, `members = ["a", "b"]`, `members = ["a", "b", "c"]`, 1)
			},
			held: []string{"cluster"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := uniqueTokens(t, reloadClusterBase)
			r, ft, logs, path := newTestReloader(t, base)
			writeFile(t, path, uniqueTokens(t, tt.edit(base)))
			r.reload(context.Background(), "test")
			if errs := logs.Records("Config reload failed; the running config stays"); len(errs) > 0 {
				t.Fatalf("the edit does not load: %v", errs)
			}
			reloads, _ := ft.snapshot()
			if got := len(reloads) == 1; got != tt.apply {
				t.Fatalf("%d engine reloads, want applied = %v", len(reloads), tt.apply)
			}
			if got := heldKeys(logs); fmt.Sprint(got) != fmt.Sprint(tt.held) {
				t.Errorf("held %v, want %v", got, tt.held)
			}
			if len(reloads) == 1 {
				if len(reloads[0].Adapters) != 0 || len(reloads[0].Remove) != 0 {
					t.Errorf("adapters rebuilt or removed on a cluster host: %+v", reloads[0])
				}
				if tt.check != nil {
					tt.check(t, reloads[0])
				}
			}
			// The next reload compares with what runs now: the held
			// change is reported again, and nothing else applies.
			r.reload(context.Background(), "again")
			if again, _ := ft.snapshot(); len(again) != len(reloads) {
				t.Errorf("an unchanged file reloaded the engine again")
			}
			if tt.held != nil && len(logs.Records("Config change held until a restart")) != 2 {
				t.Errorf("the held change was not reported again")
			}
		})
	}
}

// heldKeys are the keys the reloads logged as held, in order.
func heldKeys(logs *testlog.Buffer) []string {
	recs := logs.Records("Config change held until a restart")
	if len(recs) == 0 {
		return nil
	}
	var out []string
	for _, k := range recs[0]["keys"].([]any) {
		out = append(out, k.(string))
	}
	return out
}

// TestClusterReloadTakesRightsAway: on a running cluster host, an admin
// taken out of admins and allow_users by a reload cannot run !sh at the
// next message, and the new admin can, while the workspace moved in the
// same save stays where it was until a restart.
func TestClusterReloadTakesRightsAway(t *testing.T) {
	t.Parallel()
	srv := clustertest.Single(t)
	f := fakeslack.New(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws2"), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := fmt.Sprintf("[agent]\ncommand = %q\nenv = { CLAUDE_CONFIG_DIR = %q }\n", fakeclaude.Build(t), filepath.Join(dir, "claude-config"))
	const binding = `
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["U1", "U2"]
admins = ["U1"]
allow_shell = true
host = "a"
`
	m := newClusterMemberWith(t, dir, "a", []string{srv.ClientURL()}, f, agent, 1, binding)
	m.start(t)
	m.p.waitErr(t, "Serving the binding")
	f.WaitConn(t, 1)

	// sh runs `!sh echo $((n*n))<tag>` as user in a thread of its own and
	// returns the thread; the output (n², then the tag) is not in the
	// command's text, so a post holding it is the command's output.
	sh := func(ts, user string, n int, tag string) string {
		f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, user, fmt.Sprintf("<@UBOT> !sh echo $((%d*%d))%s", n, n, tag), nil))
		return ts
	}
	out := func(ts, want string) bool {
		for _, p := range f.Posts() {
			if p.ThreadTS == ts && strings.Contains(p.Text, want) {
				return true
			}
		}
		return false
	}
	ts := sh("1700000001.000100", "U1", 6, "before")
	f.Wait(t, "U1's !sh output before the reload", func() bool { return out(ts, "36before") })

	data, err := os.ReadFile(m.config)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.NewReplacer(`allow_users = ["U1", "U2"]`, `allow_users = ["U2"]`, `admins = ["U1"]`, `admins = ["U2"]`,
		`workspace = "ws"`, `workspace = "ws2"`).Replace(string(data))
	writeFile(t, m.config, edited)
	m.p.waitErr(t, "Config change applied")
	if s := m.p.stderr.String(); !strings.Contains(s, "Config change held until a restart") || !strings.Contains(s, "bindings[0].workspace") {
		t.Errorf("the moved workspace was not reported as held:\n%s", strings.Join(m.logsAbout("held"), "\n"))
	}

	refused := sh("1700000002.000100", "U1", 7, "after")
	f.WaitPost(t, "the refusal of the removed admin", func(p fakeslack.Message) bool {
		return p.ThreadTS == refused && strings.Contains(p.Text, "not allowed")
	})
	allowed := sh("1700000003.000100", "U2", 8, "newadmin")
	f.Wait(t, "the new admin's !sh output", func() bool { return out(allowed, "64newadmin") })
	if out(refused, "49after") {
		t.Error("an admin removed by the reload ran !sh")
	}
	// The new admin's command ran in the workspace as started.
	cwd := sh("1700000004.000100", "U2", 9, "-$(basename $PWD)")
	f.Wait(t, "pwd", func() bool { return out(cwd, "81-ws") })
	if out(cwd, "81-ws2") {
		t.Error("the workspace moved by a reload on a cluster host")
	}
}
