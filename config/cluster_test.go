package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clusterBase is a Slack binding served by a three-host cluster.
const clusterBase = `
[[platforms]]
name = "slack"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
[[platforms]]
name = "local"
type = "local"
[[bindings]]
platform = "local"
workspace = "ws"
allow_users = ["*"]
`

const clusterTable = `
[cluster]
host = "a"
members = ["a", "b", "c"]
urls = ["nats://n1:4222", "nats://n2:4222", "nats://n3:4222"]
nkey_seed_file = "afile"
replicas = 3
`

const slackBinding = `
[[bindings]]
platform = "slack"
channel = "C1"
workspace = "ws"
allow_users = ["*"]
host = "a"
standby = ["b"]
`

func TestNoClusterTableNoCluster(t *testing.T) {
	t.Parallel()
	cfg, err := load(writeConfig(t, minimal), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster != nil {
		t.Fatalf("a config without [cluster] has one: %+v", cfg.Cluster)
	}
	if strings.Contains(cfg.String(), "[cluster]") {
		t.Error("String() shows a [cluster] table that is not there")
	}
}

func TestClusterLoads(t *testing.T) {
	t.Parallel()
	cfg, err := load(writeConfig(t, clusterBase+clusterTable+slackBinding), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	cl := cfg.Cluster
	if cl == nil || cl.Host != "a" || cl.LeaseTTL.D() != 15*time.Second || cl.Prefix != "cc-connect" || cl.Replicas != 3 {
		t.Fatalf("cluster = %+v", cl)
	}
	if !filepath.IsAbs(cl.NKeySeedFile) {
		t.Errorf("nkey_seed_file not resolved: %q", cl.NKeySeedFile)
	}
	if b := cfg.Bindings[1]; b.Host != "a" || len(b.Standby) != 1 {
		t.Errorf("binding = %+v", b)
	}
	if !cl.Receives("c") {
		t.Error("without cluster.receivers, c does not receive")
	}
	out := cfg.String()
	for _, want := range []string{"[cluster]", `host = "a"`, `standby = ["b"]`, `lease_ttl = "15s"`} {
		if !strings.Contains(out, want) {
			t.Errorf("String() lacks %s:\n%s", want, out)
		}
	}
}

func TestClusterReceiversAndKeysLoad(t *testing.T) {
	t.Parallel()
	text := clusterBase + "[cluster]\nhost = \"a\"\nmembers = [\"a\", \"b\"]\nembedded = true\nnkey_seed_file = \"afile\"\nreceivers = [\"b\"]\n" +
		"embedded_nkeys = { a = \"UAY5LRYUKPWII342JSXBJ5QKTJDHA2ZGYVZH5LK3F7KVIX3CFH3RP6JT\", b = \"UCXHOFU6TO23QJ3IZS56YLN2QOWWBOKXD2SKRE5ABBADVK6USG5EAXVC\" }\n" +
		slackBinding
	cfg, err := load(writeConfig(t, text), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	cl := cfg.Cluster
	if cl.Receives("a") || !cl.Receives("b") || cl.EmbeddedNKeys["b"] != "UCXHOFU6TO23QJ3IZS56YLN2QOWWBOKXD2SKRE5ABBADVK6USG5EAXVC" {
		t.Fatalf("cluster = %+v", cl)
	}
	out := cfg.String()
	for _, want := range []string{`receivers = ["b"]`, `embedded_nkeys = { "a" = "UAY5`, `"b" = "UCXH`} {
		if !strings.Contains(out, want) {
			t.Errorf("String() lacks %s:\n%s", want, out)
		}
	}
}

// TestOtherHostsWorkspaceNeedNotExist: a member that neither owns nor
// stands by for a binding does not have its folder.
func TestOtherHostsWorkspaceNeedNotExist(t *testing.T) {
	t.Parallel()
	text := clusterBase + clusterTable + strings.ReplaceAll(slackBinding, `workspace = "ws"`, `workspace = "/srv/elsewhere"`)
	if _, err := load(writeConfig(t, text), envMap(nil)); err == nil || !strings.Contains(err.Error(), "/srv/elsewhere does not exist") {
		t.Fatalf("the owner's missing workspace: %v", err)
	}
	other := strings.ReplaceAll(text, `host = "a"`+"\nmembers", `host = "c"`+"\nmembers")
	cfg, err := load(writeConfig(t, other), envMap(nil))
	if err != nil {
		t.Fatalf("host c, which does not serve the binding, refused it: %v", err)
	}
	if cfg.Bindings[1].Workspace != "/srv/elsewhere" {
		t.Errorf("workspace = %q", cfg.Bindings[1].Workspace)
	}
}

func TestClusterErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	embedded := clusterBase + "[cluster]\nhost = \"a\"\nmembers = [\"a\", \"b\"]\nembedded = true\nnkey_seed_file = \"afile\"\n"
	tests := []struct {
		name, text, want string
	}{
		{"host without cluster", clusterBase + slackBinding, "bindings[1].host: is set, but there is no [cluster] table"},
		{"empty table", clusterBase + "[cluster]\n", "cluster.host: is required"},
		{"host not a member", clusterBase + strings.Replace(clusterTable, `host = "a"`, `host = "z"`, 1) + slackBinding,
			`cluster.host: "z" is not in cluster.members`},
		{"binding host not a member", clusterBase + clusterTable + strings.Replace(slackBinding, `host = "a"`, `host = "q"`, 1),
			`bindings[1].host: "q" is not in cluster.members`},
		{"binding without host", clusterBase + clusterTable + strings.Replace(slackBinding, `host = "a"`, ``, 1),
			"bindings[1].host: is required with [cluster]"},
		{"standby is host", clusterBase + clusterTable + strings.Replace(slackBinding, `["b"]`, `["a"]`, 1),
			`bindings[1].standby[0]: "a" is the binding's host already`},
		{"standby unknown", clusterBase + clusterTable + strings.Replace(slackBinding, `["b"]`, `["b", "x"]`, 1),
			`bindings[1].standby[1]: "x" is not in cluster.members`},
		{"local binding with host", clusterBase + clusterTable + slackBinding + "[[bindings]]\nplatform = \"local\"\nchannel = \"local\"\nworkspace = \"ws\"\nhost = \"a\"\n",
			"bindings[2].host: the terminal is this host's own"},
		{"ttl too short", clusterBase + clusterTable + "lease_ttl = \"1s\"\n" + slackBinding, "cluster.lease_ttl: 1s is out of range"},
		{"bad ttl", clusterBase + clusterTable + "lease_ttl = \"soon\"\n" + slackBinding, `cluster.lease_ttl: "soon" is not a duration`},
		{"replicas", clusterBase + strings.Replace(clusterTable, "replicas = 3", "replicas = 7", 1) + slackBinding, "cluster.replicas: must be 1 to 5"},
		{"prefix", clusterBase + clusterTable + "prefix = \"a.b\"\n" + slackBinding, `cluster.prefix: "a.b" is not a prefix`},
		{"no urls", clusterBase + "[cluster]\nhost = \"a\"\nmembers = [\"a\"]\n" + slackBinding, "cluster.urls: must name the NATS servers"},
		{"bad url", clusterBase + strings.Replace(clusterTable, "nats://n1:4222", "http://n1", 1) + slackBinding, `cluster.urls[0]: "http://n1" is not a URL`},
		{"creds and seed", clusterBase + clusterTable + "creds_file = \"afile\"\n" + slackBinding, "cluster.nkey_seed_file: set together with cluster.creds_file"},
		{"missing seed file", clusterBase + strings.Replace(clusterTable, `"afile"`, `"nope"`, 1) + slackBinding, "cluster.nkey_seed_file: stat "},
		{"cert without key", clusterBase + clusterTable + "tls_cert = \"afile\"\n" + slackBinding, "cluster.tls_key: tls_cert and tls_key go together"},
		{"embedded key without embedded", clusterBase + clusterTable + "embedded_routes = [\"nats-route://b:6222\"]\n" + slackBinding,
			"cluster.embedded_routes: is only used with embedded = true"},
		{"embedded listener without nkeys", clusterBase + "[cluster]\nhost = \"a\"\nmembers = [\"a\"]\nembedded = true\n" + slackBinding,
			"cluster.embedded_listen: 127.0.0.1:4222 admits anyone"},
		{"bad nkey", embedded + "embedded_nkeys = { a = \"SUAXYZ\" }\n" + slackBinding,
			`cluster.embedded_nkeys.a: "SUAXYZ" is not an NKey user public key`},
		{"nkeys as the list they were", embedded + "embedded_nkeys = [\"UAY5LRYUKPWII342JSXBJ5QKTJDHA2ZGYVZH5LK3F7KVIX3CFH3RP6JT\"]\n" + slackBinding,
			"cluster.embedded_nkeys: is a table of each member's key"},
		{"nkey of a stranger", embedded + "embedded_nkeys = { a = \"UAY5LRYUKPWII342JSXBJ5QKTJDHA2ZGYVZH5LK3F7KVIX3CFH3RP6JT\", z = \"UCXHOFU6TO23QJ3IZS56YLN2QOWWBOKXD2SKRE5ABBADVK6USG5EAXVC\" }\n" + slackBinding,
			`cluster.embedded_nkeys.z: "z" is not in cluster.members`},
		{"one nkey for two members", embedded + "embedded_nkeys = { a = \"UAY5LRYUKPWII342JSXBJ5QKTJDHA2ZGYVZH5LK3F7KVIX3CFH3RP6JT\", b = \"UAY5LRYUKPWII342JSXBJ5QKTJDHA2ZGYVZH5LK3F7KVIX3CFH3RP6JT\" }\n" + slackBinding,
			"cluster.embedded_nkeys.b: is a's key too"},
		{"no nkey for this host", embedded + "embedded_nkeys = { b = \"UAY5LRYUKPWII342JSXBJ5QKTJDHA2ZGYVZH5LK3F7KVIX3CFH3RP6JT\" }\n" + slackBinding,
			`cluster.embedded_nkeys: has no key for this host ("a")`},
		{"a public listener without tls", embedded + "embedded_listen = \"0.0.0.0:4222\"\nembedded_nkeys = { a = \"UAY5LRYUKPWII342JSXBJ5QKTJDHA2ZGYVZH5LK3F7KVIX3CFH3RP6JT\" }\n" + slackBinding,
			"cluster.embedded_listen: 0.0.0.0:4222 is reachable from other hosts without TLS"},
		{"a receiver not a member", clusterBase + clusterTable + "receivers = [\"a\", \"q\"]\n" + slackBinding,
			`cluster.receivers[1]: "q" is not in cluster.members`},
		{"a receiver twice", clusterBase + clusterTable + "receivers = [\"a\", \"a\"]\n" + slackBinding,
			`cluster.receivers[1]: "a" is listed twice`},
		{"remote routes without tls", clusterBase + "[cluster]\nhost = \"a\"\nmembers = [\"a\"]\nembedded = true\nembedded_listen = \"\"\nembedded_cluster_listen = \"0.0.0.0:6222\"\n" + slackBinding,
			"cluster.embedded_cluster_listen: 0.0.0.0:6222 is reachable from other hosts"},
		{"routes without route port", clusterBase + "[cluster]\nhost = \"a\"\nmembers = [\"a\"]\nembedded = true\nembedded_listen = \"\"\nembedded_routes = [\"nats-route://b:6222\"]\n" + slackBinding,
			"cluster.embedded_routes: needs cluster.embedded_cluster_listen"},
		{"duplicate member", clusterBase + strings.Replace(clusterTable, `["a", "b", "c"]`, `["a", "b", "a"]`, 1) + slackBinding,
			`cluster.members[2]: "a" is already cluster.members[0]`},
		{"unknown key", clusterBase + clusterTable + "lease_tll = \"5s\"\n" + slackBinding, "cluster.lease_tll: unknown key (did you mean cluster.lease_ttl?)"},
		{"workspace split", clusterBase + clusterTable + slackBinding + strings.NewReplacer(`"C1"`, `"C2"`, `["b"]`, `["c"]`).Replace(slackBinding),
			"bindings[2].host: bindings[1] names the same workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(writeConfig(t, tt.text), envMap(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestClusterWarnings(t *testing.T) {
	t.Parallel()
	text := clusterBase + strings.NewReplacer("replicas = 3", "replicas = 1", `nkey_seed_file = "afile"`, "").Replace(clusterTable) + slackBinding
	cfg, err := load(writeConfig(t, text), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(cfg.Warnings, "\n")
	for _, want := range []string{"cluster.replicas is 1", "cluster: no credentials"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no warning %q in:\n%s", want, joined)
		}
	}
	// A seed within the agent's reach: no agent.user.
	const reach = "cluster: agent.user is not set, so Claude runs as cc-connect's own user and can read this host's NATS credential"
	cfg, err = load(writeConfig(t, clusterBase+clusterTable+slackBinding), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if joined := strings.Join(cfg.Warnings, "\n"); !strings.Contains(joined, reach) {
		t.Errorf("no warning that the agent can read the seed:\n%s", joined)
	}
	cfg, err = load(writeConfig(t, "[agent]\nuser = \"nobody\"\n"+clusterBase+clusterTable+slackBinding), envMap(nil))
	if err == nil && strings.Contains(strings.Join(cfg.Warnings, "\n"), reach) {
		t.Errorf("the seed warning with agent.user set:\n%s", strings.Join(cfg.Warnings, "\n"))
	}
	// A member the embedded server has no key for.
	cfg, err = load(writeConfig(t, clusterBase+"[cluster]\nhost = \"a\"\nmembers = [\"a\", \"b\"]\nembedded = true\nnkey_seed_file = \"afile\"\n"+
		"embedded_nkeys = { a = \"UAY5LRYUKPWII342JSXBJ5QKTJDHA2ZGYVZH5LK3F7KVIX3CFH3RP6JT\" }\n"+slackBinding), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if joined := strings.Join(cfg.Warnings, "\n"); !strings.Contains(joined, "cluster.embedded_nkeys has no key for b") {
		t.Errorf("no warning for a member without a key:\n%s", joined)
	}
	// A seed file others can read.
	path := writeConfig(t, clusterBase+clusterTable+slackBinding)
	if err := os.Chmod(filepath.Join(filepath.Dir(path), "afile"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = load(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(cfg.Warnings, "\n"), "cluster.nkey_seed_file: ") {
		t.Errorf("no warning for a readable seed file: %q", cfg.Warnings)
	}
}

func TestClusterChangeNeedsRestart(t *testing.T) {
	t.Parallel()
	old, err := load(writeConfig(t, clusterBase+clusterTable+slackBinding), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := load(writeConfig(t, clusterBase+clusterTable+"lease_ttl = \"30s\"\n"+slackBinding), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	ch := Diff(old, cur)
	found := false
	for _, k := range ch.Restart {
		if strings.HasPrefix(k, "cluster") {
			found = true
		}
	}
	if !found {
		t.Errorf("a changed [cluster] is not among the restart keys: %+v", ch)
	}
}
