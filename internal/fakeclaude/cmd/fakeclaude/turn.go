package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// turnState is the running turn, as the stdin reader sees it.
type turnState struct {
	msg       userMsg
	model     string
	interrupt chan struct{} // closed by an interrupt control request
	stopped   bool          // interrupt seen; guarded by fake.mu
	askID     string        // our pending control request id; guarded by fake.mu
	answer    chan permAnswer
	folding   bool      // user lines join this turn (a tool is running); guarded by fake.mu
	injected  []userMsg // folded user messages; guarded by fake.mu
	foldedIn  bool      // the injected messages were read into the turn; guarded by fake.mu

	usage    usage
	apiCalls int
	denials  []any
	seenMsg  map[string]bool
}

type permAnswer struct {
	ok       bool
	response json.RawMessage
	err      string
}

// resultLine puts "type" late on purpose: real results are not type-first,
// and a reader that matches on a prefix must fail against the fake too.
type resultLine struct {
	DurationAPIMs     int64                  `json:"duration_api_ms"`
	StopReason        *string                `json:"stop_reason"`
	SessionID         string                 `json:"session_id"`
	TotalCostUSD      float64                `json:"total_cost_usd"`
	Usage             *usage                 `json:"usage"`
	ModelUsage        map[string]*modelUsage `json:"modelUsage"`
	PermissionDenials []any                  `json:"permission_denials"`
	TerminalReason    string                 `json:"terminal_reason,omitempty"`
	IsError           bool                   `json:"is_error"`
	NumTurns          int                    `json:"num_turns"`
	Subtype           string                 `json:"subtype"`
	APIErrorStatus    *int                   `json:"api_error_status"`
	APIErrorType      string                 `json:"api_error_type,omitempty"`
	Result            *string                `json:"result,omitempty"`
	Errors            []string               `json:"errors,omitempty"`
	Type              string                 `json:"type"`
	DurationMs        int64                  `json:"duration_ms"`
	UUID              string                 `json:"uuid"`
	ResultIndex       int                    `json:"result_index"`
	Origin            map[string]any         `json:"origin,omitempty"`
}

var (
	reTool = regexp.MustCompile(`\[\[TOOL(?::([^\]]*))?\]\]`)
	reSlow = regexp.MustCompile(`\[\[SLOW(?::(\d+))?\]\]`)
	reHuge = regexp.MustCompile(`\[\[HUGE:(\d+)\]\]`)
	reSelf = regexp.MustCompile(`\[\[SELF:(\d+)\]\]`)
	reExec = regexp.MustCompile(`\[\[EXEC:([^\]]*)\]\]`)
	reDrip = regexp.MustCompile(`\[\[DRIP:(\d+)\]\]`)
)

const (
	interruptedText  = "[Request interrupted by user]"
	interruptedTool  = "[Request interrupted by user for tool use]"
	rejectedToolText = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
	freshTooLong     = "Prompt is too long · the request is ~250000 tokens (limit 200000) but this conversation is only ~2502 tokens — the rest is system prompt, tool definitions, and attachment content. A single-exchange conversation cannot be compacted; reduce attached files/tools or start with less context."
)

