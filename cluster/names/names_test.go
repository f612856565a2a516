package names

import (
	"errors"
	"strings"
	"testing"
)

func TestEscapeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "C0123", "slack-main", "1700000000.123456", "*", ">", "a b", "a_b", "=",
		"-1001234567890", "ünïcode", "a.b.c", "\x00\xff", strings.Repeat("x", 40)} {
		tok := Escape(s)
		if tok == "" || strings.ContainsAny(tok, ".*> \t\r\n_") {
			t.Errorf("Escape(%q) = %q: not one subject token that can be joined with '_'", s, tok)
		}
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if !(plain(c) || c == '=' || c >= 'A' && c <= 'F') {
				t.Errorf("Escape(%q) = %q has %q, which a key-value key may not hold", s, tok, c)
			}
		}
		back, err := Unescape(tok)
		if err != nil || back != s {
			t.Errorf("Unescape(Escape(%q)) = %q, %v", s, back, err)
		}
	}
}

func TestUnescapeRefusesForeignTokens(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{"a.b", "=4", "=zz", "=41" /* 'A' escaped: never written */, "a_b", "a=", ""} {
		if got, err := Unescape(tok); !errors.Is(err, ErrBadToken) {
			t.Errorf("Unescape(%q) = %q, %v; want ErrBadToken", tok, got, err)
		}
	}
}

func TestBindingTokenIsUniqueAndParses(t *testing.T) {
	t.Parallel()
	// Pairs that a naive join would confuse.
	bs := []Binding{{"a_b", "c"}, {"a", "b_c"}, {"a", "*"}, {"a", "="}, {"slack", "C1"}, {"slack-main", "C1"}}
	seen := map[string]Binding{}
	for _, b := range bs {
		tok := b.Token()
		if prev, dup := seen[tok]; dup {
			t.Errorf("%v and %v share the token %q", prev, b, tok)
		}
		seen[tok] = b
		back, err := ParseBinding(tok)
		if err != nil || back != b {
			t.Errorf("ParseBinding(%q) = %v, %v; want %v", tok, back, err, b)
		}
	}
}

func TestSubjects(t *testing.T) {
	t.Parallel()
	n := Names{Prefix: "cc-connect"}
	b := Binding{Platform: "slack-main", Channel: "*"}
	conv := Conversation("C0123", "1700000000.123456")
	subj := n.In(b, conv, "build-1.example")
	if want := "cc-connect.in.slack-main_=2A.C0123_1700000000=2E123456.build-1=2Eexample"; subj != want {
		t.Errorf("In = %q, want %q", subj, want)
	}
	if !strings.HasPrefix(subj, strings.TrimSuffix(n.BindingFilter(b), ">")) {
		t.Errorf("%q is not under the binding filter %q", subj, n.BindingFilter(b))
	}
	if pub := n.Publish(b, "build-1.example"); !subjectMatches(pub, subj) || subjectMatches(n.Publish(b, "build-2"), subj) {
		t.Errorf("the publish filter %q does not match exactly its host's subjects (%q)", pub, subj)
	}
	got, origin, err := n.ParseIn(subj)
	if err != nil || got != conv || origin != "build-1.example" {
		t.Errorf("ParseIn(%q) = %q, %q, %v", subj, got, origin, err)
	}
	// A subject an older cc-connect wrote: no publisher.
	if got, origin, err := n.ParseIn("cc-connect.in.slack-main_=2A." + conv); err != nil || got != conv || origin != "" {
		t.Errorf("ParseIn(an older subject) = %q, %q, %v", got, origin, err)
	}
	for _, bad := range []string{"other.in.x.y.z", "cc-connect.in.x", "cc-connect.in.x.y.=zz", "cc-connect.in.x.y.z.w", "cc-connect.in.x..z"} {
		if _, _, err := n.ParseIn(bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("ParseIn(%q) took it: %v", bad, err)
		}
	}
	if c := Conversation("D1", ""); c != "D1_=" {
		t.Errorf("a conversation without a thread = %q", c)
	}
	if in := Inbox("build-1.example"); in != "_INBOX.build-1=2Eexample" {
		t.Errorf("Inbox = %q", in)
	}
}

// subjectMatches says whether a NATS subject filter matches subject.
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}
