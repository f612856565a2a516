package agentproc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Vectors from PROTOCOL.md §6, seen from the real CLI 2.1.328.
func TestProjectSlug(t *testing.T) {
	long := "/home/dev/work/" + strings.Repeat("L", 230)
	tests := []struct {
		name, path, want string
	}{
		{"dots and underscores", "/home/dev/work/my_proj.v2", "-home-dev-work-my-proj-v2"},
		{"case kept, punctuation", "/home/dev/work/My Proj@v2+x~y#z", "-home-dev-work-My-Proj-v2-x-y-z"},
		{"runs not merged", "/home/dev/work/a.b_c-d=e,f(g)", "-home-dev-work-a-b-c-d-e-f-g-"},
		{"non-ASCII letters", "/home/dev/work/ünï_cødé", "-home-dev-work--n--c-d-"},
		{"surrogate pair gives two dashes", "/home/dev/work/emoji😀x", "-home-dev-work-emoji--x"},
		{"symlink target", "/home/dev/work/real_target", "-home-dev-work-real-target"},
		{"empty", "", ""},
		{"over 200 chars", long, "-home-dev-work-" + strings.Repeat("L", 200-15) + "-90luwz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ProjectSlug(tt.path)
			if got != tt.want {
				t.Errorf("ProjectSlug(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
	if got := len(ProjectSlug(long)); got != 207 {
		t.Errorf("long slug has %d chars, want 207", got)
	}
}

func TestProjectSlugExactly200IsKept(t *testing.T) {
	p := "/" + strings.Repeat("a", 199)
	if got := ProjectSlug(p); got != "-"+strings.Repeat("a", 199) {
		t.Errorf("200-unit path was changed: %q", got)
	}
	// One more unit crosses the limit and gets the hash suffix.
	p201 := p + "b"
	got := ProjectSlug(p201)
	if !strings.HasPrefix(got, "-"+strings.Repeat("a", 199)+"-") || len(got) <= 201 {
		t.Errorf("201-unit path: %q", got)
	}
}

func TestJavaHash(t *testing.T) {
	// Values of Java's String.hashCode.
	tests := []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"hello", 99162322},
		{"polygenelubricants", -2147483648},
		{"Aa", 2112},
		{"BB", 2112},
	}
	for _, tt := range tests {
		if got := javaHash(utf16Units(tt.s)); got != tt.want {
			t.Errorf("javaHash(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
	if got := absInt32(-2147483648); got != 2147483648 {
		t.Errorf("absInt32(MinInt32) = %d", got)
	}
}

func utf16Units(s string) []uint16 {
	var out []uint16
	for _, r := range s {
		out = append(out, uint16(r))
	}
	return out
}

func TestConfigDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	tests := []struct {
		name    string
		env     map[string]string
		procEnv string
		want    string
	}{
		{"default under home", nil, "", filepath.Join(home, ".claude")},
		{"agent env wins", map[string]string{"CLAUDE_CONFIG_DIR": "/x/agent"}, "/x/proc", "/x/agent"},
		{"process env next", map[string]string{"OTHER": "1"}, "/x/proc", "/x/proc"},
		// The agent's environment has no CLAUDE_CONFIG_DIR then
		// (BuildEnv): its empty value replaced this process's.
		{"empty agent value is unset", map[string]string{"CLAUDE_CONFIG_DIR": ""}, "/x/proc", filepath.Join(home, ".claude")},
		{"empty process value is unset", nil, "", filepath.Join(home, ".claude")},
		{"agent HOME", map[string]string{"HOME": "/x/home"}, "", "/x/home/.claude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CLAUDE_CONFIG_DIR", tt.procEnv)
			if got := ConfigDir(tt.env); got != tt.want {
				t.Errorf("ConfigDir(%v) = %q, want %q", tt.env, got, tt.want)
			}
		})
	}
}

func TestTranscriptPathResolvesSymlinks(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real_target")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link_to_real")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := "/cfg"
	want := filepath.Join("/cfg", "projects", ProjectSlug(filepath.Join(realRoot, "real_target")), "abc.jsonl")
	for _, cwd := range []string{real, link, link + "/", filepath.Join(link, ".")} {
		if got := TranscriptPath(cfg, cwd, "abc"); got != want {
			t.Errorf("TranscriptPath(%q) = %q, want %q", cwd, got, want)
		}
	}
	// A directory that does not exist keeps its cleaned path.
	if got, want := TranscriptPath(cfg, "/no/such/dir/", "x"), "/cfg/projects/-no-such-dir/x.jsonl"; got != want {
		t.Errorf("TranscriptPath(missing dir) = %q, want %q", got, want)
	}
	if got := ProjectsDir(cfg); got != "/cfg/projects" {
		t.Errorf("ProjectsDir = %q", got)
	}
}

func TestFindTranscript(t *testing.T) {
	cfg := t.TempDir()
	origCwd := "/home/dev/work/resume_proj"
	otherCwd := "/home/dev/work/other_dir"
	const sid = "37c6a0e1-0000-4000-8000-000000000001"
	origDir := filepath.Join(ProjectsDir(cfg), ProjectSlug(origCwd))
	if err := os.MkdirAll(filepath.Join(ProjectsDir(cfg), ProjectSlug(otherCwd), "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := newTranscript(sid, origCwd).turn("hi", "hi", "hello").writeTo(t, origDir)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		id       string
		cwds     []string
		wantPath string
		wantErr  error
		wantExp  string // the path returned with an error
	}{
		{"expected path", sid, []string{origCwd}, p, nil, ""},
		{"resumed from another cwd", sid, []string{otherCwd}, p, nil, ""},
		{"no cwd hint", sid, nil, p, nil, ""},
		{"missing", "99999999-0000-4000-8000-000000000009", []string{otherCwd}, "", fs.ErrNotExist,
			filepath.Join(ProjectsDir(cfg), ProjectSlug(otherCwd), "99999999-0000-4000-8000-000000000009.jsonl")},
		{"path escape", "../x", nil, "", errInvalid, ""},
		{"empty id", "", nil, "", errInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, size, err := FindTranscript(cfg, tt.id, tt.cwds...)
			switch {
			case tt.wantErr == errInvalid:
				if err == nil || errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("err = %v, want an invalid id error", err)
				}
				return
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if got != tt.wantExp {
					t.Errorf("path with error = %q, want %q", got, tt.wantExp)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got != tt.wantPath || size != fi.Size() {
				t.Errorf("FindTranscript = %q, %d; want %q, %d", got, size, tt.wantPath, fi.Size())
			}
		})
	}

	t.Run("no projects dir", func(t *testing.T) {
		_, _, err := FindTranscript(filepath.Join(cfg, "nope"), sid)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want fs.ErrNotExist", err)
		}
	})

	t.Run("newest copy wins", func(t *testing.T) {
		copyDir := filepath.Join(ProjectsDir(cfg), "-copied")
		cp := newTranscript(sid, origCwd).turn("hi", "hi", "hello").turn("more", "x", "y").writeTo(t, copyDir)
		old := fi.ModTime().Add(-time.Hour)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		got, _, err := FindTranscript(cfg, sid)
		if err != nil || got != cp {
			t.Fatalf("FindTranscript = %q, %v; want %q", got, err, cp)
		}
	})
}

var errInvalid = errors.New("invalid")
