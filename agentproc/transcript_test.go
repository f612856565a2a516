package agentproc

import (
	"path/filepath"
	"strings"
	"testing"
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
		{"empty agent value is unset", map[string]string{"CLAUDE_CONFIG_DIR": ""}, "/x/proc", "/x/proc"},
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
