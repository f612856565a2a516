package conv

import (
	"testing"
)

func TestRedactPaths(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"chdir /srv/app: no such file or directory", "chdir <path>: no such file or directory"},
		{`open "/var/lib/cc-connect/inbox/x.jsonl": permission denied`, `open "<path>": permission denied`},
		{"lock file /state/locks/sessions/a.lock)", "lock file <path>)"},
		{"see https://example.com/a/b and 1/2 and and/or", "see https://example.com/a/b and 1/2 and and/or"},
		{"a lone / slash", "a lone / slash"},
		{"Not logged in · Please run /login", "Not logged in · Please run /login"},
		{"(/compact failed: /srv/x/y)", "(/compact failed: <path>)"},
		{"ends at /tmp/x.", "ends at <path>."},
		{"open /home/me/My Projects/app/x.go: no such file", "open <path>: no such file"},
		{"stat /tmp/TestX_a,_b/001/t.jsonl: no such file", "stat <path>: no such file"},
		{"failed: /srv/x/y, then /srv/z/w; done", "failed: <path>, then <path>; done"},
		{"at /srv/a/b and then https://x.org/a", "at <path> and then https://x.org/a"},
		{"at /srv/a/b /o/p one", "at <path> <path> one"},
	} {
		if got := redactPaths(tt.in); got != tt.want {
			t.Errorf("redactPaths(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