// runTurn runs m as one turn and returns the messages that joined it but
// were never read into it (it called no tool after all, or ended early):
// they run next, as the CLI's queue runs them.
func (f *fake) runTurn(m userMsg) (left []userMsg) {
	t := &turnState{msg: m, interrupt: make(chan struct{}), answer: make(chan permAnswer, 1)}
	f.mu.Lock()
	f.cur = t
	t.model = f.model
	// A turn that calls a tool takes in what is written from its start
	// on, at the request after the tool's result, as the CLI's queue
	// does.
	t.folding = reTool.MatchString(m.text)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		if !t.foldedIn {
			left = t.injected
		}
		t.folding = false
		f.mu.Unlock()
	}()
	start := time.Now()
	f.emitInit(t.model)
	f.appendTranscript(f.userTranscriptLine(m.uuid, m.text))
	f.exchanges++

	text := m.text
	f.writeFiles(m, t.model)
	var res resultLine
	if mm := reLimitWarn.FindStringSubmatch(text); mm != nil {
		reset, _ := strconv.ParseInt(mm[1], 10, 64)
		f.rateLimitEvent("allowed_warning", reset)
	}
	reset, refused := limited(text)
	switch {
	case refused:
		res = f.turnLimited(reset)
	case f.tooLong(text):
		res = f.turnTooLong(t)
	case strings.Contains(text, "[[CRASH]]") && !reTool.MatchString(text):
		// The reply streams to stdout but, like an unfinished message,
		// never reaches the transcript: it ends on the prompt.
		u := f.apiCall(false)
		f.emitAssistantExtra(t, f.newMsgID(), textBlock("partial reply before a crash"), u, nil, "end_turn", false)
		crash()
	case strings.Contains(text, "[[ORPHAN]]"):
		// A background job outlives the CLI and keeps its stdout and
		// stderr open: the host must not wait for EOF forever.
		orphan := exec.Command(os.Args[0])
		orphan.Env = append(os.Environ(), "FAKECLAUDE_SLEEPER=60s")
		orphan.Stdout, orphan.Stderr = os.Stdout, os.Stderr
		if err := orphan.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fakeclaude: starting the orphan:", err)
		}
		u := f.apiCall(false)
		f.emitAssistantExtra(t, f.newMsgID(), textBlock("started a background job"), u, nil, "end_turn", false)
		crash()
	case strings.Contains(text, "[[HANG]]") || strings.Contains(text, "[[DEAF]]"):
		<-t.interrupt
		res = f.aborted(t, interruptedText, "aborted_streaming")
	case reSlow.MatchString(text):
		res = f.turnSlow(t, reSlow.FindStringSubmatch(text)[1])
	case reTool.MatchString(text):
		var cmds []string
		for _, m := range reTool.FindAllStringSubmatch(text, -1) {
			cmd := m[1]
			if cmd == "" {
				cmd = "echo hi"
			}
			cmds = append(cmds, cmd)
		}
		res = f.turnTools(t, cmds)
	case reBG.MatchString(text):
		res = f.turnBackground(t, reBG.FindStringSubmatch(text)[1])
	case strings.Contains(text, "[[ASKHOST]]"):
		res = f.turnAskHost(t)
	case reExec.MatchString(text):
		// What Claude's Bash would do with the fake's own user and
		// environment: the tests of what a child can reach need a
		// command that really runs.
		reply := execReply(reExec.FindStringSubmatch(text)[1])
		f.reply(t, reply, false)
		res = success(reply)
	default:
		if strings.Contains(text, "[[MALFORMED]]") {
			f.out.raw([]byte("fakeclaude: this stdout line is not JSON {"))
		}
		reply := f.answerPending("echo: " + text)
		if mm := reHuge.FindStringSubmatch(text); mm != nil {
			n, _ := strconv.Atoi(mm[1])
			reply = strings.Repeat("x", n)
		}
		if mm := reSelf.FindStringSubmatch(text); mm != nil {
			reply += "\n[ctx: ~" + mm[1] + "%]" // the model's self-report
		}
		if f.checkStopped(t) {
			res = f.aborted(t, interruptedText, "aborted_streaming")
			break
		}
		if mm := reDrip.FindStringSubmatch(text); mm != nil {
			n, _ := strconv.Atoi(mm[1])
			if !f.drip(t, reply, n) {
				res = f.aborted(t, interruptedText, "aborted_streaming")
				break
			}
			res = success(reply)
			break
		}
		f.reply(t, reply, strings.Contains(text, "[[BIG]]"))
		res = success(reply)
	}
	res.DurationMs = time.Since(start).Milliseconds()
	f.finish(t, res)
	if refused {
		f.exit() // as the CLI after a refusal
	}
	return nil // (the messages left, set on the way out)
}

// tooLong says whether this turn fails with prompt-too-long: the marker, a
// session already poisoned by one (the CLI folds the failed prompt into the
// next), or FAKECLAUDE_TOOLONG_ON_RESUME=1 on a resumed process.
func (f *fake) tooLong(text string) bool {
	return strings.Contains(text, "[[TOOLONG]]") ||
		(f.sticky && os.Getenv("FAKECLAUDE_TOOLONG_STICKY") != "0") ||
		(f.resumed && os.Getenv("FAKECLAUDE_TOOLONG_ON_RESUME") == "1")
}

