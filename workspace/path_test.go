package workspace

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNormalizeMakesOneKeyPerFolder(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.MkdirAll(filepath.Join(real, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	want := Normalize(real, nil)
	if r, err := filepath.EvalSymlinks(real); err != nil || want != r {
		t.Fatalf("Normalize(%q) = %q, want the resolved path %q (%v)", real, want, r, err)
	}
	tests := []struct {
		name, in string
	}{
		{"plain", real},
		{"trailing slash", real + "/"},
		{"dot-dot segment", filepath.Join(real, "sub") + "/.."},
		{"double slash", root + "//real"},
		{"symlink", filepath.Join(root, "link")},
		{"symlink with trailing slash", filepath.Join(root, "link") + "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Normalize(tt.in, nil); got != want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, want)
			}
		})
	}
}

func TestNormalizeKeepsCleanedPathWhenMissing(t *testing.T) {
	root := t.TempDir()
	resolvedRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	in := resolvedRoot + "/not/yet/../there/"
	want := filepath.Join(resolvedRoot, "not", "there")
	if got := Normalize(in, nil); got != want {
		t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
	}
}

func TestNormalizeExpandsHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	resolved, err := filepath.EvalSymlinks(home)
	if err != nil {
		t.Fatal(err)
	}
	if got := Normalize("~", nil); got != resolved {
		t.Errorf("Normalize(~) = %q, want %q", got, resolved)
	}
	if got := Normalize("~/proj", nil); got != filepath.Join(resolved, "proj") {
		t.Errorf("Normalize(~/proj) = %q, want %q", got, filepath.Join(resolved, "proj"))
	}
}

func TestNormalizeMakesRelativeAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := Normalize(".", nil); got != resolved {
		t.Errorf("Normalize(.) = %q, want %q", got, resolved)
	}
}

func TestNormalizeLogsOnlyWhenItChangedThePath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in      string
		wantLog bool
	}{
		{dir, false},
		{dir + "/", true},
		{dir + "/sub/..", true},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		got := Normalize(tt.in, log)
		logged := strings.Contains(buf.String(), `"msg":"workspace path normalized"`)
		if logged != tt.wantLog {
			t.Errorf("Normalize(%q): logged %v, want %v (%s)", tt.in, logged, tt.wantLog, buf.String())
		}
		if tt.wantLog && (!strings.Contains(buf.String(), `"original":"`+tt.in+`"`) || !strings.Contains(buf.String(), `"normalized":"`+got+`"`)) {
			t.Errorf("log %s lacks original %q and normalized %q", buf.String(), tt.in, got)
		}
	}
}
