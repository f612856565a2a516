package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// NeedRoot skips a test that needs root (to start a process as another
// user, to chown) when it does not run as root, or fails it under CI,
// where the tier that runs it runs as root.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if InCI() {
		t.Fatalf("this test needs root (%s), and CI=true: run the tier as root", why)
	}
	t.Skipf("needs root: %s", why)
}

// NeedGit returns the git binary, or skips the test (fails it under CI)
// when git is not installed.
func NeedGit(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err == nil {
		return p
	}
	if InCI() {
		t.Fatalf("git is missing under CI: .ci/run must install it")
	}
	t.Skip("git is not installed")
	return ""
}

// Missing skips a test that cannot run here for want of something the
// machine lacks (a tmpfs mount, the user nobody), or fails it under CI,
// where .ci/run checks that everything is there.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("under CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}
