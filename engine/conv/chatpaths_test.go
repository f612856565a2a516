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
	} {
		if got := redactPaths(tt.in); got != tt.want {
			t.Errorf("redactPaths(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