func (f *fake) turnTooLong(t *turnState) resultLine {
	text := "Prompt is too long"
	if f.exchanges > 1 {
		// With history to shrink, the CLI tries a reactive compaction
		// first; every request fails, so it gives up.
		f.out.line(map[string]any{"type": "system", "subtype": "status", "status": "compacting",
			"session_id": f.sessionID, "uuid": uuid.NewString()})
		f.out.line(map[string]any{"type": "system", "subtype": "status", "status": nil,
			"compact_result": "failed", "compact_error": "exhausted", "session_id": f.sessionID, "uuid": uuid.NewString()})
	} else {
		text = freshTooLong
	}
	id := uuid.NewString()
	f.out.line(map[string]any{
		"type": "assistant",
		"message": map[string]any{
			"id": id, "model": "<synthetic>", "role": "assistant", "type": "message",
			"stop_reason": "stop_sequence", "stop_sequence": "", "usage": usage{},
			"content": []any{textBlock(text)},
		},
		"parent_tool_use_id": nil, "session_id": f.sessionID, "uuid": uuid.NewString(),
		"timestamp": now(), "error": "invalid_request", "is_api_error_message": true,
		"api_error_status": 400, "api_error_type": "invalid_request_error",
	})
	f.appendTranscript(f.assistantTranscriptLine(id, "<synthetic>", textBlock(text), usage{}, "end_turn", true))
	f.sticky = true
	status := 400
	stop := "stop_sequence"
	return resultLine{
		Subtype: "success", IsError: true, Result: &text, TerminalReason: "prompt_too_long",
		APIErrorStatus: &status, APIErrorType: "invalid_request_error", StopReason: &stop, NumTurns: 1,
	}
}

// turnSlow streams chunks every 10 ms until an interrupt, N chunks
// ([[SLOW:N]]), or the file named by FAKECLAUDE_RELEASE appearing.
func (f *fake) turnSlow(t *turnState, limit string) resultLine {
	n, _ := strconv.Atoi(limit)
	release := os.Getenv("FAKECLAUDE_RELEASE")
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var sb strings.Builder
	msgID := f.newMsgID()
	for i := 0; ; {
		select {
		case <-t.interrupt:
			f.sync()
			u := f.apiCall(false)
			f.emitAssistantExtra(t, msgID, textBlock(sb.String()), u, map[string]any{"aborted": true}, "end_turn", true)
			return f.aborted(t, interruptedText, "aborted_streaming")
		case <-tick.C:
			fmt.Fprintf(&sb, "[chunk %d] ", i)
			i++
			if n > 0 && i >= n {
				return f.slowDone(t, msgID, sb.String())
			}
			if release != "" {
				if _, err := os.Stat(release); err == nil {
					return f.slowDone(t, msgID, sb.String())
				}
			}
		}
	}
}

func (f *fake) slowDone(t *turnState, msgID, text string) resultLine {
	u := f.apiCall(false)
	f.emitAssistant(t, msgID, textBlock(text), u)
	return success(text)
}

// turnTools runs the Bash commands one after the other in one turn, as a
// model calling several tools does; the reply names each result. A turn
// that ends early (an interrupt, a deny with interrupt) ends at that tool.
func (f *fake) turnTools(t *turnState, cmds []string) resultLine {
	var said []string
	for _, cmd := range cmds {
		content, end := f.runTool(t, cmd)
		if end != nil {
			return *end
		}
		said = append(said, "tool said: "+content)
	}
	if f.checkStopped(t) {
		return f.aborted(t, interruptedText, "aborted_streaming")
	}
	reply := strings.Join(said, "\n")
	reply = f.answerPending(reply)
	f.mu.Lock()
	t.folding, t.foldedIn = false, true
	injected := t.injected
	f.mu.Unlock()
	for _, in := range injected {
		// The next request carries it: the transcript shows it taken
		// in (absorbedLines), under its uuid, from then on.
		f.appendTranscript(f.absorbedLines(in)...)
	}
	if len(injected) > 0 {
		f.foldGate()
	}
	for _, in := range injected {
		f.emitCommand(in.uuid, "started")
		reply += "\n(also read while working: " + in.text + ")"
	}
	defer func() {
		for _, in := range injected {
			f.emitCommand(in.uuid, "completed")
		}
	}()
	f.reply(t, reply, false)
	return success(reply)
}

