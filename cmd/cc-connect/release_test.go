package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// makeEnv is this process's environment without what would override the
// Makefile's own reading of the checkout (a VERSION exported, or passed to
// an enclosing make such as `make test-cli VERSION=…`).
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "VERSION", "SOURCE_DATE_EPOCH", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// TestReleaseReproducible: `make release` from two copies of one commit,
// at different paths, at different times and under different umasks,
// writes the same archives byte for byte, each holding the binary,
// LICENSE, README.md, CHANGELOG.md and the service files with the
// commit's time.
func TestReleaseReproducible(t *testing.T) {
	t.Parallel()
	if os.Getenv("CC_RELEASE_TEST") != "1" {
		// Minutes of cross-compiling on a cold cache: `make test` runs it
		// on its own, through `make release-check`, which sets the variable.
		t.Skip("cross-builds four binaries twice: run `make release-check` (or set CC_RELEASE_TEST=1)")
	}
	needTools(t, "make", "git", "tar", "gzip", "sha256sum")
	// The targets built: a release's four, or those CC_RELEASE_PLATFORMS
	// names (make test builds this machine's alone).
	platforms := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}
	if p := strings.Fields(os.Getenv("CC_RELEASE_PLATFORMS")); len(p) > 0 {
		platforms = p
		slices.Sort(platforms)
	}
	base := t.TempDir()
	var sums [2]string
	var dist string
	for i, c := range []struct{ dir, umask string }{{"one", "022"}, {"another/place", "077"}} {
		dir := filepath.Join(base, c.dir)
		snapshotRepo(t, dir)
		cmd := exec.Command("/bin/sh", "-c", `umask "$0" && exec make --no-print-directory release RELEASE_PLATFORMS="$1"`,
			c.umask, strings.Join(platforms, " "))
		cmd.Dir = dir
		cmd.Env = makeEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make release in %s: %v\n%s", dir, err, out)
		}
		data, err := os.ReadFile(filepath.Join(dir, "dist", "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		sums[i], dist = string(data), filepath.Join(dir, "dist")
	}
	if sums[0] != sums[1] {
		t.Errorf("two release builds of one commit differ:\n%s\n%s", sums[0], sums[1])
	}

	rev, err := exec.Command("git", "-C", dist, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(rev))
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(sums[1]), "\n") {
		_, name, _ := strings.Cut(line, "  ")
		names = append(names, name)
	}
	var want []string
	for _, p := range platforms {
		want = append(want, "cc-connect_"+version+"_"+strings.ReplaceAll(p, "/", "_")+".tar.gz")
	}
	if !slices.Equal(names, want) {
		t.Fatalf("SHA256SUMS names %q, want %q", names, want)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dist
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}

	for _, name := range want {
		prefix := strings.TrimSuffix(name, ".tar.gz") + "/"
		files := readArchive(t, filepath.Join(dist, name))
		var got []string
		for _, f := range files {
			got = append(got, f.name)
			if !f.modTime.Equal(snapshotTime) || f.uid != 0 || f.gid != 0 {
				t.Errorf("%s: %s has time %s, owner %d:%d; want the commit's time and 0:0", name, f.name, f.modTime, f.uid, f.gid)
			}
		}
		if w := []string{prefix, prefix + "CHANGELOG.md", prefix + "LICENSE", prefix + "README.md", prefix + "cc-connect",
			prefix + "contrib/", prefix + "contrib/systemd/", prefix + "contrib/systemd/agent-user.conf",
			prefix + "contrib/systemd/cc-connect.service", prefix + "contrib/systemd/cc-connect@.service"}; !slices.Equal(got, w) {
			t.Errorf("%s holds %q, want %q", name, got, w)
		}
		for _, f := range files {
			if f.name == prefix+"cc-connect" && f.mode != 0o755 || f.name == prefix+"LICENSE" && f.mode != 0o644 {
				t.Errorf("%s: %s has mode %04o", name, f.name, f.mode)
			}
		}
		// The binary for this machine says which commit it is.
		if strings.HasSuffix(prefix, "_"+runtime.GOOS+"_"+runtime.GOARCH+"/") {
			bin := filepath.Join(t.TempDir(), "cc-connect")
			for _, f := range files {
				if f.name == prefix+"cc-connect" {
					if err := os.WriteFile(bin, f.data, 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			out, err := exec.Command(bin, "version").Output()
			if err != nil || !strings.HasPrefix(string(out), "cc-connect "+version+"\n") {
				t.Errorf("%s version: %v\n%s", name, err, out)
			}
		}
	}
}

type archived struct {
	name     string
	mode     int64
	modTime  time.Time
	uid, gid int
	data     []byte
}

// readArchive returns a .tar.gz's entries in their order.
func readArchive(t *testing.T, path string) []archived {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var files []archived
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		files = append(files, archived{h.Name, h.Mode & 0o7777, h.ModTime, h.Uid, h.Gid, data})
	}
}
