package testbin

import (
	"os"
	"strings"
	"testing"
)

func TestBuildOncePerFlags(t *testing.T) {
	a := Build(t, "./internal/fakeclaude/cmd/fakeclaude", "claude")
	if again := Build(t, "./internal/fakeclaude/cmd/fakeclaude", "claude"); again != a {
		t.Errorf("second Build = %s, want the first build %s", again, a)
	}
	if other := Build(t, "./internal/fakeclaude/cmd/fakeclaude", "claude", "-trimpath"); other == a {
		t.Errorf("Build with other flags reused %s", a)
	}
	fi, err := os.Stat(a)
	if err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("built binary %s: %v, mode %v", a, err, fi)
	}
	if !strings.HasSuffix(a, "/claude") {
		t.Errorf("binary %s is not named claude", a)
	}
}

func TestBuildFailureNamesThePackage(t *testing.T) {
	_, err := goBuild("./internal/testbin/no-such-package", "x", nil)
	if err == nil || !strings.Contains(err.Error(), "no-such-package") {
		t.Fatalf("goBuild of a missing package = %v, want an error naming it", err)
	}
}
