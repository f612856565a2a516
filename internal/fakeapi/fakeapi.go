// Package fakeapi is a fake Anthropic Messages API for tests: it lets the
// real claude CLI run offline against 127.0.0.1, answers with replies chosen
// by markers in the prompt (or by the test), and records every request so a
// test can assert what reached the API. It owns no production code path and
// must stay standard-library only.
//
// Markers in the last user message (the size markers [[TOOLONG]] and [[BIG]]
// anywhere in it, the others in its last text block, see Request.Prompt):
//
//	[[TOOL:cmd]]   a Bash tool_use running cmd; the follow-up carrying the
//	               tool_result gets a text reply ("[[TOOL]]" runs "echo hi")
//	[[TOOLONG]]    HTTP 400 "prompt is too long: 250000 tokens > 200000 maximum"
//	[[BIG]]        a normal reply reporting input_tokens 120000
//	[[SLOW]]       a reply that keeps streaming until the client disconnects
//	               or the test calls ReleaseSlow
//	[[OVERLOADED]] HTTP 529 overloaded_error
//	[[ERR500]]     HTTP 500 api_error
//	[[LIMIT]]      HTTP 429 rate_limit_error with the headers of a refused
//	               usage window (retry-after, anthropic-ratelimit-*-reset,
//	               x-should-retry: false), the reset RateLimitReset ahead
//
// Tool markers, each one tool_use (several in one prompt run in the order
// typed, one per request, each after the previous tool_result came back):
//
//	[[CALL:Name {json}]]  a tool_use of any tool with that input ({} if
//	                      none)
//	[[BG:cmd]]            Bash with run_in_background running cmd ("sleep
//	                      1; echo done" without one): the turn ends while
//	                      it runs, and the CLI starts a turn of its own
//	                      (a task-notification) when it finishes
//	[[ASK]]               AskUserQuestion with one two-option question;
//	[[ASK:[questions]]]   with the given questions array (question, header,
//	                      options [{label, description}], multiSelect)
//	[[PLAN]]              ExitPlanMode with DefaultPlan; [[PLAN:text]] with
//	                      text. In plan mode the fake first writes the plan
//	                      to the plan file the CLI named, as the CLI tells a
//	                      model to: the CLI reads the plan from that file
//	[[WRITE:path:text]]   Write text to path (relative to the CLI's working
//	                      directory, read from its environment message)
//	[[READ:path]]         Read path (relative as for WRITE)
//	[[TODO]]              TodoWrite with a three-item list (one completed,
//	[[TODO:[todos]]]      one in_progress, one pending); or the given list
//	                      of {content, status, activeForm}
//	[[MCP:server/tool {json}]]  the MCP tool mcp__server__tool
//
// A tool the CLI defers (absent from the request's tools: MCP tools,
// ExitPlanMode, TodoWrite) is first fetched with ToolSearch
// "select:<name>", as the CLI's ToolSearch description tells a model to.
// When every tool marker has run, the reply is "tool said: <the last
// tool_result's text>".
//
// A turn whose prompt says RepeatPhrase ("make the same call again", as
// cc-connect's continuation after an answer given while no process ran
// does) first makes the call it names ("(tool NAME, input {JSON})"), else
// repeats the last tool call of the history, as a model following it
// would.
//
// Answer markers:
//
//	[[THINK:text]]   a thinking block (thinking_delta, signature_delta)
//	                 before the first reply of the turn ([[THINK]]: a
//	                 stock thought)
//	[[STREAM:N:dur]] the text answer in N text_delta chunks
//	                 (StreamChunk), the first at once and the rest spread
//	                 evenly over dur (e.g. [[STREAM:20:10s]])
//
// An argument that starts as JSON ends where the JSON value ends, so it may
// hold "]]"; other arguments end at the first "]]". A marker that cannot be
// read gets the reply "fake API: cannot read marker …".
//
// Anything else gets "echo: <last text block of the last user message>".
package fakeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mode forces an answer regardless of the prompt, for requests whose text a
// test cannot mark (a resumed history, a compaction request).
type Mode string

// Modes. ModeNormal answers by the markers in the prompt.
const (
	ModeNormal     Mode = ""
	ModeTooLong    Mode = "toolong"
	ModeOverloaded Mode = "overloaded"
	ModeErr500     Mode = "err500"
	ModeBig        Mode = "big"
	ModeSlow       Mode = "slow"
	// ModeRateLimited answers 429 as [[LIMIT]] does, until the test sets
	// another mode (the window resets).
	ModeRateLimited Mode = "ratelimited"
	// ModeTooLongWithHistory answers "prompt is too long" to any request
	// that carries an earlier exchange (an assistant message), and normally
	// to a conversation's first request: a session whose history grew too
	// big, which only a fresh session escapes.
	ModeTooLongWithHistory Mode = "toolong-with-history"
)