// runTool asks permission for a Bash command (unless auto-approved), then
// reports a fake run of it and returns the tool result's text, or the
// result that ends the turn. The command is never executed.
func (f *fake) runTool(t *turnState, cmd string) (string, *resultLine) {
	f.toolSeq++
	toolID := fmt.Sprintf("toolu_fake%06d", f.toolSeq)
	input := map[string]any{"command": cmd, "description": "Run a command"}
	msgID := f.newMsgID()
	u := f.apiCall(strings.Contains(t.msg.text, "[[BIG]]"))
	f.emitToolCall(t, msgID, map[string]any{"type": "tool_use", "id": toolID, "name": "Bash", "input": input}, u)
	if strings.Contains(t.msg.text, "[[CRASH]]") {
		crash() // the transcript ends on a tool_use without its result
	}
	f.mu.Lock()
	t.folding = true // a message now joins this turn (PROTOCOL.md §3)
	mode := f.permissionMode
	f.mu.Unlock()

	denial := map[string]any{"tool_name": "Bash", "tool_use_id": toolID, "tool_input": input}
	var content string
	isError := false
	switch {
	case !slices.Contains(f.toolSet(), "Bash"):
		content = "<tool_use_error>Error: No such tool available: Bash. Bash is disabled for this session, in subagents as well as here.</tool_use_error>"
		isError = true
	case autoApproved(cmd) || f.allowRules[cmd] || mode == "acceptEdits" || mode == "bypassPermissions":
		content = "(fake) ran: " + cmd
	case mode == "dontAsk":
		content = "Permission to use Bash has been denied because Claude Code is running in don't ask mode."
		isError = true
		t.denials = append(t.denials, denial)
	default:
		ans, how := f.ask(t, map[string]any{
			"subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
			"input": input, "description": "Run a command",
			"permission_suggestions": []any{
				map[string]any{"type": "addRules", "rules": []any{map[string]any{"toolName": "Bash", "ruleContent": cmd}}, "behavior": "allow", "destination": "localSettings"},
				map[string]any{"type": "addDirectories", "directories": []any{f.cwd}, "destination": "session"},
				map[string]any{"type": "setMode", "mode": "acceptEdits", "destination": "session"},
			},
			"blocked_path": blockedPath(f.cwd, cmd), "tool_use_id": toolID,
		})
		switch how {
		case askInterrupted:
			f.emitToolResult(t, toolID, rejectedToolText, true)
			end := f.aborted(t, interruptedTool, "aborted_tools")
			return "", &end
		case askEOF:
			content, isError = "Tool permission request failed: AbortError: Stream closed", true
		default:
			var d struct {
				Behavior           string          `json:"behavior"`
				Message            string          `json:"message"`
				Interrupt          bool            `json:"interrupt"`
				UpdatedInput       json.RawMessage `json:"updatedInput"`
				UpdatedPermissions []struct {
					Type  string `json:"type"`
					Rules []struct {
						RuleContent string `json:"ruleContent"`
					} `json:"rules"`
				} `json:"updatedPermissions"`
			}
			_ = json.Unmarshal(ans.response, &d)
			switch {
			case !ans.ok:
				content, isError = "Tool permission request failed: Error: "+ans.err, true
			case d.Behavior == "allow":
				var upd struct {
					Command string `json:"command"`
				}
				if json.Unmarshal(d.UpdatedInput, &upd) == nil && upd.Command != "" {
					cmd = upd.Command
				}
				for _, p := range d.UpdatedPermissions {
					for _, r := range p.Rules {
						if p.Type == "addRules" {
							f.allowRules[r.RuleContent] = true
						}
					}
				}
				content = "(fake) ran: " + cmd
			case d.Interrupt:
				t.denials = append(t.denials, denial)
				f.emitToolResult(t, toolID, rejectedToolText, true)
				end := f.aborted(t, interruptedTool, "aborted_tools")
				return "", &end
			default:
				content, isError = d.Message, true
				t.denials = append(t.denials, denial)
			}
		}
	}
	if d, ok := sleepFor(cmd); ok && !isError {
		// "Runs" for its duration: a message sent meanwhile is folded
		// into the turn without anyone answering a prompt.
		select {
		case <-time.After(d):
		case <-t.interrupt:
			f.emitToolResult(t, toolID, rejectedToolText, true)
			end := f.aborted(t, interruptedTool, "aborted_tools")
			return "", &end
		}
	}
	f.emitToolResult(t, toolID, content, isError)
	return content, nil
}

