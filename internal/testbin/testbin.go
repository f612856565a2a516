// Package testbin builds this module's programs for tests that run them as
// processes (the cc-connect binary, the fake claude). Each build happens
// once per test process, into a private temp dir, so packages whose tests
// run in parallel never share a half-written binary; the go build cache
// makes the repeat builds in other test processes cheap. It is for tests
// only and owns nothing else.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// build is one binary, built at most once.
type build struct {
	once sync.Once
	path string
	err  error
}

var (
	mu     sync.Mutex // guards builds
	builds = map[string]*build{}
)

// Build compiles the main package pkg (relative to the module root, like
// "./cmd/cc-connect") into a binary called name, passing flags to go build,
// once per test process for each distinct pkg, name and flags, and returns
// the binary's path. It fails tb when the build fails.
func Build(tb testing.TB, pkg, name string, flags ...string) string {
	tb.Helper()
	key := strings.Join(append([]string{pkg, name}, flags...), "\x00")
	mu.Lock()
	b, ok := builds[key]
	if !ok {
		b = &build{}
		builds[key] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(pkg, name, flags) })
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

func goBuild(pkg, name string, flags []string) (string, error) {
	dir, err := os.MkdirTemp("", "testbin-")
	if err != nil {
		return "", fmt.Errorf("creating build dir: %w", err)
	}
	bin := filepath.Join(dir, name)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	args := append(append([]string{"build"}, flags...), "-o", bin, pkg)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// moduleRoot is found from this source file, so the build works from any
// package's test directory.
func moduleRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}