// Outcomes recorded in Request.Outcome: what the fake answered.
const (
	OutcomeText       = "text"
	OutcomeToolUse    = "tool_use"
	OutcomeTooLong    = "toolong"
	OutcomeOverloaded = "overloaded"
	OutcomeErr500     = "err500"
	OutcomeRateLimit  = "rate_limit"
	OutcomeSlow       = "slow"
	OutcomeBadRequest = "bad_request"
	OutcomeNotFound   = "not_found"
	OutcomeCount      = "count_tokens"
)

// TooLongMessage is the API error text the fake sends for [[TOOLONG]].
const TooLongMessage = "prompt is too long: 250000 tokens > 200000 maximum"

// RateLimitMessage is the API error text the fake sends with a 429.
const RateLimitMessage = "This request would exceed your account's rate limit. Please try again later."

// RateLimitReset is how far ahead of the request the fake's 429 headers put
// the window's reset.
const RateLimitReset = time.Hour

// BigInputTokens is the input_tokens reported for [[BIG]].
const BigInputTokens = 120000

// DefaultModel is the model named in replies when a request names none.
const DefaultModel = "claude-opus-5-5"

// Usage is the usage the fake reports in message_start (and in the
// non-streaming reply). The CLI takes the input and cache fields from there.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// ContextTokens is what a call with this usage put into the context window.
func (u Usage) ContextTokens() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// Option configures a Server.
type Option func(*Server)

// WithUsage fixes the usage of every reply (instead of the default, whose
// cache_read grows with each request).
func WithUsage(u Usage) Option { return func(s *Server) { s.usage = &u } }

// WithReply makes every text reply say text instead of echoing the prompt.
func WithReply(text string) Option { return func(s *Server) { s.reply = text } }

// WithMode starts the server in a forced mode.
func WithMode(m Mode) Option { return func(s *Server) { s.mode = m } }

// Server is a running fake API. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	// closing is closed on cleanup so that [[SLOW]] streams end and the
	// HTTP server can shut down without waiting on them.
	closing   chan struct{}
	closeOnce sync.Once

	mu sync.Mutex // guards everything below
	// requests holds /v1/messages calls; others holds everything else.
	requests []Request
	others   []Request
	// changed is closed and replaced whenever requests grows, waking
	// WaitRequest callers.
	changed  chan struct{}
	seq      int
	mode     Mode
	modeOnce Mode
	usage    *Usage
	reply    string
	// release is closed by ReleaseSlow; streams started before keep the
	// channel they saw.
	release chan struct{}
	// firstChunks are when the first chunk of each paced answer was
	// flushed (pace.go).
	firstChunks []time.Time
}

// Start starts a fake API on 127.0.0.1 and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		closing: make(chan struct{}),
		changed: make(chan struct{}),
		release: make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL to put in ANTHROPIC_BASE_URL.
func (s *Server) URL() string { return s.srv.URL }

// Close ends slow streams and stops the server. Start registers it with
// t.Cleanup; calling it again is harmless.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// SetMode forces every following request into m; ModeNormal goes back to
// the markers.
func (s *Server) SetMode(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
}

// SetModeOnce forces only the next /v1/messages request into m (the
// "toolong-once" case: a resume whose first call fails, then recovers).
func (s *Server) SetModeOnce(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modeOnce = m
}

// SetUsage fixes the usage of following replies; the zero Usage restores the
// default.
func (s *Server) SetUsage(u Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u == (Usage{}) {
		s.usage = nil
		return
	}
	s.usage = &u
}

// SetReply makes following text replies say text; "" restores the echo.
func (s *Server) SetReply(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = text
}

// ReleaseSlow lets every [[SLOW]] stream in progress finish its reply.
// Slow requests that arrive later block again.
func (s *Server) ReleaseSlow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.release)
	s.release = make(chan struct{})
}

// Requests returns the /v1/messages requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// OtherRequests returns the requests to any other path (count_tokens,
// unknown endpoints), in order.
func (s *Server) OtherRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.others...)
}

