package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// What an approver sees of a permission request. A command runs the moment
// it is allowed and cannot be taken back, so it is shown whole: in the
// prompt when it is short, else as its start and end in the prompt and
// whole in a message posted just before it. A file edit or write only
// changes a file in the workspace, which the approver can inspect and
// revert before anything runs it, and whose risk is mostly where it is (a
// git hook, a CI workflow, a shell profile): so the path is shown whole
// and the content as a bounded view of its start and end, with the size
// of what is left out. Every other input field is shown, bounded, so that
// no flag (a sandbox switch, a background run) hides behind the summary.
const (
	// inlineWhole is the longest whole field (a command, a path, a URL)
	// shown in the prompt itself.
	inlineWhole = 1500
	// MaxWhole is the longest whole field shown at all; a request with a
	// longer one is denied, since nobody can review it in a chat.
	MaxWhole = 16 << 10
	// viewChars and viewLines bound the view of content (a file to
	// write, the text an edit replaces and its replacement).
	viewChars = 1200
	viewLines = 30
	// otherChars bounds each other input field; maxFields bounds how many
	// are shown (the rest are named).
	otherChars = 400
	maxFields  = 12
)

type fieldKind int

const (
	fieldWhole fieldKind = iota // shown whole (commands, paths, URLs)
	fieldView                   // shown as its start and end (content)
	fieldOther                  // shown bounded (descriptions, flags)
)

// knownFields are the input fields of Claude Code's tools that get a
// label and a kind, in the order they are shown. Fields of other tools
// (MCP tools included) are shown as they are named, bounded.
var knownFields = []struct {
	key, label string
	kind       fieldKind
}{
	{"command", "Command", fieldWhole},
	{"file_path", "File", fieldWhole},
	{"notebook_path", "Notebook", fieldWhole},
	{"path", "Path", fieldWhole},
	{"url", "URL", fieldWhole},
	{"content", "Content to write", fieldView},
	{"old_string", "Replace", fieldView},
	{"new_string", "With", fieldView},
	{"new_source", "New cell source", fieldView},
	{"edits", "Edits", fieldView},
	{"description", "Claude's description", fieldOther},
}

// Request is a permission request as the CLI made it: what an approver
// is shown.
type Request struct {
	// Tool is the tool's own name; DisplayName the one it gives itself
	// (an MCP server chooses it), shown only when Tool is empty.
	Tool, DisplayName string
	Input             json.RawMessage
	// BlockedPath is the path the request needs, when the CLI names one.
	BlockedPath string
}

// Approval is a permission request as the chat shows it.
type Approval struct {
	// Prompt is the Markdown the approver reads before deciding.
	Prompt string
	// Whole are fields too long for the prompt, each to be posted whole
	// (Markdown) just before it.
	Whole []string
	// Refuse, when set, is why the request cannot be shown: it is denied
	// with this message instead of asked.
	Refuse string
}

// ApprovalHint follows a prompt posted as text, where the platform has no
// buttons.
const ApprovalHint = "\nReply !allow, !allow always, or !deny."

// NotPostedWhole denies a request whose whole command could not be posted.
const NotPostedWhole = "cc-connect could not post the whole request in the chat, so nobody could review it: the request was denied without asking."

// Resolved is the outcome of a permission request posted as a message,
// where the platform cannot show it on the prompt.
func Resolved(tool, outcome string) string {
	return fmt.Sprintf("Permission for %s: %s.", tool, outcome)
}

// field is one input field ready to show.
type field struct {
	label string
	kind  fieldKind
	text  string // made visible (Visible)
}

