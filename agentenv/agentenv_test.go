package agentenv

import (
	"fmt"
	"strings"
	"testing"
)

// TestSecretVarsKeepValuesAsDigests: the set recognises a secret's value
// without holding it: printing the set shows no value, and an empty value
// (every unset variable's) is never a secret.
func TestSecretVarsKeepValuesAsDigests(t *testing.T) {
	s := NewSecretVars("SOURCE")
	s.AddValues("xoxb-canary-digest", "")
	if !s.Has("SOURCE") || s.Has("source") || !s.HasValue("xoxb-canary-digest") || s.HasValue("xoxb-canary") || s.HasValue("") {
		t.Errorf("Has/HasValue: %v %v %v %v %v", s.Has("SOURCE"), s.Has("source"), s.HasValue("xoxb-canary-digest"), s.HasValue("xoxb-canary"), s.HasValue(""))
	}
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		if out := fmt.Sprintf(verb, s); strings.Contains(out, "canary") {
			t.Errorf("%s of the set shows a value: %s", verb, out)
		}
	}
	var none *SecretVars
	if none.Has("X") || none.HasValue("X") || none.Names() != nil {
		t.Error("a nil set is not empty")
	}
	none.AddValues("x") // must not panic
}

func TestRedactorHidesEveryValue(t *testing.T) {
	var r Redactor
	r.Add("xoxb-canary-123", "", "xoxb-canary-123-longer", "s3cret")
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"nothing here", "nothing here"},
		{"token xoxb-canary-123 and s3cret", "token [redacted] and [redacted]"},
		{"the longer one xoxb-canary-123-longer whole", "the longer one [redacted] whole"},
		{"twice s3crets3cret", "twice [redacted][redacted]"},
	} {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var none *Redactor
	if got := none.Redact("s3cret"); got != "s3cret" {
		t.Errorf("nil Redactor changed the text: %q", got)
	}
}