// sleepFor is how long a `sleep N` command (N seconds, a fraction
// allowed, then anything) takes; false for other commands.
func sleepFor(cmd string) (time.Duration, bool) {
	fields := strings.Fields(cmd)
	if len(fields) < 2 || fields[0] != "sleep" {
		return 0, false
	}
	n, err := strconv.ParseFloat(fields[1], 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n * float64(time.Second)), true
}

// turnAskHost sends the host a control request agentproc does not handle
// and waits for its answer: the CLI must never be left hanging.
func (f *fake) turnAskHost(t *turnState) resultLine {
	ans, how := f.ask(t, map[string]any{"subtype": "elicitation", "mcp_server_name": "fake", "message": "pick one"})
	var reply string
	switch {
	case how == askInterrupted:
		return f.aborted(t, interruptedText, "aborted_streaming")
	case how == askEOF:
		reply = "host gone"
	case ans.ok:
		reply = "host answered: " + string(ans.response)
	default:
		reply = "host refused: " + ans.err
	}
	f.reply(t, reply, false)
	return success(reply)
}

// crash ends the process mid-turn as a crashing CLI would: output so far
// flushed, a line on stderr, exit 2, no result.
func crash() {
	fmt.Fprintln(os.Stderr, "fakeclaude: simulated crash ([[CRASH]])")
	os.Exit(2)
}

// reply is one API call answering with text.
func (f *fake) reply(t *turnState, text string, big bool) {
	u := f.apiCall(big)
	f.emitAssistant(t, f.newMsgID(), textBlock(text), u)
}

// dripGap is the time between the text deltas of a [[DRIP:N]] reply.
const dripGap = 100 * time.Millisecond

