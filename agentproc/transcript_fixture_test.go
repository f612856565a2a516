package agentproc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// transcriptBuilder writes transcript lines in the shape the CLI 2.1.328
// writes them (PROTOCOL.md §6): compact JSON, the CLI's key order,
// conversation lines chained by parentUuid, bookkeeping lines without it.
type transcriptBuilder struct {
	sid, cwd, branch string
	parent           string // uuid of the last conversation line
	n                int
	buf              bytes.Buffer
}

func newTranscript(sid, cwd string) *transcriptBuilder {
	return &transcriptBuilder{sid: sid, cwd: cwd, branch: "main"}
}

// q is a JSON string literal.
func q(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (b *transcriptBuilder) nextUUID() string {
	b.n++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", len(b.sid), b.n)
}

func (b *transcriptBuilder) ts() string {
	return fmt.Sprintf(`"2026-11-30T11:%02d:%02d.%03dZ"`, (b.n/60)%60, b.n%60, b.n%1000)
}

func (b *transcriptBuilder) parentJSON() string {
	if b.parent == "" {
		return "null"
	}
	return q(b.parent)
}

func (b *transcriptBuilder) line(s string) *transcriptBuilder {
	b.buf.WriteString(s)
	b.buf.WriteByte('\n')
	return b
}

// raw appends s as it is, without a newline.
func (b *transcriptBuilder) raw(s string) *transcriptBuilder {
	b.buf.WriteString(s)
	return b
}

func (b *transcriptBuilder) tail() string {
	return fmt.Sprintf(`"userType":"external","entrypoint":"sdk-cli","cwd":%s,"sessionId":%s,"version":"2.1.328","gitBranch":%s`,
		q(b.cwd), q(b.sid), q(b.branch))
}

func (b *transcriptBuilder) queue(prompt string) *transcriptBuilder {
	b.line(fmt.Sprintf(`{"type":"queue-operation","operation":"enqueue","timestamp":%s,"sessionId":%s,"content":%s}`, b.ts(), q(b.sid), q(prompt)))
	return b.line(fmt.Sprintf(`{"type":"queue-operation","operation":"dequeue","timestamp":%s,"sessionId":%s}`, b.ts(), q(b.sid)))
}

// userContent writes a user line with content given as raw JSON and extra
// top-level fields (raw JSON members, may be empty).
func (b *transcriptBuilder) userContent(uuid, content, extra string) *transcriptBuilder {
	if uuid == "" {
		uuid = b.nextUUID()
	}
	if extra != "" {
		extra += ","
	}
	b.line(fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"promptId":"p-%d","type":"user","message":{"role":"user","content":%s},%s"uuid":%s,"timestamp":%s,"permissionMode":"default","promptSource":"sdk","turnOrigin":"sdk",%s}`,
		b.parentJSON(), b.n, content, extra, q(uuid), b.ts(), b.tail()))
	b.parent = uuid
	return b
}

func (b *transcriptBuilder) user(prompt string) *transcriptBuilder {
	return b.userContent("", q(prompt), "")
}

func (b *transcriptBuilder) userUUID(prompt, uuid string) *transcriptBuilder {
	return b.userContent(uuid, q(prompt), "")
}

func (b *transcriptBuilder) meta(text string) *transcriptBuilder {
	return b.userContent("", q(text), `"isMeta":true`)
}

func (b *transcriptBuilder) toolResult(id, out string) *transcriptBuilder {
	return b.userContent("", fmt.Sprintf(`[{"tool_use_id":%s,"type":"tool_result","content":%s,"is_error":false}]`, q(id), q(out)),
		fmt.Sprintf(`"toolUseResult":{"stdout":%s,"stderr":"","interrupted":false,"isImage":false}`, q(out)))
}

func (b *transcriptBuilder) attachment() *transcriptBuilder {
	u := b.nextUUID()
	b.line(fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"attachment","attachment":{"type":"date","date":"2026-11-30"},"rendered":["Today is 2026-11-30."],"renderedRole":"system","uuid":%s,"timestamp":%s,%s}`,
		b.parentJSON(), q(u), b.ts(), b.tail()))
	b.parent = u
	return b
}

func (b *transcriptBuilder) apiRequest(blob string) *transcriptBuilder {
	b.line(fmt.Sprintf(`{"type":"api-request-shape","sessionId":%s,"timestamp":%s}`, q(b.sid), b.ts()))
	b.line(fmt.Sprintf(`{"type":"api-request-blob","sessionId":%s,"blob":%s}`, q(b.sid), q(blob)))
	return b.line(fmt.Sprintf(`{"type":"api-request","sessionId":%s,"requestId":"req_fake%06d"}`, q(b.sid), b.n))
}

// request writes the api-request line the CLI writes before each API call
// (about 1.2 KB in 2.1.328).
func (b *transcriptBuilder) request() *transcriptBuilder {
	return b.line(fmt.Sprintf(`{"type":"api-request","sessionId":%s,"id":%s,"timestamp":%s,"version":"2.1.328","querySource":"sdk","shapeHash":"bb6efe5d9eee498d1b3793e5669012ce987ef4e1f202170fa6b24871d0a8e21f","params":{"model":"claude-opus-5-5","betas":["claude-code-20250219","interleaved-thinking-2025-05-14","context-management-2025-06-27"],"max_tokens":128000,"thinking":{"type":"adaptive","display":"updates"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"medium"}},"keep":2,"tail":["736ed1d4c4aa23bbfc4c6da9f04b55a690281d83c895f692f3897f81ed1caaba","eccf74e2cbc042d9b087a55adc2b4f27b9eb60dfcb70fdc6ead2e5967862289c"],"cacheControl":[{"path":["system",0],"value":{"type":"ephemeral"}},{"path":["messages",3,"content",0],"value":{"type":"ephemeral"}}],"requestDigest":"b0364918cc0526d35a7b345fec9e1a5a416a6ee6a82fb65d7e2fa7f57161af79"}`,
		q(b.sid), q(b.nextUUID()), b.ts()))
}