// WaitRequest waits until the n-th (1-based) /v1/messages request has
// arrived and returns it, or returns ctx's error.
func (s *Server) WaitRequest(ctx context.Context, n int) (Request, error) {
	if n < 1 {
		return Request{}, fmt.Errorf("waiting for request %d: n must be at least 1", n)
	}
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			r := s.requests[n-1]
			s.mu.Unlock()
			return r, nil
		}
		ch, got := s.changed, len(s.requests)
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Request{}, fmt.Errorf("waiting for request %d (have %d): %w", n, got, ctx.Err())
		}
	}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.handleMessages(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		s.handleCountTokens(w, r)
	default:
		s.recordOther(newRequest(r, nil), OutcomeNotFound)
		writeError(w, http.StatusNotFound, "not_found_error", "no fake for "+r.Method+" "+r.URL.Path, "")
	}
}

// plan is what the fake decided to answer to one request.
type plan struct {
	outcome  string
	usage    Usage
	text     string    // reply text (text and tool_use outcomes)
	tool     *toolCall // the tool_use of a tool_use outcome
	thinking string
	stream   *streamSpec
	release  chan struct{}
	id       int
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	req := newRequest(r, body)
	var in apiRequest
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		req.Outcome = OutcomeBadRequest
		s.mu.Lock()
		req.Seq = len(s.requests) + 1
		s.appendLocked(req)
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request_error", "decoding request: "+err.Error(), "")
		return
	}
	req.fill(in)

	// Planning and recording under one lock keeps Seq equal to the
	// request's place in Requests when requests arrive concurrently.
	s.mu.Lock()
	p := s.planLocked(&req)
	s.appendLocked(req)
	s.mu.Unlock()

	reqID := fmt.Sprintf("req_fake%06d", p.id)
	switch p.outcome {
	case OutcomeTooLong:
		writeError(w, http.StatusBadRequest, "invalid_request_error", TooLongMessage, reqID)
		return
	case OutcomeOverloaded:
		writeError(w, 529, "overloaded_error", "Overloaded", reqID)
		return
	case OutcomeErr500:
		writeError(w, http.StatusInternalServerError, "api_error", "Internal server error", reqID)
		return
	case OutcomeRateLimit:
		writeRateLimit(w, time.Now(), reqID)
		return
	}
	model := in.Model
	if model == "" {
		model = DefaultModel
	}
	m := reply{
		msgID:    fmt.Sprintf("msg_fake%06d", p.id),
		toolID:   fmt.Sprintf("toolu_fake%06d", p.id),
		model:    model,
		usage:    p.usage,
		text:     p.text,
		tool:     p.tool,
		thinking: p.thinking,
		pace:     p.stream,
		slow:     p.outcome == OutcomeSlow,
	}
	w.Header().Set("request-id", reqID)
	if !in.Stream {
		writeJSON(w, http.StatusOK, m.message())
		return
	}
	m.chunkSent = s.noteChunk
	m.stream(r.Context(), w, p.release, s.closing)
}

