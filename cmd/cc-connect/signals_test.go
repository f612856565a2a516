package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRunReloadsOnSIGHUP sends the binary a real SIGHUP, as the documented
// `ExecReload=/bin/kill -HUP $MAINPID` does. The config path is a symlink
// into another folder and the edit is made there, so the file watcher (which
// watches the symlink's folder) cannot see it: only the signal can apply it.
// Without a handler, SIGHUP's default action would kill the daemon.
func TestRunReloadsOnSIGHUP(t *testing.T) {
	t.Parallel()
	real := setup(t, "")
	dir := filepath.Dir(real)
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	// Absolute paths: relative ones would resolve against the link's folder.
	orig := strings.NewReplacer(`workspace = "ws"`, `workspace = "`+filepath.Join(dir, "ws")+`"`,
		`dir = "state"`, `dir = "`+filepath.Join(dir, "state")+`"`).Replace(string(data))
	writeFile(t, real, orig)
	link := filepath.Join(t.TempDir(), "config.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}

	p := startBinary(t, "run", "--config", link)
	p.waitErr(t, "Watching the config file")
	writeFile(t, real, strings.Replace(orig, `allow_users = ["*"]`, `allow_users = ["somebody-else"]`, 1))
	// Answered in order after the edit: had the watcher seen it, this
	// would be refused.
	p.write(t, "before the signal\n")
	p.waitOut(t, "echo: before the signal")

	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitErr(t, "Config change applied")
	p.write(t, "after the signal\n")
	out := p.waitOut(t, "not allowed")
	p.stdin.Close()
	if code := p.exitCode(t); code != exitOK {
		t.Fatalf("exit code %d after SIGHUP and end of input, want %d (stderr:\n%s)", code, exitOK, p.stderr.String())
	}
	for line := range p.out {
		out = append(out, line)
	}
	if strings.Contains(strings.Join(out, "\n"), "echo: after the signal") {
		t.Error("a user removed from allow_users by the SIGHUP reload reached the agent")
	}
}

// TestRunSignalLetsTheRunningTurnFinish: SIGTERM (systemd's stop) and
// SIGINT (Ctrl-C) shut down gracefully: a turn running when the signal
// arrives still delivers its reply, and the exit code is 0.
func TestRunSignalLetsTheRunningTurnFinish(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			release := filepath.Join(t.TempDir(), "release")
			t.Cleanup(func() { os.WriteFile(release, nil, 0o600) })
			p := startBinary(t, "run", "--config", setup(t, `shutdown_grace = "1h"`, `FAKECLAUDE_RELEASE = "`+release+`"`))
			p.write(t, "slow one [[SLOW]]\n")
			p.waitErr(t, "Agent process started")
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			p.waitErr(t, "Shutting down")
			if err := os.WriteFile(release, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			p.waitOut(t, "[chunk 0]") // the [[SLOW]] turn's reply
			if code := p.exitCode(t); code != exitOK {
				t.Fatalf("exit code %d, want %d (stderr:\n%s)", code, exitOK, p.stderr.String())
			}
		})
	}
}

// TestRunWarnsOfAnUntestedCLI: `run` logs once when agent.command is not
// the tested Claude Code release, and not when it is.
func TestRunWarnsOfAnUntestedCLI(t *testing.T) {
	t.Parallel()
	const warning = "Claude Code CLI is not the tested version"
	for _, tc := range []struct {
		name, env, want string
	}{
		{"untested", `FAKECLAUDE_VERSION = "2.1.300"`, warning},
		{"tested", "", "Claude Code CLI is the tested version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var extra []string
			if tc.env != "" {
				extra = append(extra, tc.env)
			}
			p := startBinary(t, "run", "--config", setup(t, "", extra...))
			p.waitErr(t, tc.want)
			p.write(t, "hi\n")
			p.waitOut(t, "echo: hi")
			p.stdin.Close()
			if code := p.exitCode(t); code != exitOK {
				t.Fatalf("exit code %d", code)
			}
			stderr := p.stderr.String()
			if n := strings.Count(stderr, warning); n != strings.Count(tc.want, warning) {
				t.Errorf("%d warnings, want %d:\n%s", n, strings.Count(tc.want, warning), stderr)
			}
			if tc.env != "" && !strings.Contains(stderr, "2.1.300 at ") {
				t.Errorf("the warning does not name the installed version:\n%s", stderr)
			}
		})
	}
}
