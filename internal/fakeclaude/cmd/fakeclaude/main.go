// Command fakeclaude imitates the Claude Code CLI 2.1.332 in `-p` mode for
// unit tests, as PROTOCOL.md §11 describes: the flags and their errors, the
// stream-json input and output, the control protocol (permissions,
// interrupt, set_model, set_permission_mode), sessions persisted as
// transcripts in the real format (resume, fork), prompt-too-long, and exit
// codes. Scenarios are chosen by markers in the prompt and by environment
// variables; package internal/fakeclaude documents them and builds this
// binary for tests.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
)

const version = "2.1.332"

// options are the parsed command-line flags.
type options struct {
	print              bool
	verbose            bool
	inputFormat        string
	outputFormat       string
	permissionPrompt   string
	resume             string
	sessionID          string
	fork               bool
	cont               bool // --continue: the newest session of this cwd
	model              string
	permissionMode     string
	appendSystemPrompt string
	prompt             string
	// tools (--tools, nil when absent) and disallowed (--disallowedTools)
	// narrow the tool set, as the CLI does.
	tools      []string
	disallowed []string
	// partial is --include-partial-messages: a [[DRIP:N]] reply streams.
	partial bool
}

var boolFlags = map[string]bool{
	"-p": true, "--print": true, "--verbose": true, "--fork-session": true,
	"--include-partial-messages": true, "--replay-user-messages": true,
	"--dangerously-skip-permissions": true, "--bare": true, "--strict-mcp-config": true,
	"--continue": true, "-c": true,
}

var valueFlags = map[string]bool{
	"--input-format": true, "--output-format": true, "--permission-prompt-tool": true,
	"--resume": true, "-r": true, "--session-id": true, "--model": true,
	"--append-system-prompt": true, "--system-prompt": true, "--system-prompt-snapshot": true,
	"--permission-mode": true, "--allowedTools": true, "--disallowedTools": true,
	"--add-dir": true, "--max-turns": true, "--settings": true, "--mcp-config": true,
	"--fallback-model": true, "--tools": true,
}

func parseArgs(args []string) (options, error) {
	o := options{inputFormat: "text", outputFormat: "text"}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--version" || a == "-v" {
			v := version
			if o := os.Getenv("FAKECLAUDE_VERSION"); o != "" {
				v = o
			}
			fmt.Println(v + " (Claude Code)")
			os.Exit(0)
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case boolFlags[name] && !hasVal:
			switch name {
			case "-p", "--print":
				o.print = true
			case "--verbose":
				o.verbose = true
			case "--fork-session":
				o.fork = true
			case "--continue", "-c":
				o.cont = true
			case "--include-partial-messages":
				o.partial = true
			}
		case valueFlags[name]:
			if !hasVal {
				if i+1 >= len(args) {
					return o, fmt.Errorf("error: option '%s <value>' argument missing", name)
				}
				i++
				val = args[i]
			}
			switch name {
			case "--input-format":
				o.inputFormat = val
			case "--output-format":
				o.outputFormat = val
			case "--permission-prompt-tool":
				o.permissionPrompt = val
			case "--resume", "-r":
				o.resume = val
			case "--session-id":
				o.sessionID = val
			case "--model":
				o.model = val
			case "--append-system-prompt":
				o.appendSystemPrompt = val
			case "--permission-mode":
				o.permissionMode = val
			case "--tools":
				// Repeated --tools narrow: the CLI keeps the built-in
				// tools every list names, "default" naming all.
				o.tools = narrowTools(o.tools, splitTools(val))
			case "--disallowedTools":
				o.disallowed = append(o.disallowed, splitTools(val)...)
			}
		default:
			return o, fmt.Errorf("error: unknown option '%s'", a)
		}
	}
	o.prompt = strings.Join(positional, " ")
	return o, nil
}

// fail prints msg on stderr and exits 1, as the CLI does for flag errors.
func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}

func main() {
	if d, err := time.ParseDuration(os.Getenv("FAKECLAUDE_SLEEPER")); err == nil {
		time.Sleep(d) // the [[ORPHAN]] background job
		return
	}
	o, err := parseArgs(os.Args[1:])
	if err != nil {
		fail(err.Error())
	}
	if !o.print {
		fail("fakeclaude: only -p (print) mode is imitated")
	}
	if o.outputFormat == "stream-json" && !o.verbose {
		fail("Error: When using --print, --output-format=stream-json requires --verbose")
	}
	if o.inputFormat == "stream-json" && o.outputFormat != "stream-json" {
		fail("Error: --input-format=stream-json requires output-format=stream-json.")
	}
	if o.sessionID != "" {
		if _, err := uuid.Parse(o.sessionID); err != nil {
			fail("Error: Invalid session ID. Must be a valid UUID.")
		}
		if o.resume != "" && !o.fork {
			fail("Error: --session-id with --continue or --resume also needs --fork-session.")
		}
	}
	if (o.permissionMode == "bypassPermissions") && os.Getuid() == 0 && os.Getenv("IS_SANDBOX") != "1" {
		fail("--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons")
	}

	f, err := newFake(o)
	if err != nil {
		fail("fakeclaude: " + err.Error())
	}

	if os.Getenv("FAKECLAUDE_IGNORE_SIGTERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		go func() {
			<-sigs
			f.out.flush()
			os.Exit(143) // as the CLI: no result, 128+15
		}()
	}

	if err := f.openSession(); err != nil {
		f.sessionError(err)
	}
	if o.inputFormat == "stream-json" {
		f.runStream(os.Stdin)
	} else {
		f.runOneShot(os.Stdin)
	}
}