// drip writes the reply as the CLI does with --include-partial-messages:
// a message_start, then the text in n deltas dripGap apart (without the
// flag, nothing until the end), then the whole assistant message. False
// when an interrupt came first.
func (f *fake) drip(t *turnState, text string, n int) bool {
	u := f.apiCall(false)
	id := f.newMsgID()
	runes := []rune(text)
	n = max(1, min(n, len(runes)))
	event := func(ev map[string]any) {
		if f.opts.partial {
			f.out.line(map[string]any{"type": "stream_event", "event": ev, "session_id": f.sessionID,
				"parent_tool_use_id": nil, "uuid": uuid.NewString(), "api_message_id": id})
		}
	}
	event(map[string]any{"type": "message_start", "message": map[string]any{"id": id}})
	for i := range n {
		if i > 0 {
			select {
			case <-t.interrupt:
				return false
			case <-time.After(dripGap):
			}
		}
		chunk := string(runes[i*len(runes)/n : (i+1)*len(runes)/n])
		event(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": chunk}})
	}
	f.emitAssistant(t, id, textBlock(text), u)
	return true
}

func (f *fake) newMsgID() string {
	f.msgSeq++
	return fmt.Sprintf("msg_fake%06d", f.msgSeq)
}

// builtinTools is the fake's default tool set.
var builtinTools = []string{"Task", "Bash", "Edit", "Read", "Write", "WebFetch", "WebSearch"}

// toolSet is the session's tools: the default set, narrowed by --tools
// and --disallowedTools.
func (f *fake) toolSet() []string {
	tools := slices.Clone(builtinTools)
	if f.opts.tools != nil {
		tools = slices.DeleteFunc(tools, func(t string) bool { return !slices.Contains(f.opts.tools, t) })
	} else if f.opts.permissionPrompt == "stdio" {
		tools = append(tools, "AskUserQuestion", "EnterPlanMode")
	}
	return slices.DeleteFunc(tools, func(t string) bool { return slices.Contains(f.opts.disallowed, t) })
}

func (f *fake) emitInit(model string) {
	tools := f.toolSet()
	f.mu.Lock()
	mode := f.permissionMode
	f.mu.Unlock()
	f.out.line(map[string]any{
		"type": "system", "subtype": "init", "cwd": f.cwd, "session_id": f.sessionID,
		"tools": tools, "mcp_servers": []any{}, "model": model, "permissionMode": mode,
		"slash_commands": []any{"compact", "context"}, "apiKeySource": "none",
		"claude_code_version": version, "output_style": "default", "agents": []any{},
		"skills": []any{}, "plugins": []any{}, "capabilities": []any{"interrupt_receipt_v1"},
		"uuid": uuid.NewString(), "original_cwd": f.cwd, "additional_directories": []any{},
	})
}

// emitAssistant writes one assistant event (one block, stop_reason null, as
// streamed) and its transcript line, and accounts the call once per message.
// The message is the turn's last: its transcript line says end_turn.
func (f *fake) emitAssistant(t *turnState, msgID string, block map[string]any, u usage) {
	f.emitAssistantExtra(t, msgID, block, u, nil, "end_turn", true)
}

// emitToolCall writes a message that calls a tool: its text block, then
// the tool_use block. Each transcript line carries the message's stop
// reason, tool_use, as the CLI writes it (captures steer_transcript and
// steer_after_tool), so a transcript cut after the text block still shows
// a turn that goes on, never one that ended on that text.
func (f *fake) emitToolCall(t *turnState, msgID string, tool map[string]any, u usage) {
	f.emitAssistantExtra(t, msgID, textBlock("I'll run a command."), u, nil, "tool_use", true)
	// The window between the message's two blocks, where a kill of the
	// host can fall (FAKECLAUDE_BLOCK_GATE).
	f.holdAt("FAKECLAUDE_BLOCK_GATE")
	f.emitAssistantExtra(t, msgID, tool, u, nil, "tool_use", true)
}

func (f *fake) emitAssistantExtra(t *turnState, msgID string, block map[string]any, u usage, extra map[string]any, stop string, persist bool) {
	line := map[string]any{
		"type": "assistant",
		"message": map[string]any{
			"content": []any{block}, "id": msgID, "model": t.model, "role": "assistant",
			"stop_reason": nil, "stop_sequence": nil, "type": "message", "usage": u,
			"context_management": nil,
		},
		"parent_tool_use_id": nil, "session_id": f.sessionID, "uuid": uuid.NewString(),
		"timestamp": now(), "request_id": "req_" + msgID,
	}
	for k, v := range extra {
		line[k] = v
	}
	f.out.line(line)
	if persist {
		f.appendTranscript(f.assistantTranscriptLine(msgID, t.model, block, u, stop, false))
	}
	if t.firstOfMessage(msgID) {
		// The event shows message_start's stale output_tokens (1); the
		// totals count the reply's real length, as message_delta would.
		billed := u
		billed.OutputTokens = 1 + int64(len(blockText(block)))/4
		t.usage.add(billed)
		t.apiCalls++
		f.charge(t.model, billed)
	}
}

// firstOfMessage is true the first time a message id is seen in this turn:
// the blocks of one API message share its usage, which counts once.
func (t *turnState) firstOfMessage(msgID string) bool {
	if t.seenMsg == nil {
		t.seenMsg = map[string]bool{}
	}
	if t.seenMsg[msgID] {
		return false
	}
	t.seenMsg[msgID] = true
	return true
}

func (f *fake) emitToolResult(t *turnState, toolID, content string, isError bool) {
	id := uuid.NewString()
	block := map[string]any{"tool_use_id": toolID, "type": "tool_result", "content": content, "is_error": isError}
	f.out.line(map[string]any{
		"type": "user", "message": map[string]any{"role": "user", "content": []any{block}},
		"parent_tool_use_id": nil, "session_id": f.sessionID, "uuid": id, "timestamp": now(),
		"tool_use_result": map[string]any{"stdout": content, "stderr": "", "interrupted": false},
	})
	f.appendTranscript(f.userTranscriptLine(id, []any{block}))
}

// aborted ends an interrupted turn: the interruption notice, then an
// error_during_execution result with no "result" key.
func (f *fake) aborted(t *turnState, notice, reason string) resultLine {
	id := uuid.NewString()
	block := textBlock(notice)
	f.out.line(map[string]any{
		"type": "user", "message": map[string]any{"role": "user", "content": []any{block}},
		"parent_tool_use_id": nil, "session_id": f.sessionID, "uuid": id, "timestamp": now(),
	})
	f.appendTranscript(f.userTranscriptLine(id, []any{block}))
	return resultLine{
		Subtype: "error_during_execution", IsError: true, TerminalReason: reason,
		Errors: []string{"[ede_diagnostic] result_type=user last_content_type=text stop_reason=null"},
	}
}

// finish writes the turn's result with the session's cumulative figures,
// and the transcript's bookkeeping lines.
func (f *fake) finish(t *turnState, r resultLine) {
	r.Type = "result"
	r.SessionID = f.sessionID
	r.UUID = uuid.NewString()
	if r.Usage == nil {
		u := t.usage
		r.Usage = &u
	}
	if r.NumTurns == 0 {
		r.NumTurns = max(t.apiCalls, 1)
	}
	if r.PermissionDenials == nil {
		r.PermissionDenials = t.denials
		if r.PermissionDenials == nil {
			r.PermissionDenials = []any{}
		}
	}
	f.mu.Lock()
	r.TotalCostUSD = f.totalCost
	r.ModelUsage = make(map[string]*modelUsage, len(f.modelUsage))
	for k, v := range f.modelUsage {
		c := *v
		r.ModelUsage[k] = &c
	}
	r.ResultIndex = f.resultIndex
	f.resultIndex++
	f.lastIsError = r.IsError
	f.out.line(r)
	f.cur = nil
	f.mu.Unlock()
	f.bookkeeping(t.msg.text)

	switch f.opts.outputFormat {
	case "text":
		text := ""
		if r.Result != nil {
			text = *r.Result
		} else if len(r.Errors) > 0 {
			text = strings.Join(r.Errors, "\n")
		}
		fmt.Println(text)
	case "json":
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
}

func success(text string) resultLine {
	stop := "end_turn"
	return resultLine{Subtype: "success", Result: &text, TerminalReason: "completed", StopReason: &stop}
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func blockText(b map[string]any) string {
	s, _ := b["text"].(string)
	return s
}

// autoApproved mirrors the CLI's read-only auto-approval of commands like
// `echo hi` (PROTOCOL.md §4).
func autoApproved(cmd string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(cmd), " ")
	switch first {
	case "echo", "pwd", "ls", "cat", "sleep":
		return true
	}
	return false
}

// blockedPath is the path a command would touch: its last word, resolved in
// cwd.
func blockedPath(cwd, cmd string) string {
	fields := strings.Fields(cmd)
	if len(fields) == 0 {
		return cwd
	}
	last := fields[len(fields)-1]
	if strings.HasPrefix(last, "/") {
		return last
	}
	return cwd + "/" + last
}

// splitTools reads a tool list as the CLI does: comma or space separated.
func splitTools(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
}

// narrowTools keeps the tools both lists allow; nil is no list yet, and
// "default" allows every built-in tool.
func narrowTools(have, list []string) []string {
	if slices.Contains(list, "default") {
		list = builtinTools
	}
	if have == nil {
		return append([]string{}, list...)
	}
	return slices.DeleteFunc(slices.Clone(have), func(t string) bool { return !slices.Contains(list, t) })
}

// execReply runs cmd with /bin/sh -c in the working directory and says how
// it ended and what it printed (stdout and stderr together).
func execReply(cmd string) string {
	out, err := exec.Command("/bin/sh", "-c", cmd).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return "exec failed: " + err.Error()
	}
	return fmt.Sprintf("exec exit %d:\n%s", code, out)
}
