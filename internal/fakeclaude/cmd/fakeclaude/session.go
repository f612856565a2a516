package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

const defaultModel = "claude-opus-5-5"

// fake is the state of one fake CLI process.
type fake struct {
	opts options
	out  *out

	cwd        string
	configDir  string
	sessionID  string
	path       string // transcript file
	resumed    bool   // --resume without --fork-session, or with it
	lastUUID   string // parentUuid for the next transcript line
	sticky     bool   // the session holds a prompt-too-long failure
	exchanges  int    // prompts in the session's history
	calls      int    // API calls made in the session, grows cache_read
	toolSeq    int
	msgSeq     int
	allowRules map[string]bool
	// unanswered are the messages the resumed session's last turn took in
	// (queued_command attachments) with no reply written after them.
	unanswered []string

	stdinEOF chan struct{} // closed when stdin ends
	own      chan bgTask   // background tasks that ended: the CLI's own turns (background.go)

	mu             sync.Mutex // guards the fields below, and orders control answers
	model          string
	permissionMode string
	totalCost      float64
	modelUsage     map[string]*modelUsage
	resultIndex    int
	lastIsError    bool
	lastUsage      *usage
	cur            *turnState
	bgStops        map[string]chan struct{} // running background tasks, closed by stop_task
	backups        []turnBackups            // with checkpointing: what each turn's writes replaced, oldest first
}

type modelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	WebSearchRequests        int64   `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow"`
	MaxOutputTokens          int64   `json:"maxOutputTokens"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

func (u *usage) add(o usage) {
	u.InputTokens += o.InputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
	u.CacheReadInputTokens += o.CacheReadInputTokens
	u.OutputTokens += o.OutputTokens
}

func newFake(o options) (*fake, error) {
	f := &fake{
		opts:           o,
		out:            &out{w: bufio.NewWriterSize(os.Stdout, 64<<10), stream: o.outputFormat == "stream-json"},
		cwd:            resolveCwd(),
		model:          o.model,
		permissionMode: o.permissionMode,
		modelUsage:     map[string]*modelUsage{},
		allowRules:     map[string]bool{},
		stdinEOF:       make(chan struct{}),
		own:            make(chan bgTask, 16),
	}
	f.configDir = configDirOf(f.cwd)
	if f.model == "" {
		f.model = defaultModel
	}
	if f.permissionMode == "" || f.permissionMode == "manual" {
		f.permissionMode = "default"
	}
	return f, nil
}

// errNoSession and errBadResume are the two ways --resume fails.
var (
	errNoSession = errors.New("no conversation found")
	errBadResume = errors.New("not a session")
)

// openSession picks the session id and transcript: new, resumed or forked.
func (f *fake) openSession() error {
	projects := filepath.Join(f.configDir, "projects")
	if f.opts.cont && f.opts.resume == "" {
		// As the CLI: the newest session of this cwd, else a new one.
		f.opts.resume = newestSession(filepath.Join(projects, projectFolder(f.cwd)))
	}
	if f.opts.resume == "" {
		f.sessionID = f.opts.sessionID
		if f.sessionID == "" {
			f.sessionID = uuid.NewString()
		} else if p := findTranscript(projects, f.sessionID); p != "" {
			fail(fmt.Sprintf("Error: Session ID %s is already in use.", f.sessionID))
		}
		f.path = filepath.Join(projects, projectFolder(f.cwd), f.sessionID+".jsonl")
		return nil
	}
	if _, err := uuid.Parse(f.opts.resume); err != nil {
		return errBadResume
	}
	orig := findTranscript(projects, f.opts.resume)
	if orig == "" {
		return errNoSession
	}
	f.resumed = true
	if err := f.loadHistory(orig); err != nil {
		return fmt.Errorf("reading session %s: %w", f.opts.resume, err)
	}
	if !f.opts.fork {
		// The CLI keeps appending to the original file, even from
		// another cwd.
		f.sessionID, f.path = f.opts.resume, orig
		return nil
	}
	f.sessionID = f.opts.sessionID
	if f.sessionID == "" {
		f.sessionID = uuid.NewString()
	}
	f.path = filepath.Join(projects, projectFolder(f.cwd), f.sessionID+".jsonl")
	return f.copyForFork(orig)
}

// sessionError reports a failed --resume the way the CLI does in
// stream-json mode: stderr text, one result line with errors, exit 1,
// without waiting for stdin.
func (f *fake) sessionError(err error) {
	var msg string
	id := f.opts.resume
	switch {
	case errors.Is(err, errNoSession):
		msg = "No conversation found with session ID: " + f.opts.resume
	case errors.Is(err, errBadResume):
		msg = fmt.Sprintf("Error: --resume requires a valid session ID or session title when used with --print. Usage: claude -p --resume <session-id|title>. Provided value %q is not a UUID and does not match any session title.", f.opts.resume)
		id = uuid.NewString()
	default:
		msg = "Error: " + err.Error()
		id = uuid.NewString()
	}
	fmt.Fprintln(os.Stderr, msg)
	f.out.line(resultLine{
		Type: "result", Subtype: "error_during_execution", IsError: true, SessionID: id,
		Usage: &usage{}, ModelUsage: map[string]*modelUsage{}, PermissionDenials: []any{},
		UUID: uuid.NewString(), Errors: []string{msg},
	})
	f.out.flush()
	os.Exit(1)
}

// newestSession is the id of the most recently written transcript in dir.
func newestSession(dir string) string {
	matches, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var best string
	var bestTime time.Time
	for _, m := range matches {
		st, err := os.Stat(m)
		if err == nil && st.ModTime().After(bestTime) {
			best, bestTime = m, st.ModTime()
		}
	}
	if best == "" {
		return ""
	}
	return strings.TrimSuffix(filepath.Base(best), ".jsonl")
}

func findTranscript(projects, id string) string {
	matches, _ := filepath.Glob(filepath.Join(projects, "*", id+".jsonl"))
	if len(matches) == 0 {
		return ""
	}
	return matches[0]
}

// transcriptLine is the subset of transcript fields the fake reads back.
type transcriptLine struct {
	Type              string `json:"type"`
	UUID              string `json:"uuid"`
	IsAPIErrorMessage bool   `json:"isApiErrorMessage"`
	Message           *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Attachment *struct {
		Type   string `json:"type"`
		Prompt string `json:"prompt"`
	} `json:"attachment"`
	TotalCostUSD float64                `json:"totalCostUSD"`
	ModelUsage   map[string]*modelUsage `json:"modelUsage"`
}

// loadHistory restores what a resumed session carries: the parent chain,
// the prompt count, the cost state and a pending prompt-too-long failure.
func (f *fake) loadHistory(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var l transcriptLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if l.UUID != "" {
			f.lastUUID = l.UUID
		}
		switch l.Type {
		case "user":
			if l.Message != nil && isPrompt(l.Message.Content) {
				f.exchanges++
			}
		case "attachment":
			if l.Attachment != nil && l.Attachment.Type == "queued_command" {
				f.unanswered = append(f.unanswered, l.Attachment.Prompt)
			}
		case "assistant":
			f.unanswered = nil // the reply after them answers them
			f.calls++
			f.sticky = l.IsAPIErrorMessage && l.Message != nil &&
				strings.HasPrefix(contentText(l.Message.Content), "Prompt is too long")
		case "cost-state":
			f.totalCost = l.TotalCostUSD
			if l.ModelUsage != nil {
				f.modelUsage = l.ModelUsage
			}
		}
	}
	return sc.Err()
}

// isPrompt tells a typed prompt from a tool_result carrier.
func isPrompt(content json.RawMessage) bool {
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return true // a plain string
	}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			return false
		}
	}
	return true
}

// copyForFork writes the fork's transcript: a mode line, then the history
// rewritten with the new sessionId. The original is only read.
func (f *fake) copyForFork(orig string) error {
	src, err := os.ReadFile(orig)
	if err != nil {
		return err
	}
	var b strings.Builder
	head, _ := json.Marshal(map[string]any{"type": "mode", "mode": "normal", "sessionId": f.sessionID})
	b.Write(head)
	b.WriteByte('\n')
	for _, line := range strings.Split(string(src), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if _, ok := m["sessionId"]; ok {
			m["sessionId"] = f.sessionID
		}
		nb, _ := json.Marshal(m)
		b.Write(nb)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(f.path, []byte(b.String()), 0o600)
}

// appendTranscript adds lines to the session's transcript (mode 0600).
func (f *fake) appendTranscript(lines ...map[string]any) {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude: transcript:", err)
		return
	}
	var b []byte
	for _, l := range lines {
		if _, ok := l["sessionId"]; !ok {
			l["sessionId"] = f.sessionID
		}
		if u, ok := l["uuid"].(string); ok && l["type"] != "last-prompt" {
			if _, has := l["parentUuid"]; !has {
				if f.lastUUID == "" {
					l["parentUuid"] = nil
				} else {
					l["parentUuid"] = f.lastUUID
				}
			}
			f.lastUUID = u
		}
		nb, _ := json.Marshal(l)
		b = append(append(b, nb...), '\n')
	}
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude: transcript:", err)
		return
	}
	defer fh.Close()
	fh.Write(b)
}

func (f *fake) userTranscriptLine(id string, content any) map[string]any {
	return map[string]any{
		"isSidechain": false, "type": "user",
		"message": map[string]any{"role": "user", "content": content},
		"uuid":    id, "timestamp": now(), "permissionMode": f.permissionMode,
		"promptSource": "sdk", "userType": "external", "entrypoint": "sdk-cli",
		"cwd": f.cwd, "version": version, "gitBranch": "HEAD",
	}
}

func (f *fake) assistantTranscriptLine(msgID, model string, block map[string]any, u usage, stop string, apiError bool) map[string]any {
	l := map[string]any{
		"isSidechain": false, "type": "assistant",
		"message": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": u,
		},
		"requestId": "req_" + msgID, "uuid": uuid.NewString(), "timestamp": now(),
		"userType": "external", "entrypoint": "sdk-cli", "cwd": f.cwd, "version": version, "gitBranch": "HEAD",
	}
	if apiError {
		l["isApiErrorMessage"] = true
		l["error"] = "invalid_request"
		l["apiErrorStatus"] = 400
	}
	return l
}

func (f *fake) bookkeeping(lastPrompt string) {
	f.mu.Lock()
	mu := make(map[string]*modelUsage, len(f.modelUsage))
	for k, v := range f.modelUsage {
		c := *v
		mu[k] = &c
	}
	cost := f.totalCost
	f.mu.Unlock()
	f.appendTranscript(
		map[string]any{"type": "last-prompt", "lastPrompt": lastPrompt, "leafUuid": f.lastUUID},
		map[string]any{"type": "cost-state", "totalCostUSD": cost, "modelUsage": mu},
	)
}

// contextWindow is the model's window, or FAKECLAUDE_CONTEXT_WINDOW.
func contextWindow(model string) int64 {
	if v, err := strconv.ParseInt(os.Getenv("FAKECLAUDE_CONTEXT_WINDOW"), 10, 64); err == nil && v > 0 {
		return v
	}
	if strings.Contains(model, "sonnet-4-5") || strings.Contains(model, "haiku-4-5") {
		return 200000
	}
	return 1000000
}

// apiCall accounts one fake API call and returns its usage (as
// message_start reports it: output_tokens 1).
func (f *fake) apiCall(big bool) usage {
	in := int64(7)
	if v, err := strconv.ParseInt(os.Getenv("FAKECLAUDE_INPUT_TOKENS"), 10, 64); err == nil && v >= 0 {
		in = v
	}
	if big {
		in = 120000
	}
	u := usage{InputTokens: in, CacheCreationInputTokens: 1500, CacheReadInputTokens: 2500 + 100*int64(f.calls), OutputTokens: 1}
	f.calls++
	return u
}

// charge adds one call's cost to the session totals.
func (f *fake) charge(model string, u usage) {
	cost := (float64(u.InputTokens)*5 + float64(u.CacheCreationInputTokens)*6.25 +
		float64(u.CacheReadInputTokens)*0.5 + float64(u.OutputTokens)*25) / 1e6
	f.mu.Lock()
	defer f.mu.Unlock()
	mu := f.modelUsage[model]
	if mu == nil {
		mu = &modelUsage{MaxOutputTokens: 128000}
		f.modelUsage[model] = mu
	}
	mu.ContextWindow = contextWindow(model)
	mu.InputTokens += u.InputTokens
	mu.OutputTokens += u.OutputTokens
	mu.CacheReadInputTokens += u.CacheReadInputTokens
	mu.CacheCreationInputTokens += u.CacheCreationInputTokens
	mu.CostUSD += cost
	f.totalCost += cost
	lu := u
	f.lastUsage = &lu
}

func now() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }
