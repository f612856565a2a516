package fakeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// toolCall is one tool_use block the fake model sends.
type toolCall struct {
	Name  string
	Input json.RawMessage
}

// action is one tool call a prompt's markers ask for. A prompt may hold
// several; they run in order, one per API request, each after the previous
// one's tool_result came back.
type action struct {
	call toolCall
	// raw is the marker as typed, for error messages.
	raw string
}

// streamSpec is a [[STREAM:N:duration]] answer: N text chunks spread over
// the duration.
type streamSpec struct {
	chunks int
	over   time.Duration
}

// promptSpec is everything the markers of one prompt ask for.
type promptSpec struct {
	actions  []action
	thinking string      // [[THINK:text]]: a thinking block before the answer
	stream   *streamSpec // [[STREAM:N:dur]]
	// bad lists markers that could not be parsed; the fake answers with
	// text naming them rather than guessing.
	bad []string
}

// Defaults for the markers given without arguments.
var (
	defaultQuestions = json.RawMessage(`[{"question":"Which color should the button be?","header":"Color",` +
		`"options":[{"label":"Red","description":"A warm red"},{"label":"Blue","description":"A calm blue"}],"multiSelect":false}]`)
	defaultTodos = json.RawMessage(`[{"content":"Read the code","status":"completed","activeForm":"Reading the code"},` +
		`{"content":"Write the fix","status":"in_progress","activeForm":"Writing the fix"},` +
		`{"content":"Run the tests","status":"pending","activeForm":"Running the tests"}]`)
)

// DefaultPlan is the plan [[PLAN]] proposes when given no text.
const DefaultPlan = "# Plan\n\n1. Read the code.\n2. Write the fix.\n3. Run the tests."

// parsePrompt reads the behaviour markers of a prompt, in the order typed.
// cwd, when known, resolves relative paths of [[WRITE]] and [[READ]];
// planFile, when the CLI named one (plan mode), is where [[PLAN]] writes
// its plan before calling ExitPlanMode, as the CLI tells a model to: the
// CLI takes the plan from that file, not from the tool input.
func parsePrompt(prompt, cwd, planFile string) promptSpec {
	var spec promptSpec
	rest := prompt
	for {
		i := strings.Index(rest, "[[")
		if i < 0 {
			return spec
		}
		rest = rest[i+2:]
		name, arg, hasArg, tail, ok := splitMarker(rest)
		if !ok {
			continue
		}
		raw := "[[" + name
		if hasArg {
			raw += ":" + arg
		}
		raw += "]]"
		consumed := true
		switch name {
		case "TOOL":
			cmd := "echo hi"
			if hasArg {
				cmd = arg
			}
			spec.actions = append(spec.actions, action{raw: raw, call: bashCall(cmd)})
		case "BG":
			// Bash in the background: the turn ends while it runs, and
			// the CLI starts a turn of its own when it finishes.
			cmd := "sleep 1; echo done"
			if hasArg {
				cmd = arg
			}
			spec.actions = append(spec.actions, action{raw: raw, call: toolCall{Name: "Bash",
				Input: mustJSON(map[string]any{"command": cmd, "description": "Run in the background", "run_in_background": true})}})
		case "CALL":
			tool, input, ok := nameAndJSON(arg)
			if !ok {
				spec.bad = append(spec.bad, raw)
				break
			}
			spec.actions = append(spec.actions, action{raw: raw, call: toolCall{Name: tool, Input: input}})
		case "MCP":
			ref, input, ok := nameAndJSON(arg)
			server, tool, found := strings.Cut(ref, "/")
			if !ok || !found || server == "" || tool == "" {
				spec.bad = append(spec.bad, raw)
				break
			}
			spec.actions = append(spec.actions, action{raw: raw, call: toolCall{Name: "mcp__" + server + "__" + tool, Input: input}})
		case "ASK":
			qs := defaultQuestions
			if hasArg {
				qs = json.RawMessage(arg)
				if !json.Valid(qs) {
					spec.bad = append(spec.bad, raw)
					break
				}
			}
			spec.actions = append(spec.actions, action{raw: raw, call: toolCall{Name: "AskUserQuestion",
				Input: mustJSON(map[string]json.RawMessage{"questions": qs})}})
		case "PLAN":
			plan := DefaultPlan
			if hasArg {
				plan = arg
			}
			if planFile != "" {
				spec.actions = append(spec.actions, action{raw: raw, call: toolCall{Name: "Write",
					Input: mustJSON(map[string]string{"file_path": planFile, "content": plan})}})
			}
			spec.actions = append(spec.actions, action{raw: raw, call: toolCall{Name: "ExitPlanMode",
				Input: mustJSON(map[string]string{"plan": plan})}})
		case "WRITE":
			p, content, found := strings.Cut(arg, ":")
			if !hasArg || !found || p == "" {
				spec.bad = append(spec.bad, raw)
				break
			}
			spec.actions = append(spec.actions, action{raw: raw, call: toolCall{Name: "Write",
				Input: mustJSON(map[string]string{"file_path": resolve(cwd, p), "content": content})}})
		case "READ":
			if !hasArg {
				spec.bad = append(spec.bad, raw)
				break
			}
			spec.actions = append(spec.actions, action{raw: raw, call: toolCall{Name: "Read",
				Input: mustJSON(map[string]string{"file_path": resolve(cwd, arg)})}})
		case "TODO":
			todos := defaultTodos
			if hasArg {
				todos = json.RawMessage(arg)
				if !json.Valid(todos) {
					spec.bad = append(spec.bad, raw)
					break
				}
			}
			spec.actions = append(spec.actions, action{raw: raw, call: toolCall{Name: "TodoWrite",
				Input: mustJSON(map[string]json.RawMessage{"todos": todos})}})
		case "THINK":
			spec.thinking = "Let me think about this."
			if hasArg {
				spec.thinking = arg
			}
		case "STREAM":
			s, ok := parseStream(arg)
			if !hasArg || !ok {
				spec.bad = append(spec.bad, raw)
				break
			}
			spec.stream = &s
		default:
			// [[TOOLONG]], [[SLOW]] and the rest are decided elsewhere;
			// anything unknown is plain text.
			consumed = false
		}
		if consumed {
			rest = tail
		}
	}
}

