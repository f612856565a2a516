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