// out serializes stdout lines.
type out struct {
	mu sync.Mutex
	w  *bufio.Writer
	// stream is false in the text and json output formats, which print
	// only the final result.
	stream bool
}

func (o *out) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	o.raw(b)
}

func (o *out) raw(b []byte) {
	if !o.stream {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Write(b)
	o.w.WriteByte('\n')
	o.w.Flush()
}

func (o *out) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Flush()
}

// inbound is one stdin line.
type inbound struct {
	Type    string `json:"type"`
	Message *struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	UUID      string          `json:"uuid"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
}

// userMsg is one user line to run as (or fold into) a turn.
type userMsg struct {
	text string
	uuid string
}

// runStream is the long-lived mode: nothing is written before the first
// user line; each user line runs as a turn, in order; control requests are
// answered as they come.
func (f *fake) runStream(stdin io.Reader) {
	queue := make(chan userMsg, 4096)
	go f.readStdin(stdin, queue)
	for {
		select {
		case m, ok := <-queue:
			if !ok {
				f.exit()
				return
			}
			for left := f.runTurn(m); len(left) > 0; {
				next := left[0]
				f.appendTranscript(dequeueLine())
				left = append(left[1:], f.runTurn(next)...)
			}
		case task := <-f.own:
			f.runOwnTurn(task)
		}
	}
}

// runOneShot runs the prompt argument (or stdin) as one turn.
func (f *fake) runOneShot(stdin io.Reader) {
	prompt := f.opts.prompt
	if prompt == "" {
		b, _ := io.ReadAll(stdin)
		prompt = strings.TrimSpace(string(b))
	}
	close(f.stdinEOF) // no host to answer permission prompts
	f.runTurn(userMsg{text: prompt, uuid: uuid.NewString()})
	f.exit()
}

func (f *fake) exit() {
	f.mu.Lock()
	code := 0
	if f.lastIsError {
		code = 1
	}
	f.mu.Unlock()
	f.out.flush()
	os.Exit(code)
}

func (f *fake) readStdin(stdin io.Reader, queue chan<- userMsg) {
	defer close(queue)
	defer close(f.stdinEOF)
	br := bufio.NewReaderSize(stdin, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			f.handleInput(line, queue)
		}
		if err != nil {
			return
		}
	}
}

func (f *fake) handleInput(line []byte, queue chan<- userMsg) {
	var in inbound
	if err := json.Unmarshal(line, &in); err != nil {
		f.out.flush()
		fail(fmt.Sprintf("Error parsing streaming input line (type=unknown, %d chars): SyntaxError", len(strings.TrimRight(string(line), "\n"))))
	}
	switch in.Type {
	case "user":
		role := "undefined"
		if in.Message != nil && in.Message.Role != nil {
			role = *in.Message.Role
		}
		if role != "user" {
			f.out.flush()
			fail(fmt.Sprintf("Error: Expected message role 'user', got '%s'", role))
		}
		m := userMsg{text: contentText(in.Message.Content), uuid: in.UUID}
		if m.uuid == "" {
			m.uuid = uuid.NewString()
		}
		f.record(m)
		if f.foldIntoTurn(m) {
			return
		}
		queue <- m
		if strings.Contains(m.text, "[[DEAF]]") {
			select {} // stop reading stdin for good; the turn hangs
		}
	case "control_request":
		f.handleControl(in.RequestID, in.Request)
	case "control_response":
		if in.Response != nil {
			f.handleAnswer(in.Response.RequestID, permAnswer{
				ok: in.Response.Subtype == "success", response: in.Response.Response, err: in.Response.Error,
			})
		}
	}
	// Other types are ignored, as the CLI does.
}

// contentText reads user content: a string or text blocks.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// record appends the user line to $FAKECLAUDE_RECORD, so tests can check
// that each message reached exactly one process exactly once.
func (f *fake) record(m userMsg) {
	path := os.Getenv("FAKECLAUDE_RECORD")
	if path == "" {
		return
	}
	b, _ := json.Marshal(map[string]any{
		"pid": os.Getpid(), "session_id": f.sessionID, "uuid": m.uuid, "text": m.text,
	})
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeclaude: recording:", err)
		return
	}
	defer fh.Close()
	fh.Write(append(b, '\n')) // one write per line: O_APPEND keeps lines whole
}

// resolveCwd is the real path of the working directory, as the CLI uses it.
func resolveCwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		return real
	}
	return wd
}