// splitMarker reads NAME]] or NAME:arg]] at the start of s (just after
// "[["). An argument that starts with a JSON value ([...] or {...}) ends
// where that value ends, so it may itself hold "]]"; any other argument
// ends at the first "]]".
func splitMarker(s string) (name, arg string, hasArg bool, tail string, ok bool) {
	end := 0
	for end < len(s) && (s[end] >= 'A' && s[end] <= 'Z' || s[end] >= '0' && s[end] <= '9') {
		end++
	}
	if end == 0 {
		return "", "", false, "", false
	}
	name, s = s[:end], s[end:]
	if strings.HasPrefix(s, "]]") {
		return name, "", false, s[2:], true
	}
	if !strings.HasPrefix(s, ":") {
		return "", "", false, "", false
	}
	s = s[1:]
	// A JSON argument, possibly after a name: "Name {...}" or "[...]".
	if j := jsonStart(s); j >= 0 {
		dec := json.NewDecoder(strings.NewReader(s[j:]))
		var v json.RawMessage
		if err := dec.Decode(&v); err == nil {
			after := j + int(dec.InputOffset())
			if k := strings.Index(s[after:], "]]"); k >= 0 && strings.TrimSpace(s[after:after+k]) == "" {
				return name, s[:after], true, s[after+k+2:], true
			}
		}
	}
	k := strings.Index(s, "]]")
	if k < 0 {
		return "", "", false, "", false
	}
	return name, s[:k], true, s[k+2:], true
}

// jsonStart finds where a JSON argument begins: at the start, or after a
// first word ("Name {...}"). It returns -1 when the argument is not JSON.
func jsonStart(s string) int {
	if strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{") {
		return 0
	}
	sp := strings.IndexAny(s, " \n")
	if sp < 0 || strings.Contains(s[:sp], "]]") {
		return -1
	}
	rest := strings.TrimLeft(s[sp:], " \n")
	if strings.HasPrefix(rest, "{") {
		return len(s) - len(rest)
	}
	return -1
}

