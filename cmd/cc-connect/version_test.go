package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadVersion(t *testing.T) {
	t.Parallel()
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "596a22f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7"},
			{Key: "vcs.time", Value: "2026-12-07T12:22:00Z"},
			{Key: "vcs.modified", Value: modified},
		}
	}
	info := func(mainVersion string, settings []debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/cc-connect/cc-connect", Version: mainVersion}, Settings: settings}
	}
	for _, tt := range []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		want    buildVersion
	}{
		{"stamped wins", "v1.2.3", info("v1.2.0", vcs("false")),
			buildVersion{Version: "v1.2.3", Revision: "596a22f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7", Time: "2026-12-07T12:22:00Z"}},
		{"go install @v1.2.0", "", info("v1.2.0", nil), buildVersion{Version: "v1.2.0"}},
		{"go build in a checkout", "", info("v0.0.0-20261207122200-596a22f1c2d3+dirty", vcs("true")),
			buildVersion{Version: "v0.0.0-20261207122200-596a22f1c2d3+dirty", Revision: "596a22f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7", Time: "2026-12-07T12:22:00Z", Modified: true}},
		{"no module version, a commit", "", info("(devel)", vcs("false")),
			buildVersion{Version: "devel-596a22f1c2d3", Revision: "596a22f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7", Time: "2026-12-07T12:22:00Z"}},
		{"no module version, a dirty commit", "", info("(devel)", vcs("true")),
			buildVersion{Version: "devel-596a22f1c2d3+dirty", Revision: "596a22f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7", Time: "2026-12-07T12:22:00Z", Modified: true}},
		{"nothing known", "", info("(devel)", nil), buildVersion{Version: "dev"}},
		{"no build info", "", nil, buildVersion{Version: "dev"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := readVersion(tt.stamped, tt.info); got != tt.want {
				t.Errorf("readVersion = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVersionOutput(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	buildVersion{Version: "v1.2.3", Revision: "596a22f", Time: "2026-12-07T12:22:00Z", Modified: true}.write(&b)
	for _, want := range []string{"cc-connect v1.2.3\n", "commit 596a22f (2026-12-07T12:22:00Z) with uncommitted changes\n", "tested with Claude Code " + claudeCodeVersion + "\n", "built with go"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	buildVersion{Version: "v1.2.0"}.write(&b)
	if strings.Contains(b.String(), "commit") {
		t.Errorf("a version without a commit prints one:\n%s", b.String())
	}
}

// TestVersionOfPlainBuild: `go build` in a clone, with no -ldflags (what
// `go install ./cmd/cc-connect` does), says which commit it is.
func TestVersionOfPlainBuild(t *testing.T) {
	t.Parallel()
	needTools(t, "git")
	dir := t.TempDir()
	snapshotRepo(t, dir)
	bin := filepath.Join(t.TempDir(), "cc-connect")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=true", "-o", bin, "./cmd/cc-connect")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("cc-connect version: %v", err)
	}
	// Go 1.24+ derives a pseudo-version from the commit; the commit line
	// names it in full, with its time.
	want := regexp.MustCompile(`^cc-connect v0\.0\.0-20260102030405-[0-9a-f]{12}\ncommit [0-9a-f]{40} \(2026-01-02T03:04:05Z\)\n`)
	if !want.Match(out) {
		t.Errorf("a plain build's version:\n%s\nwant it to match %s", out, want)
	}
}
