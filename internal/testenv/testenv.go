// Package testenv finds the tools that integration tests need and decides
// whether a missing one skips the test (a developer's machine) or fails it
// (CI, where .ci/run installs everything).
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// RealCLIPrefix starts the name of every test that runs the real claude
// CLI, and only of those.
const RealCLIPrefix = "TestRealCLI"

// ClaudeVersion is the Claude Code CLI version the integration tier pins and
// .ci/run installs.
const ClaudeVersion = "2.1.332"

// WantVersion is the version the real CLI under test should report:
// CC_CONNECT_CLAUDE_VERSION when set (`make test-cli VERSION=x` runs the
// tier against release x), else the pin.
func WantVersion() string {
	if v := os.Getenv("CC_CONNECT_CLAUDE_VERSION"); v != "" {
		return v
	}
	return ClaudeVersion
}

// InCI reports whether the tests run under CI (CI=true), where a missing
// tool is a failure, not a skip.
func InCI() bool {
	v := os.Getenv("CI")
	return v == "true" || v == "1"
}

// RepoRoot returns the module root, found from this source file.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// ClaudeBinary returns the real claude CLI for integration tests: the
// CC_CONNECT_CLAUDE_BIN environment variable, else the copy that `make
// tools` installs under .tools/, else `claude` on PATH. When none is found
// it skips the test, or fails it under CI.
//
// A test that runs the real CLI must be named TestRealCLI…: `make test-cli`
// selects the tier by that prefix alone (-run '^TestRealCLI'), so a test
// named otherwise would silently leave the tier. ClaudeBinary fails such a
// test. Benchmarks are not selected by -run and keep their names.
func ClaudeBinary(t testing.TB) string {
	t.Helper()
	if _, bench := t.(*testing.B); !bench && !strings.HasPrefix(t.Name(), RealCLIPrefix) {
		t.Fatalf("%s runs the real claude CLI: name it %s… so that `make test-cli` (-run '^%s') selects it", t.Name(), RealCLIPrefix, RealCLIPrefix)
	}
	if p := os.Getenv("CC_CONNECT_CLAUDE_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CC_CONNECT_CLAUDE_BIN=%s: %v", p, err)
		}
		return p
	}
	local := filepath.Join(RepoRoot(), ".tools", "claude-code", "node_modules", ".bin", "claude")
	if _, err := os.Stat(local); err == nil {
		return local
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	if InCI() {
		t.Fatalf("the real claude CLI is missing under CI: .ci/run must install @anthropic-ai/claude-code@%s into .tools/claude-code", ClaudeVersion)
	}
	t.Skipf("real claude CLI not found; run `make tools` (installs @anthropic-ai/claude-code@%s into .tools/) or set CC_CONNECT_CLAUDE_BIN", ClaudeVersion)
	return ""
}

// HangLimit is how long a test waits for something that should come before
// it calls it a hang: what is left of the test binary's -timeout, less a
// margin to report the hang and clean up, and never less than floor. A
// fixed limit fails on a machine that is only slow (`make stress`: the race
// detector, CPU hogs and every package at once make a 10 MiB line or a real
// CLI turn take many times its usual time), while the binary's own deadline
// is the budget the run was given. Without a deadline (-timeout 0) it is
// floor.
func HangLimit(t interface{ Deadline() (time.Time, bool) }, floor time.Duration) time.Duration {
	deadline, ok := t.Deadline()
	if !ok {
		return floor
	}
	left := time.Until(deadline)
	margin := max(left/10, 5*time.Second)
	return max(left-margin, floor)
}

// WaitFor waits until cond holds or limit passes, checking it again each
// time the channel changed returns is closed (a fake server closes and
// replaces it on every change). changed is read before cond, so that a
// change between the two is not missed. who names the waiter in the
// failure.
func WaitFor(tb testing.TB, limit time.Duration, who, what string, changed func() <-chan struct{}, cond func() bool) {
	tb.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		ch := changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			tb.Fatalf("%s: timed out after %s waiting for %s", who, limit, what)
		}
	}
}

// Chromium returns the browser the console's tests drive: the
// CC_CONNECT_CHROMIUM environment variable, else Debian's chromium on
// PATH (.ci/run installs it). When none is found it skips the test, or
// fails it under CI.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CC_CONNECT_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CC_CONNECT_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if InCI() {
		t.Fatal("chromium is missing under CI: .ci/run must install Debian's chromium")
	}
	t.Skip("chromium not found; apt-get install chromium, or set CC_CONNECT_CHROMIUM")
	return ""
}