// ApprovalOf renders what the approver must see of req.
func ApprovalOf(req Request) Approval {
	// The tool's own name, not its display name: an MCP server chooses
	// the display name.
	tool := Visible(orDefault(req.Tool, req.DisplayName))
	fields, extra := requestFields(req)
	var a Approval
	var b strings.Builder
	b.WriteString("🔐 **Permission needed**: ")
	if toolNameRE.MatchString(tool) {
		b.WriteString("`" + tool + "`")
	} else {
		b.WriteString("\n" + fenced(tool))
	}
	for _, f := range fields {
		n := utf8.RuneCountInString(f.text)
		if f.kind == fieldWhole && n > MaxWhole {
			a.Refuse = fmt.Sprintf("The %s is %s characters long, more than cc-connect shows an approver in the chat (%s): the request was denied without asking.",
				strings.ToLower(f.label), Thousands(int64(n)), Thousands(MaxWhole))
			return a
		}
		b.WriteString("\n" + f.label)
		switch {
		case f.kind == fieldWhole && n > inlineWhole:
			fmt.Fprintf(&b, " (%s, whole in the message above; its start and end):\n", sizeOf(f.text))
			b.WriteString(excerpt(f.text, inlineWhole, 1<<30))
			a.Whole = append(a.Whole, fmt.Sprintf("%s for the permission request below (%s):\n%s", f.label, sizeOf(f.text), fenced(f.text)))
		case f.kind == fieldWhole:
			b.WriteString(":\n" + fenced(f.text))
		case f.kind == fieldView:
			view := excerpt(f.text, viewChars, viewLines)
			if view != fenced(f.text) {
				fmt.Fprintf(&b, " (%s; its start and end)", sizeOf(f.text))
			}
			b.WriteString(":\n" + view)
		default:
			b.WriteString(":\n" + excerpt(f.text, otherChars, viewLines))
		}
	}
	if len(extra) > 0 {
		fmt.Fprintf(&b, "\nNot shown: %s.", strings.Join(extra, ", "))
	}
	a.Prompt = b.String()
	return a
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,100}$`)

// requestFields lists the fields of req to show, known ones first, and
// names those past maxFields.
func requestFields(req Request) (fields []field, extra []string) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(req.Input, &in); err != nil && len(req.Input) > 0 {
		// Not an object: show it as it came.
		fields = append(fields, field{label: "Input", kind: fieldView, text: Visible(string(req.Input))})
	}
	add := func(label string, kind fieldKind, raw json.RawMessage) {
		if len(fields) == maxFields {
			extra = append(extra, Visible(label))
			return
		}
		fields = append(fields, field{label: label, kind: kind, text: Visible(fieldText(raw))})
	}
	for _, k := range knownFields {
		if raw, ok := in[k.key]; ok {
			add(k.label, k.kind, raw)
			delete(in, k.key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(in)) {
		add(key, fieldOther, in[key])
	}
	if req.BlockedPath != "" {
		fields = append(fields, field{label: "Path it needs", kind: fieldWhole, text: Visible(req.BlockedPath)})
	}
	return fields, extra
}

// fieldText is a field's value: a string as it is, anything else as JSON.
func fieldText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		if b, err := json.MarshalIndent(v, "", "  "); err == nil {
			return string(b)
		}
	}
	return string(raw)
}

// sizeOf says how big a text is: "5,321 characters, 84 lines".
func sizeOf(s string) string {
	lines := strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
	size := Thousands(int64(utf8.RuneCountInString(s))) + " characters"
	if lines > 1 {
		size += fmt.Sprintf(", %s lines", Thousands(int64(lines)))
	}
	return size
}

// excerpt shows s in a code block when it fits in chars runes and lines
// lines; else its start and its end in two blocks, with what is left out
// said between them, outside code, so that the text itself cannot fake or
// hide the cut.
func excerpt(s string, chars, lines int) string {
	if utf8.RuneCountInString(s) <= chars && strings.Count(s, "\n") < lines {
		return fenced(s)
	}
	r := []rune(s)
	// Short text with many lines is cut by lines alone; head and tail
	// never overlap.
	headN := min(chars*3/5, len(r)/2)
	tailN := min(chars*2/5, len(r)-headN)
	head, tail := string(r[:headN]), string(r[len(r)-tailN:])
	headL, tailL := lines*3/5, lines*2/5
	head = firstLines(head, headL)
	tail = lastLines(tail, tailL)
	left := len(r) - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
	skipped := strings.Count(s, "\n") - strings.Count(head, "\n") - strings.Count(tail, "\n")
	gap := Thousands(int64(left)) + " characters"
	if skipped > 0 {
		gap += fmt.Sprintf(" (%s line breaks)", Thousands(int64(skipped)))
	}
	return fenced(head) + "\n_[… " + gap + " not shown here …]_\n" + fenced(tail)
}

func firstLines(s string, n int) string {
	i := 0
	for range n {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return s
		}
		i += j + 1
	}
	return strings.TrimSuffix(s[:i], "\n")
}

func lastLines(s string, n int) string {
	i := len(s)
	for range n {
		j := strings.LastIndexByte(s[:i], '\n')
		if j < 0 {
			return s
		}
		i = j
	}
	return s[i+1:]
}

// ToolSummary is a short line for a tool call: "Bash `go test ./...`", for
// the status line, the tool log and the restart notice. It is cut: a
// prompt shows the whole request (ApprovalOf).
func ToolSummary(name string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	arg := ""
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description"} {
		if v, ok := in[k].(string); ok && v != "" {
			arg = v
			break
		}
	}
	if arg == "" {
		return name
	}
	arg = strings.ReplaceAll(Quote(Visible(arg), 120), "`", "'")
	return fmt.Sprintf("%s `%s`", name, arg)
}