// planLocked decides the answer and fills req's Seq, Outcome and Usage.
// Called with s.mu held.
func (s *Server) planLocked(req *Request) plan {
	s.seq++
	req.Seq = len(s.requests) + 1
	p := plan{id: s.seq, release: s.release}

	mode := s.mode
	if s.modeOnce != ModeNormal {
		mode, s.modeOnce = s.modeOnce, ModeNormal
	}
	// Size markers look at the whole merged user message: a prompt that was
	// too big stays in the history and fails again, as with the real API.
	// Behaviour markers look only at the block typed last, so that a
	// prompt left in the history (after an interrupt or an error) does not
	// act again when the next one is merged after it.
	inMessage := func(marker string) bool { return strings.Contains(req.LastUserText, marker) }
	inPrompt := func(marker string) bool { return strings.Contains(req.Prompt, marker) }
	followUp := req.FollowUp
	// The turn's prompt drives every request of the turn: its tool
	// markers run one per request, in order.
	spec := parsePrompt(req.TurnPrompt, req.Cwd, req.PlanFile)

	if mode == ModeTooLongWithHistory {
		mode = ModeNormal
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				mode = ModeTooLong
				break
			}
		}
	}
	var next toolCall
	hasNext := false
	if mode == ModeNormal {
		next, hasNext = nextCall(spec.actions, req.TurnToolUses, req.Tools)
	}
	if mode == ModeNormal && !hasNext && len(req.TurnToolUses) == 0 && strings.Contains(req.TurnPrompt, RepeatPhrase) {
		next, hasNext = repeatCall(req.TurnPrompt, req.Messages)
	}
	switch {
	case mode == ModeTooLong || mode == ModeNormal && !followUp && inMessage("[[TOOLONG]]"):
		p.outcome = OutcomeTooLong
	case mode == ModeOverloaded || mode == ModeNormal && !followUp && inPrompt("[[OVERLOADED]]"):
		p.outcome = OutcomeOverloaded
	case mode == ModeErr500 || mode == ModeNormal && !followUp && inPrompt("[[ERR500]]"):
		p.outcome = OutcomeErr500
	case mode == ModeRateLimited || mode == ModeNormal && !followUp && inPrompt("[[LIMIT]]"):
		p.outcome = OutcomeRateLimit
	case mode == ModeSlow || mode == ModeNormal && !followUp && inPrompt("[[SLOW]]"):
		p.outcome = OutcomeSlow
		p.text = "slow reply "
	case mode == ModeNormal && !followUp && len(spec.bad) > 0:
		p.outcome = OutcomeText
		p.text = "fake API: cannot read marker " + strings.Join(spec.bad, ", ")
	case hasNext:
		p.outcome = OutcomeToolUse
		p.text = "I'll use " + next.Name + "."
		if next.Name == "Bash" {
			p.text = "I'll run a command."
		}
		p.tool = &next
	case followUp:
		p.outcome = OutcomeText
		p.text = "tool said: " + req.ToolResults[len(req.ToolResults)-1].Content
		for _, n := range req.MidTurnNotes {
			p.text += "\nand you said: " + noteMessage(n)
		}
	case req.TaskNote != "" && req.Prompt == "":
		p.outcome = OutcomeText
		p.text = "background task: " + req.TaskNote
	default:
		p.outcome = OutcomeText
		p.text = "echo: " + req.Prompt
	}
	if mode == ModeNormal && p.outcome == OutcomeText && spec.stream != nil && len(spec.bad) == 0 {
		p.stream = spec.stream
	}
	if mode == ModeNormal && !followUp && spec.thinking != "" && (p.outcome == OutcomeText || p.outcome == OutcomeToolUse) {
		p.thinking = spec.thinking
	}
	if s.reply != "" && p.outcome == OutcomeText {
		p.text = s.reply
	}

	switch p.outcome {
	case OutcomeText, OutcomeToolUse, OutcomeSlow:
		if s.usage != nil {
			p.usage = *s.usage
		} else {
			// cache_read grows per request so that a turn's summed usage
			// and its last call's usage differ, as in real sessions.
			p.usage = Usage{InputTokens: 7, CacheCreationInputTokens: 1500,
				CacheReadInputTokens: 2500 + 100*int64(s.seq-1), OutputTokens: 1}
		}
		if mode == ModeBig || mode == ModeNormal && inMessage("[[BIG]]") {
			p.usage.InputTokens = BigInputTokens
		}
		req.Usage = p.usage
	}
	req.Outcome = p.outcome
	return p
}

func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	req := newRequest(r, body)
	var in apiRequest
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		s.recordOther(req, OutcomeBadRequest)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "decoding request: "+err.Error(), "")
		return
	}
	req.fill(in)
	s.recordOther(req, OutcomeCount)
	// A rough, deterministic estimate: about four bytes per token.
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": len(body)/4 + 1})
}

// appendLocked records a /v1/messages request and wakes WaitRequest.
// Called with s.mu held.
func (s *Server) appendLocked(req Request) {
	s.requests = append(s.requests, req)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) recordOther(req Request, outcome string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.Outcome = outcome
	req.Seq = len(s.others) + 1
	s.others = append(s.others, req)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, msg, reqID string) {
	body := map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	}
	if reqID != "" {
		body["request_id"] = reqID
		w.Header().Set("request-id", reqID)
	}
	writeJSON(w, status, body)
}

// writeRateLimit answers as the API does when a usage window is exhausted:
// 429 with the window's reset in the headers (the body names none).
func writeRateLimit(w http.ResponseWriter, now time.Time, reqID string) {
	reset := now.Add(RateLimitReset).UTC().Truncate(time.Second)
	h := w.Header()
	h.Set("retry-after", fmt.Sprint(int(RateLimitReset/time.Second)))
	h.Set("x-should-retry", "false")
	h.Set("anthropic-ratelimit-unified-status", "rejected")
	h.Set("anthropic-ratelimit-unified-reset", fmt.Sprint(reset.Unix()))
	h.Set("anthropic-ratelimit-requests-reset", reset.Format(time.RFC3339))
	h.Set("anthropic-ratelimit-tokens-reset", reset.Format(time.RFC3339))
	writeError(w, http.StatusTooManyRequests, "rate_limit_error", RateLimitMessage, reqID)
}
