package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
)

// The service files of contrib/systemd, checked as far as a machine
// without systemd as PID 1 allows: systemd-analyze verify reads them as
// systemd would, and the capabilities the agent-user drop-in keeps are
// given to a real cc-connect running a conversation as another user.

const unitDir = "../../contrib/systemd"

// TestSystemdUnitsVerify: `systemd-analyze verify` accepts both units,
// alone and with the agent-user drop-in, without a single complaint (it
// exits 0 on an unknown key or a bad value and only says so). It reads
// them from a root holding the host's own units and stand-ins for the
// programs they start.
func TestSystemdUnitsVerify(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is missing: .ci/run installs Debian's systemd package")
		}
		t.Skip("systemd-analyze not found (Debian: apt-get install systemd): the units are not verified")
	}
	hostUnits := ""
	for _, d := range []string{"/usr/lib/systemd/system", "/lib/systemd/system"} {
		if _, err := os.Stat(filepath.Join(d, "multi-user.target")); err == nil {
			hostUnits = d
			break
		}
	}
	if hostUnits == "" {
		t.Fatal("systemd-analyze is installed but the host's units (multi-user.target) are not")
	}
	for _, dropIn := range []bool{false, true} {
		t.Run(fmt.Sprintf("agent-user=%t", dropIn), func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			etc := filepath.Join(root, "etc", "systemd", "system")
			for _, d := range []string{filepath.Join(root, "usr", "lib", "systemd"), etc, filepath.Join(root, "usr", "local", "bin"), filepath.Join(root, "bin")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if out, err := exec.Command("cp", "-a", hostUnits, filepath.Join(root, "usr", "lib", "systemd", "system")).CombinedOutput(); err != nil {
				t.Fatalf("copying the host's units: %v\n%s", err, out)
			}
			// verify checks that each command exists and is executable.
			for _, exe := range []string{"usr/local/bin/cc-connect", "bin/kill"} {
				if err := os.WriteFile(filepath.Join(root, exe), []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, unit := range []string{"cc-connect.service", "cc-connect@.service"} {
				copyFile(t, filepath.Join(unitDir, unit), filepath.Join(etc, unit))
				if dropIn {
					copyFile(t, filepath.Join(unitDir, "agent-user.conf"), filepath.Join(etc, unit+".d", "agent-user.conf"))
				}
			}
			cmd := exec.Command(analyze, "verify", "--man=no", "--root="+root, "cc-connect.service", "cc-connect@team-a.service")
			out, err := cmd.CombinedOutput()
			if err != nil || len(out) > 0 {
				t.Errorf("systemd-analyze verify: %v\n%s", err, out)
			}
			if dropIn {
				// The drop-in was read: a key it sets is in force.
				show := exec.Command(analyze, "--root="+root, "cat-config", "systemd/system/cc-connect@.service")
				if out, err := show.CombinedOutput(); err != nil || !strings.Contains(string(out), "CapabilityBoundingSet=CAP_SETUID") {
					t.Errorf("the instance template does not pick up the drop-in: %v\n%s", err, out)
				}
			}
		})
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSystemdUnitsAlike: the instance template is the plain unit with
// the instance name in its paths, so a hardening line added to one is not
// missing from the other.
func TestSystemdUnitsAlike(t *testing.T) {
	t.Parallel()
	body := func(name string) []string {
		data, err := os.ReadFile(filepath.Join(unitDir, name))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(data), "[Unit]\n")
		if !ok {
			t.Fatalf("%s has no [Unit] section", name)
		}
		return strings.Split(rest, "\n")
	}
	plain, template := body("cc-connect.service"), body("cc-connect@.service")
	instance := strings.NewReplacer(
		"Description=cc-connect %i:", "Description=cc-connect:",
		"/etc/cc-connect/%i.toml", "/etc/cc-connect/config.toml",
		"/etc/cc-connect/%i.env", "/etc/cc-connect/env",
		"cc-connect/%i", "cc-connect/state",
		"and %i/ (state.dir)", "and its state/ (state.dir)",
		"reload cc-connect@%i", "reload cc-connect",
	)
	if len(plain) != len(template) {
		t.Fatalf("cc-connect.service has %d lines after [Unit], cc-connect@.service %d", len(plain), len(template))
	}
	for i := range plain {
		if got := instance.Replace(template[i]); got != plain[i] {
			t.Errorf("line %d after [Unit]:\ncc-connect.service:  %s\ncc-connect@.service: %s", i+1, plain[i], template[i])
		}
	}
}

// unitCapabilities reads CapabilityBoundingSet= from a unit file, as
// setpriv spells capabilities (+setuid,+setgid,…).
func unitCapabilities(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var caps []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapabilityBoundingSet="); ok {
			for _, c := range strings.Fields(v) {
				caps = append(caps, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
			}
		}
	}
	if len(caps) == 0 {
		t.Fatalf("%s sets no CapabilityBoundingSet=", path)
	}
	return caps
}

// TestSystemdAgentUserCapabilities: cc-connect as root with exactly the
// capabilities agent-user.conf keeps (and no new privileges) runs a
// conversation as agent.user: the agent starts as nobody and reads the
// large prompt stored for it in its workspace, its temp folder is its own
// (the unit's TMPDIR is cc-connect's), an admin's !sh runs as nobody and
// !stop kills it, !sessions reads the agent's transcripts, and a stop
// leaves no agent process behind.
func TestSystemdAgentUserCapabilities(t *testing.T) {
	t.Parallel()
	needRoot(t)
	needTools(t, "setpriv")
	caps := unitCapabilities(t, filepath.Join(unitDir, "agent-user.conf"))
	w := newAgentWorld(t)
	claude := w.install(t, fakeclaude.Build(t), "claude")
	ccTmp, agentTmp := filepath.Join(w.dir, "cc-tmp"), filepath.Join(w.dir, "agent-tmp")
	if err := os.Mkdir(ccTmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(agentTmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(agentTmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, w.dir, fmt.Sprintf(`
[state]
dir = "state"
[files]
artifact_threshold = "1KiB"
[agent]
command = %q
user = "nobody"
shell_timeout = "10m"
env = { CLAUDE_CONFIG_DIR = %q, TMPDIR = %q }
[[platforms]]
name = "tty"
type = "local"
[[bindings]]
platform = "tty"
workspace = "ws"
allow_users = ["tester"]
admins = ["tester"]
allow_shell = true
`, claude, w.claudeDir, agentTmp))
	args := []string{"--bounding-set=-all," + strings.Join(caps, ","), "--inh-caps=-all", "--no-new-privs", "--",
		w.install(t, buildBinary(t), "cc-connect"), "run", "--config", path}
	p := startBinaryPath(t, "setpriv", []string{"TMPDIR=" + ccTmp}, args...)

	big := `[[EXEC:echo uid=$(id -u); mktemp >/dev/null && echo tmp-ok; head -c 7 .cc-connect/artifacts/*.md; echo; echo end-"turn"]] ` + strings.Repeat("lorem ipsum ", 200)
	p.write(t, big+"\n")
	out := strings.Join(p.waitOut(t, "end-turn"), "\n")
	for _, want := range []string{"uid=65534", "tmp-ok", "[[EXEC:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's reply lacks %q:\n%s", want, out)
		}
	}

	p.write(t, "!sh echo sh-uid=$(id -u) > sh-started; sleep 600; echo not-stopped\n")
	started := filepath.Join(w.ws, "sh-started")
	waitFile(t, "the !sh command to start", func() bool { _, err := os.Stat(started); return err == nil })
	p.write(t, "!stop\n")
	p.waitOut(t, "stopped after") // the command's end: !stop killed it
	if data, err := os.ReadFile(started); err != nil || string(data) != "sh-uid=65534\n" {
		t.Errorf("!sh wrote %q (%v), want it to run as nobody", data, err)
	}

	p.write(t, "!sessions\n")
	p.waitOut(t, "(current)")
	stop(t, p)
	if strings.Contains(p.stderr.String(), "operation not permitted") {
		t.Errorf("cc-connect was refused an operation:\n%s", p.stderr.String())
	}
	// Nothing the agent ran is left: the fake claude and the !sh sleep.
	// (A process killed at the end may take a moment to leave /proc.)
	waitFile(t, "the agent's processes to end", func() bool { return len(nobodysProcesses(t, w.dir)) == 0 })
}

func ownedBy(info os.FileInfo, uid uint32) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uid
}

// nobodysProcesses lists the command lines of nobody's processes that
// mention dir (those this test started).
func nobodysProcesses(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		info, err := os.Stat(filepath.Join("/proc", e.Name()))
		if err != nil || !ownedBy(info, nobody) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if c := strings.ReplaceAll(string(cmdline), "\x00", " "); strings.Contains(c, dir) || strings.HasPrefix(cwd, dir) {
			found = append(found, c)
		}
	}
	return found
}
