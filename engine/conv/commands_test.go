package conv

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		in, name, args string
		ok             bool
	}{
		{"!new", "new", "", true},
		{"  !BTW what is   this? ", "btw", "what is   this?", true},
		{"/status", "status", "", true},
		{"/compact now", "compact", "now", true}, // ours: reports before and after
		{"/context", "", "", false},              // Claude Code's own command goes to the agent
		{"!bogus x", "bogus", "x", true},
		{"!", "", "", false},
		{"hello !new", "", "", false},
		{"/home/me/file.go explain", "", "", false},
	}
	for _, tt := range tests {
		name, args, ok := parseCommand(tt.in)
		if name != tt.name || args != tt.args || ok != tt.ok {
			t.Errorf("parseCommand(%q) = %q, %q, %v; want %q, %q, %v", tt.in, name, args, ok, tt.name, tt.args, tt.ok)
		}
	}
}

// Each entry has the handler its timing needs, a refusal for a right that
// refuses anyone, and a name no other entry has; only a command on the
// line of the one before it goes without help.
func TestRegistryEntries(t *testing.T) {
	seen := map[string]bool{}
	for i, c := range registry {
		if c.name == "" || c.name != strings.ToLower(c.name) || seen[c.name] {
			t.Errorf("entry %d: name %q empty, not lower case or taken", i, c.name)
		}
		seen[c.name] = true
		if c.help == "" && (i == 0 || registry[i-1].when != c.when) {
			t.Errorf("!%s: no help line, and not beside a command of its kind", c.name)
		}
		switch c.when {
		case atOnce:
			if (c.run == nil) == (c.control == nil) || c.queue != nil {
				t.Errorf("!%s acts at once: it needs run or control, and no item", c.name)
			}
		case inOrder:
			if c.queue == nil || c.run == nil || c.control != nil {
				t.Errorf("!%s acts in order: it needs an item and a handler at the head of the queue", c.name)
			}
		case asTurn:
			if c.queue == nil || c.run != nil || c.control != nil {
				t.Errorf("!%s is a turn: it needs an item alone", c.name)
			}
		}
		for _, args := range []string{"", "pause x", "resume x", "x"} {
			if c.right(args) != anyone && c.refused == nil {
				t.Errorf("!%s %s: a right without a refusal text", c.name, args)
			}
		}
	}
	for _, name := range inOrderKinds {
		if c := lookup(name); c == nil || c.when != inOrder {
			t.Errorf("item kind of !%s: not a command that acts in order", name)
		}
	}
	for _, c := range registry {
		if c.when == inOrder && !slices.Contains(slices.Collect(maps.Values(inOrderKinds)), c.name) {
			t.Errorf("!%s acts in order, but no item kind runs it", c.name)
		}
	}
}

// Who may run what, as the gate reads it from the binding in force: the
// answers are the approvers', !sh the admins' where allow_shell is on, a
// pause or a resume of a schedule the admins'.
func TestCommandRights(t *testing.T) {
	b := binding.Binding{AllowUsers: []string{"ann", "bob", "cat"}, Approvers: []string{"ann", "bob"}, Admins: []string{"ann"}}
	shell := b
	shell.AllowShell = true
	tests := []struct {
		b     binding.Binding
		text  string
		user  string
		why   string
		reply string
	}{
		{b, "!allow", "bob", "", ""},
		{b, "!allow always", "cat", "not an approver", "cat is not allowed to answer permission requests here."},
		{b, "!deny", "cat", "not an approver", "cat is not allowed to answer permission requests here."},
		{b, "!skip", "cat", "not an approver", "cat is not allowed to answer permission requests here."},
		{b, "!sh ls", "ann", "shell is off for this binding", render.ShellOffText},
		{shell, "!sh ls", "bob", "user is not an admin", render.ShellNotAdminText},
		{shell, "!sh ls", "ann", "", ""},
		{b, "!schedules", "cat", "", ""},
		{b, "!schedules pause nightly", "bob", "not an admin", "Only this binding's admins can pause a schedule."},
		{b, "!schedules RESUME nightly", "bob", "not an admin", "Only this binding's admins can resume a schedule."},
		{b, "!schedules pause", "bob", "", ""}, // the scheduler's usage
		{b, "!schedules pause nightly", "ann", "", ""},
		{b, "!status", "cat", "", ""},
		{b, "!resume 1", "cat", "", ""}, // an id outside the list is checked when it runs
	}
	for _, tt := range tests {
		g := gate{binding: func() binding.Binding { return tt.b }, log: slog.New(slog.DiscardHandler)}
		name, args, _ := parseCommand(tt.text)
		cmd := lookup(name)
		why := g.refuse(tt.user, "", cmd.right(args), "command", name)
		if why != tt.why {
			t.Errorf("%s by %s: refused %q, want %q", tt.text, tt.user, why, tt.why)
			continue
		}
		if why != "" {
			if got := cmd.refused(call{name: name, msg: platform.Message{UserID: tt.user}, args: args}, why); got != tt.reply {
				t.Errorf("%s by %s: told %q, want %q", tt.text, tt.user, got, tt.reply)
			}
		}
	}
}

// Every list of chat commands in the docs (README.md, docs/*.md) names
// each command of the registry, with its usage where the list gives
// usages, and names no other; no doc names a command the registry lacks.
// A list is marked: it lies between "<!-- chat commands" and "<!-- end of
// chat commands -->", the opening marker saying "with usages" when the
// list gives each command's usage.
func TestDocsListTheRegistry(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs found: %v", err)
	}
	docs = append(docs, "../../README.md")
	named := regexp.MustCompile("`[!/]([a-z]+)[^`]*`")
	lists := 0
	for _, path := range docs {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(raw)
		// Anywhere in a doc, "!name" in code is a command of the registry.
		for _, m := range named.FindAllStringSubmatch(doc, -1) {
			if strings.HasPrefix(m[0], "`!") && lookup(m[1]) == nil {
				t.Errorf("%s names %s, which is not a command", path, m[0])
			}
		}
		for rest := doc; ; {
			start := strings.Index(rest, "<!-- chat commands")
			if start < 0 {
				break
			}
			head, body, _ := strings.Cut(rest[start:], "-->")
			body, after, ok := strings.Cut(body, "<!-- end of chat commands -->")
			if !ok {
				t.Fatalf("%s: a list of chat commands without its end", path)
			}
			rest = after
			lists++
			checkList(t, path, body, strings.Contains(head, "with usages"))
		}
	}
	if lists < 3 {
		t.Errorf("%d lists of chat commands found; README.md, docs/slack.md and docs/telegram.md have one each", lists)
	}
}

// checkList checks one list: "`!name usage`" in prose, or a BotFather
// list's "name - what it does" lines.
func checkList(t *testing.T, path, list string, usages bool) {
	t.Helper()
	names := map[string]bool{}
	for _, m := range regexp.MustCompile("`!([a-z]+)[^`]*`").FindAllStringSubmatch(list, -1) {
		names[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*([a-z_]+) - \S`).FindAllStringSubmatch(list, -1) {
		names[m[1]] = true
	}
	for name := range names {
		if lookup(name) == nil {
			t.Errorf("%s: the list names !%s, which is not a command", path, name)
		}
	}
	for _, c := range registry {
		want := render.Command{Name: c.name, Usage: c.usage}.Line()
		switch {
		case !names[c.name]:
			t.Errorf("%s: the list lacks !%s", path, c.name)
		case usages && !strings.Contains(list, "`"+want+"`"):
			t.Errorf("%s: the list lacks `%s` as !help gives it", path, want)
		}
	}
}
