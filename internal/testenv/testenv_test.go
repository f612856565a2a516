package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// namedTB is a test of a given name whose Fatalf ends its goroutine, as
// testing's does, and is recorded.
type namedTB struct {
	testing.TB
	name  string
	fatal string
}

func (n *namedTB) Name() string { return n.name }
func (n *namedTB) Helper()      {}
func (n *namedTB) Fatalf(format string, args ...any) {
	n.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestClaudeBinaryWantsTheMarker: a test that asks for the real CLI under
// a name that `make test-cli` does not select fails at once, naming the
// prefix; one with the prefix (a subtest too) gets the binary.
func TestClaudeBinaryWantsTheMarker(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(bin, nil, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CC_CONNECT_CLAUDE_BIN", bin)
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"TestRealCLIOneTurn", true},
		{"TestRealCLIOneTurn/sub", true},
		{"TestRealOneTurn", false},
		{"TestCapturePlanMode", false},
		{"TestSlackStreamsTheReply", false},
	} {
		tb := &namedTB{TB: t, name: tt.name}
		got := ""
		done := make(chan struct{})
		go func() {
			defer close(done)
			got = ClaudeBinary(tb)
		}()
		<-done
		switch {
		case tt.ok && (tb.fatal != "" || got != bin):
			t.Errorf("%s: ClaudeBinary = %q, failed %q; want the binary", tt.name, got, tb.fatal)
		case !tt.ok && !strings.Contains(tb.fatal, "name it "+RealCLIPrefix):
			t.Errorf("%s: ClaudeBinary = %q, failed %q; want a failure naming %s", tt.name, got, tb.fatal, RealCLIPrefix)
		}
	}
}