// nameAndJSON splits "Name {json}" (the JSON is optional: {} then).
func nameAndJSON(arg string) (string, json.RawMessage, bool) {
	arg = strings.TrimSpace(arg)
	name, input, _ := strings.Cut(arg, " ")
	input = strings.TrimSpace(input)
	if name == "" {
		return "", nil, false
	}
	if input == "" {
		return name, json.RawMessage("{}"), true
	}
	var obj map[string]any
	if json.Unmarshal([]byte(input), &obj) != nil {
		return "", nil, false
	}
	return name, json.RawMessage(input), true
}

// parseStream reads "N:duration", e.g. "20:10s".
func parseStream(arg string) (streamSpec, bool) {
	n, d, found := strings.Cut(arg, ":")
	chunks, err := strconv.Atoi(n)
	if !found || err != nil || chunks < 1 || chunks > 10000 {
		return streamSpec{}, false
	}
	over, err := time.ParseDuration(d)
	if err != nil || over < 0 || over > 10*time.Minute {
		return streamSpec{}, false
	}
	return streamSpec{chunks: chunks, over: over}, true
}

// StreamChunk is the i-th (1-based) text chunk of a [[STREAM:n:…]] answer;
// the whole answer is the chunks 1..n joined.
func StreamChunk(i, n int) string { return fmt.Sprintf("chunk %d of %d. ", i, n) }

func bashCall(cmd string) toolCall {
	return toolCall{Name: "Bash", Input: mustJSON(map[string]string{"command": cmd, "description": "Run a command"})}
}

// resolve makes p absolute against cwd (the CLI's tools want absolute
// paths); without a known cwd, p is left as typed.
func resolve(cwd, p string) string {
	if path.IsAbs(p) || cwd == "" {
		return p
	}
	return path.Join(cwd, p)
}

func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only maps of strings and valid raw JSON reach here
	}
	return json.RawMessage(bytes.TrimSpace(b.Bytes()))
}

// nextCall decides the tool call of this request of the turn, from the
// prompt's actions and the tool calls the model already made in this turn
// (the tool_use blocks after the prompt). It returns ok=false when every
// action has run.
//
// A tool the CLI has deferred (named in a system message but absent from
// the request's tools) cannot be called before the model fetches its
// schema, so the fake first calls ToolSearch with "select:<name>", as the
// CLI's own ToolSearch description tells a model to.
func nextCall(actions []action, done []ToolUse, tools []string) (toolCall, bool) {
	i, searched := 0, false
	for _, u := range done {
		if i >= len(actions) {
			break
		}
		if u.Name == "ToolSearch" && actions[i].call.Name != "ToolSearch" {
			searched = true
			continue
		}
		i++
		searched = false
	}
	if i >= len(actions) {
		return toolCall{}, false
	}
	c := actions[i].call
	if !searched && len(tools) > 0 && !contains(tools, c.Name) && contains(tools, "ToolSearch") {
		return toolCall{Name: "ToolSearch", Input: mustJSON(map[string]any{"query": "select:" + c.Name, "max_results": 5})}, true
	}
	return c, true
}

// RepeatPhrase in a turn's prompt makes the fake repeat the history's last
// tool call (fakeapi.go).
const RepeatPhrase = "make the same call again"

// repeatRE finds the call a prompt asks to make again: "… make the same
// call again … (tool NAME, input {JSON})".
var repeatRE = regexp.MustCompile(`(?m)make the same call again[^\n(]*\(tool ([^,\s]+), input (\{.*\})\)\.?$`)

// repeatCall is the call the prompt asks to make again: the one it names,
// else the last tool call the model made in msgs.
func repeatCall(prompt string, msgs []Message) (toolCall, bool) {
	if m := repeatRE.FindStringSubmatch(prompt); m != nil && json.Valid([]byte(m[2])) {
		return toolCall{Name: m[1], Input: json.RawMessage(m[2])}, true
	}
	return lastToolCall(msgs)
}

// lastToolCall is the last tool call the model made in msgs.
func lastToolCall(msgs []Message) (toolCall, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "assistant" {
			continue
		}
		if uses := msgs[i].ToolUses(); len(uses) > 0 {
			u := uses[len(uses)-1]
			return toolCall{Name: u.Name, Input: u.Input}, true
		}
	}
	return toolCall{}, false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