// shape writes an api-request-shape line of about n bytes; the CLI writes
// one (some 43 KB: the system prompt and tool list) when the request shape
// changes, e.g. on a session's first request.
func (b *transcriptBuilder) shape(n int) *transcriptBuilder {
	text := strings.Repeat("You are an agent working with the user toward their goals. ", max(1, n/60))
	return b.line(fmt.Sprintf(`{"type":"api-request-shape","sessionId":%s,"timestamp":%s,"version":"2.1.328","shape":{"system":[{"type":"text","text":%s}]}}`,
		q(b.sid), b.ts(), q(text)))
}

// assistant writes an assistant line with content blocks as raw JSON; stop
// "" is written as null.
func (b *transcriptBuilder) assistant(content, stop, extra string) *transcriptBuilder {
	u := b.nextUUID()
	sr := "null"
	if stop != "" {
		sr = q(stop)
	}
	if extra != "" {
		extra += ","
	}
	b.line(fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"assistant","message":{"id":"msg_fake%06d","type":"message","role":"assistant","model":"claude-opus-5-5","content":%s,"stop_reason":%s,"stop_sequence":null,"usage":{"input_tokens":7,"cache_creation_input_tokens":1500,"cache_read_input_tokens":2700,"output_tokens":3}},"requestId":"req_fake%06d",%s"uuid":%s,"timestamp":%s,%s}`,
		b.parentJSON(), b.n, content, sr, b.n, extra, q(u), b.ts(), b.tail()))
	b.parent = u
	return b
}

func (b *transcriptBuilder) text(text, stop string) *transcriptBuilder {
	return b.assistant(fmt.Sprintf(`[{"type":"text","text":%s}]`, q(text)), stop, "")
}

func (b *transcriptBuilder) toolUse(id, command, stop string) *transcriptBuilder {
	return b.assistant(fmt.Sprintf(`[{"type":"tool_use","id":%s,"name":"Bash","input":{"command":%s,"description":"Run it"}}]`, q(id), q(command)), stop, "")
}

func (b *transcriptBuilder) apiError(text string) *transcriptBuilder {
	return b.assistant(fmt.Sprintf(`[{"type":"text","text":%s}]`, q(text)), "stop_sequence", `"isApiErrorMessage":true,"error":"invalid_request","apiErrorStatus":400`)
}

func (b *transcriptBuilder) lastPrompt(p string) *transcriptBuilder {
	return b.line(fmt.Sprintf(`{"type":"last-prompt","lastPrompt":%s,"leafUuid":%s,"sessionId":%s}`, q(p), b.parentJSON(), q(b.sid)))
}

func (b *transcriptBuilder) atisLatch() *transcriptBuilder {
	return b.line(fmt.Sprintf(`{"type":"atis-latch","atis":"","sessionId":%s}`, q(b.sid)))
}

func (b *transcriptBuilder) costState() *transcriptBuilder {
	return b.line(fmt.Sprintf(`{"type":"cost-state","sessionId":%s,"totalCostUSD":0.008088,"modelUsage":{"claude-opus-5-5":{"inputTokens":7,"outputTokens":3}}}`, q(b.sid)))
}

func (b *transcriptBuilder) customTitle(t string) *transcriptBuilder {
	return b.line(fmt.Sprintf(`{"type":"custom-title","customTitle":%s,"sessionId":%s}`, q(t), q(b.sid)))
}

func (b *transcriptBuilder) aiTitle(t string) *transcriptBuilder {
	return b.line(fmt.Sprintf(`{"type":"ai-title","aiTitle":%s,"sessionId":%s}`, q(t), q(b.sid)))
}

func (b *transcriptBuilder) summary(t string) *transcriptBuilder {
	return b.line(fmt.Sprintf(`{"type":"summary","summary":%s,"leafUuid":%s}`, q(t), b.parentJSON()))
}

// turn writes one whole turn as the CLI 2.1.328 does: queue, prompt,
// attachments, request bookkeeping, a tool call and its result, the final
// answer, then last-prompt, atis-latch and cost-state.
func (b *transcriptBuilder) turn(prompt, toolOut, answer string) *transcriptBuilder {
	tool := fmt.Sprintf("toolu_fake%06d", b.n)
	b.queue(prompt).user(prompt).attachment().attachment().request()
	b.text("I'll run a command.", "tool_use").toolUse(tool, "echo hi", "tool_use")
	b.toolResult(tool, toolOut).request()
	b.text(answer, "end_turn")
	return b.lastPrompt(prompt).atisLatch().costState()
}

func (b *transcriptBuilder) bytes() []byte { return b.buf.Bytes() }

// writeTo writes the transcript to dir/<sid>.jsonl with the CLI's mode.
func (b *transcriptBuilder) writeTo(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, b.sid+".jsonl")
	if err := os.WriteFile(p, b.buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
