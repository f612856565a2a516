package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorWarnsAboutDangerousSettings: the settings that turn off what
// keeps the agent in check are doctor warnings (check prints the same
// config warnings).
func TestDoctorWarnsAboutDangerousSettings(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	text := `[agent]
allowed_modes = ["default", "bypassPermissions"]
args = ["--permission-mode", "bypassPermissions", "--dangerously-skip-permissions"]
[[platforms]]
name = "local"
type = "local"
[[bindings]]
platform = "local"
workspace = "ws"
allow_users = ["*"]
admins = ["*"]
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, checks := LoadConfig(path)
	if cfg == nil {
		t.Fatalf("config failed: %+v", checks)
	}
	var warns []string
	for _, c := range checks {
		if c.Status == Warn {
			warns = append(warns, c.Detail)
		}
	}
	all := strings.Join(warns, "\n")
	for _, want := range []string{`bindings[0].admins = ["*"]`, `agent.allowed_modes[1] = "bypassPermissions"`,
		"agent.args[0]: --permission-mode bypassPermissions", `agent.args[2] = "--dangerously-skip-permissions"`} {
		if !strings.Contains(all, want) {
			t.Errorf("doctor warnings lack %q:\n%s", want, all)
		}
	}
}

// TestLockCheckLeavesASharedStateDirAlone: doctor takes the state dir
// lock as run would, which creates locks/ in it; in a folder run refuses
// (a shared one), it does not.
func TestLockCheckLeavesASharedStateDirAlone(t *testing.T) {
	cfg, opts := goodConfig(t)
	if err := os.MkdirAll(cfg.State.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg.State.Dir, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	c := find(t, Report{Checks: checkLocks(cfg, opts)}, "state dir lock")
	if c.Status != Fail || !strings.Contains(c.Detail, "not checked") {
		t.Errorf("state dir lock = %+v, want it not taken", c)
	}
	if entries, _ := os.ReadDir(cfg.State.Dir); len(entries) != 0 {
		t.Errorf("doctor wrote into the shared folder: %v", entries)
	}
}
