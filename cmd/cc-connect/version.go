package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is stamped by `make build` and `make release`:
// go build -ldflags "-X main.version=v1.2.3". Left empty, the version comes
// from the build information the Go toolchain records (readVersion), so a
// binary from `go install …@latest` or a plain `go build` still says what
// it is built from. After init it holds the resolved version, which the
// start-up log and the cluster's host status show.
var version string

// built is this binary's version, resolved once at start.
var built buildVersion

func init() {
	info, _ := debug.ReadBuildInfo()
	built = readVersion(version, info)
	version = built.Version
}

// claudeCodeVersion is the Claude Code CLI release this cc-connect is
// tested against (the integration tier pins the same one).
const claudeCodeVersion = "2.1.332"

// buildVersion is what this binary says it is: the stamped version, else
// the module version (`go install …@v1.2.3`, or the pseudo-version Go 1.24+
// derives from the checkout), else the commit it was built from, else
// "dev".
type buildVersion struct {
	Version  string // v1.2.3, v0.0.0-20261207…-596a22f1c2d3+dirty, or "dev"
	Revision string // the VCS commit, when recorded
	Time     string // the commit's time (RFC 3339), when recorded
	Modified bool   // built from a tree with uncommitted changes
}

// readVersion resolves the version from the stamp and the build info
// (nil when the binary has none).
func readVersion(stamped string, info *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: stamped}
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		// "(devel)" is what the toolchain records when it knows no
		// version (-buildvcs=false, or a tree outside version control).
		if v.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v.Version = info.Main.Version
		}
	}
	if v.Version == "" && v.Revision != "" {
		v.Version = "devel-" + short(v.Revision)
		if v.Modified {
			v.Version += "+dirty"
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	return v
}

// write prints what `cc-connect version` shows.
func (v buildVersion) write(w io.Writer) {
	fmt.Fprintf(w, "cc-connect %s\n", v.Version)
	if v.Revision != "" {
		line := "commit " + v.Revision
		if v.Time != "" {
			line += " (" + v.Time + ")"
		}
		if v.Modified {
			line += " with uncommitted changes"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "tested with Claude Code %s\nbuilt with %s for %s/%s\n", claudeCodeVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
