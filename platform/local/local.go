// Package local is the terminal chat: each line typed on stdin is a message,
// replies are printed on stdout, and status goes to stderr. It lets a user
// try cc-connect without any chat platform, and lets scripts pipe a prompt
// through the whole engine (`echo "explain main.go" | cc-connect run`). It
// has no buttons, so the engine posts permission requests as text with
// the !allow / !deny hint; its Markdown is turned into terminal text in one
// place (markdown.go). On a terminal a reply streams as it is written and
// a status line shows the running turn (screen.go); piped, it prints plain
// lines. It knows nothing about Claude Code.
package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
	"github.com/cc-connect/cc-connect/platform/internal/seenlog"
)

// Type is the platform type of every message this adapter produces.
const Type = "local"

// Channel is the channel id of the terminal; bindings name it (or "*").
const Channel = "local"

// Config configures the terminal chat.
type Config struct {
	// Name is the instance name from the config (`[[platforms]] name`).
	Name string
	// In is read line by line; the binary passes os.Stdin.
	In io.Reader
	// Out receives replies, each followed by a blank line; os.Stdout.
	Out io.Writer
	// Status receives status lines (start hint, refused input, end of
	// input); os.Stderr. Nil discards them.
	Status io.Writer
	// User is the user id and name on every message; the binary passes
	// $USER. Empty means "local".
	User string
	// OnEOF is called once when In ends, on Run's goroutine and with Run's
	// context. The binary waits there for the engine to finish the work it
	// accepted and then cancels the root context. Nil: Run just waits for
	// its context to end.
	OnEOF func(ctx context.Context)
	// Interactive says In is a terminal a person types at: Run then prints
	// a short usage hint on Status.
	Interactive bool
	// Terminal says Out is a terminal a person reads: replies then stream
	// as they are written, a status line shows the running turn, and text
	// is styled. Otherwise every line is plain, with no escape code.
	Terminal bool
	// Stop is the message a Ctrl-C during a turn sends, as if typed (the
	// binary passes the engine's stop command); "" leaves Ctrl-C alone.
	Stop string
	// Width is the terminal's width in columns now, which the status line
	// must not pass (a wrapped line cannot be redrawn in place); nil, or
	// a result under 20, means 80.
	Width func() int
	// Now is the clock for Message.Received, message ids and the status
	// line; nil is time.Now.
	Now func() time.Time
}

// Adapter is the terminal chat.
type Adapter struct {
	cfg Config
	log *slog.Logger

	running atomic.Bool
	state   *connstate.State // for !status
	seq     atomic.Int64     // inbound message counter
	outSeq  atomic.Int64     // outbound message counter
	runID   string           // "local-<unix nanos>", unique per process run

	readDone chan struct{} // closed when the reader goroutine has ended

	// outMu serializes writes to Out and Status (one terminal) so that
	// replies, status and the status line never interleave; it guards scr.
	outMu sync.Mutex
	scr   screen

	interrupts chan struct{} // a Ctrl-C asks Run to send Config.Stop

	// history is what was typed and printed, for History (files.go).
	history *seenlog.Log
}

var (
	_ platform.Adapter       = (*Adapter)(nil)
	_ platform.Statuser      = (*Adapter)(nil)
	_ platform.HistoryReader = (*Adapter)(nil)
	_ platform.FileSender    = (*Adapter)(nil)
	_ platform.Capable       = (*Adapter)(nil)
)

// New checks cfg and returns an Adapter; nothing is read or written before
// Run.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if cfg.Name == "" {
		return nil, errors.New("local: name is required")
	}
	if cfg.In == nil || cfg.Out == nil {
		return nil, fmt.Errorf("local %s: input and output are required", cfg.Name)
	}
	if cfg.Status == nil {
		cfg.Status = io.Discard
	}
	if cfg.User == "" {
		cfg.User = "local"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Adapter{
		cfg:      cfg,
		log:      log.With("platform", cfg.Name),
		runID:    fmt.Sprintf("local-%d", cfg.Now().UnixNano()),
		readDone: make(chan struct{}),
		history:  seenlog.New(1, historyLines),
		state:    connstate.New(cfg.Name),
		scr:      screen{md: mdLines{styled: cfg.Terminal}},

		interrupts: make(chan struct{}, 1),
	}
	return a, nil
}

// Name returns the instance name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Status reports whether input is still being read: connected while it
// is, stopped ("input closed") once it ended.
func (a *Adapter) Status() platform.ConnStatus { return a.state.Get() }

