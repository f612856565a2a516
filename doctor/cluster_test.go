package doctor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cc-connect/cc-connect/agentcfg"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// clusterConfig loads a cluster host's config whose NKey seed file has
// mode perm, with agent.user set to agentUser ("" for none).
func clusterConfig(t *testing.T, perm os.FileMode, agentUser string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	seed := filepath.Join(dir, "nats.seed")
	if err := os.WriteFile(seed, []byte("SUAEXAMPLEONLY\n"), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(seed, perm); err != nil {
		t.Fatal(err)
	}
	text := `
[agent]
user = "` + agentUser + `"
[cluster]
host = "a"
members = ["a"]
urls = ["nats://127.0.0.1:4222"]
nkey_seed_file = "nats.seed"
[[platforms]]
name = "s"
type = "slack"
bot_token = "xoxb-1"
app_token = "xapp-1"
[[bindings]]
platform = "s"
workspace = "ws"
allow_users = ["*"]
host = "a"
`
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// nobody must reach the folder through t.TempDir's private parent.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func clusterSeedCheck(t *testing.T, cfg *config.Config) *Check {
	t.Helper()
	agent := agentcfg.From(cfg)
	return checkClusterSeed(context.Background(), cfg, agent, agentproc.BuildEnv(os.Environ(), agent))
}

// TestClusterSeedCheck: doctor warns when the agent can read this host's
// NATS seed: always without agent.user (the agent is cc-connect's own
// user), and with it when the kernel lets that user read the file.
func TestClusterSeedCheck(t *testing.T) {
	c := clusterSeedCheck(t, clusterConfig(t, 0o600, ""))
	if c == nil {
		t.Fatal("no cluster credential check on a cluster host")
	}
	wantCheck(t, *c, Warn, "the agent runs as cc-connect's own user")
	wantCheck(t, *c, Warn, "cluster.nkey_seed_file (")
	if c := clusterSeedCheck(t, &config.Config{}); c != nil {
		t.Errorf("a check without [cluster]: %+v", c)
	}
	testenv.NeedRoot(t, "checking as another user")
	for _, tt := range []struct {
		perm   os.FileMode
		status Status
		detail string
	}{
		{0o600, OK, "nobody (uid 65534) cannot read"},
		{0o644, Warn, "nobody (uid 65534) can read cluster.nkey_seed_file"},
	} {
		c := clusterSeedCheck(t, clusterConfig(t, tt.perm, "nobody"))
		wantCheck(t, *c, tt.status, tt.detail)
	}
}