// Run reads messages from In and hands them to h until ctx ends. At the end
// of input it calls OnEOF, then waits for ctx. It returns nil when ctx ends.
//
// A read from a terminal cannot be interrupted, so on cancellation Run
// returns without waiting for the reader goroutine: that goroutine ends at
// the next line or end of input and never delivers a message after Run has
// returned.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error {
	if !a.running.CompareAndSwap(false, true) {
		return fmt.Errorf("local %s: Run called twice", a.cfg.Name)
	}
	lines := make(chan string)
	readErr := make(chan error, 1)
	go a.read(ctx, lines, readErr)

	a.state.Set(platform.Connected, "")
	if a.cfg.Terminal {
		tickCtx, stopTick := context.WithCancel(ctx)
		ticked := make(chan struct{})
		go func() {
			defer close(ticked)
			a.tick(tickCtx)
		}()
		defer func() { stopTick(); <-ticked }()
	}
	if a.cfg.Interactive {
		hint := "Ctrl-D to finish"
		if a.cfg.Terminal && a.cfg.Stop != "" {
			hint = "Ctrl-C stops a running turn, Ctrl-D finishes"
		}
		a.statusf("cc-connect: type a message and press Enter (end a line with \\ to continue it); %s", hint)
	}
	for {
		select {
		case <-ctx.Done():
			a.state.Set(platform.Stopped, "")
			return nil
		case <-a.interrupts:
			a.handle(ctx, h, a.cfg.Stop)
		case line, ok := <-lines:
			if ok {
				a.handle(ctx, h, line)
				continue
			}
			if err := <-readErr; err != nil {
				a.log.Error("Reading the terminal failed", "error", err)
				a.statusf("cc-connect: reading input failed: %v", err)
			}
			a.state.Set(platform.Stopped, "input closed")
			if a.cfg.OnEOF != nil {
				a.statusf("cc-connect: end of input")
				a.cfg.OnEOF(ctx)
			}
			<-ctx.Done()
			a.state.Set(platform.Stopped, "")
			return nil
		}
	}
}

// read sends each message (one line, or several joined by a trailing
// backslash) on lines, skipping blank ones, and closes lines at the end of
// input.
func (a *Adapter) read(ctx context.Context, lines chan<- string, readErr chan<- error) {
	defer close(a.readDone)
	defer close(lines)
	r := bufio.NewReader(a.cfg.In)
	var pending []string
	send := func(text string) bool {
		if strings.TrimSpace(text) == "" {
			return true
		}
		select {
		case lines <- text:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		line, err := r.ReadString('\n')
		atEOF := err != nil
		line = strings.TrimRight(line, "\r\n")
		if cont, ok := strings.CutSuffix(line, `\`); ok && !atEOF {
			pending = append(pending, cont)
			continue
		}
		if line != "" || len(pending) > 0 {
			text := strings.Join(append(pending, line), "\n")
			pending = pending[:0]
			if !send(text) {
				readErr <- nil
				return
			}
		}
		if atEOF {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			readErr <- err
			return
		}
	}
}

func (a *Adapter) handle(ctx context.Context, h platform.Handler, text string) {
	n := a.seq.Add(1)
	msg := platform.Message{
		ID:        fmt.Sprintf("%s-%d", a.runID, n),
		Target:    platform.Target{Platform: a.cfg.Name, Channel: Channel, MessageID: fmt.Sprintf("%s-%d", a.runID, n)},
		UserID:    a.cfg.User,
		UserName:  a.cfg.User,
		Text:      strings.TrimSpace(text),
		IsDM:      true, // a terminal is a private conversation with the bot
		Mentioned: true,
		Received:  a.cfg.Now(),
	}
	a.noteTyped(msg)
	if _, err := h.HandleMessage(ctx, msg); err != nil {
		if ctx.Err() != nil {
			return
		}
		a.log.Warn("Message not accepted", "channel", Channel, "error", err)
		a.statusf("cc-connect: message not accepted: %v", err)
	}
}

// Send prints text, as a terminal shows Markdown, followed by a blank
// line. It is printed whole: a terminal has no size limit to split at.
func (a *Adapter) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	if err := ctx.Err(); err != nil {
		return platform.Target{}, err
	}
	text = strings.TrimRight(text, "\n")
	var err error
	a.write(func() { _, err = io.WriteString(a.cfg.Out, terminalText(text, a.cfg.Terminal)+"\n\n") })
	if err != nil {
		return platform.Target{}, fmt.Errorf("writing a reply to the terminal: %w", err)
	}
	posted := to
	posted.Platform = a.cfg.Name
	posted.MessageID = fmt.Sprintf("%s-out-%d", a.runID, a.outSeq.Add(1))
	a.notePrinted(posted, text)
	return posted, nil
}

func (a *Adapter) statusf(format string, args ...any) {
	a.write(func() { fmt.Fprintf(a.cfg.Status, format+"\n", args...) })
}

// Capabilities: a terminal can add to a reply as it is written (EditReply)
// but neither changes nor deletes what it printed, and has no buttons:
// questions come as a numbered list answered by a line, and permission
// requests with the !allow / !deny hint. Piped output is not streamed: a
// reply is printed once, whole, when it is done. A terminal has no size
// limit: MessageLimit only bounds what the engine renders into one
// message.
func (a *Adapter) Capabilities() platform.Capabilities {
	c := platform.Abilities(a)
	c.Edits = a.cfg.Terminal
	c.EditInterval = 100 * time.Millisecond // printing costs nothing
	c.MessageLimit = 16000
	return c
}
