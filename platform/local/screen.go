package local

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/platform"
)

// What the terminal shows while a turn runs, beyond the replies: a status
// line under the output (how long Claude has worked and what it does now),
// redrawn in place every second; the reply printed as it is written, a
// whole line at a time; and how each turn ended, for the exit code of a
// piped run. The engine drives it through the platform's contracts: a
// turn starts and ends with reactions on its message (the "eyes", then a
// check mark or a cross), the status comes through ShowStatus, the reply
// through EditReply. Piped output gets no status line and no stream: each
// reply is printed once, whole, as plain lines.

var (
	_ platform.Reactor     = (*Adapter)(nil)
	_ platform.StatusLiner = (*Adapter)(nil)
	_ platform.ReplyEditor = (*Adapter)(nil)
)

// Reaction names the engine uses for a turn (platform.Reactor).
const (
	reactWorking = "eyes"
	reactDone    = "white_check_mark"
	reactFailed  = "x"
)

// screen is the terminal's state; guarded by Adapter.outMu.
type screen struct {
	shown bool // the status line is drawn on the last line of Out

	// The running turn, from its "eyes" to their removal.
	working  bool
	started  time.Time
	doing    string // the status the engine gave last, as plain text
	stopping bool   // a Ctrl-C asked the turn to stop

	// The reply being streamed: its message id, the text (Markdown)
	// printed of it so far, whole lines only, and the renderer's state.
	replyID string
	printed string
	partial string // of the line being written, what is printed
	md      mdLines

	// How the turns ended (the reactions they got).
	done, failed int
}

// spinner turns once a second, so that a frozen terminal shows.
var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// statusLine is the status line's text, unstyled, within width columns
// (one line of the terminal, so that it can be redrawn in place).
func (s *screen) statusLine(now time.Time, width int) string {
	el := now.Sub(s.started).Truncate(time.Second)
	doing := s.doing
	if doing == "" {
		doing = "Claude is working"
	}
	hint := " · Ctrl-C stops it"
	if s.stopping {
		doing, hint = "Stopping the turn (Ctrl-C again exits at once)", ""
	}
	line := fmt.Sprintf("%s %s · %s%s", spinner[int(el/time.Second)%len(spinner)], el, doing, hint)
	if utf8.RuneCountInString(line) >= width {
		line = fmt.Sprintf("%s %s · %s", spinner[int(el/time.Second)%len(spinner)], el, doing)
	}
	if r := []rune(line); len(r) >= width {
		line = string(r[:width-2]) + "…"
	}
	return line
}

// width is the terminal's width in columns.
func (a *Adapter) width() int {
	if a.cfg.Width != nil {
		if w := a.cfg.Width(); w >= 20 {
			return w
		}
	}
	return 80
}

// write runs print with the status line taken off the screen and draws it
// again after, so that what is printed never mixes with it. Only a
// terminal has a status line.
func (a *Adapter) write(print func()) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	a.clearStatusLocked()
	a.endPartialLocked()
	print()
	a.drawStatusLocked()
}

// update changes the screen's state and redraws the status line, unless
// a line of a reply is being written under the cursor.
func (a *Adapter) update(change func()) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	change()
	if a.scr.partial == "" {
		a.clearStatusLocked()
		a.drawStatusLocked()
	}
}

func (a *Adapter) clearStatusLocked() {
	if a.scr.shown {
		_, _ = io.WriteString(a.cfg.Out, "\r\x1b[K")
		a.scr.shown = false
	}
}

func (a *Adapter) drawStatusLocked() {
	if !a.cfg.Terminal || !a.scr.working {
		return
	}
	_, _ = io.WriteString(a.cfg.Out, "\r\x1b[K"+styleDim+a.scr.statusLine(a.cfg.Now(), a.width())+styleOff)
	a.scr.shown = true
}

// tick redraws the status line every second while a turn runs, until ctx
// ends; Run owns it.
func (a *Adapter) tick(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.write(func() {}) // leaves the line clean
			return
		case <-t.C:
			a.outMu.Lock()
			if a.scr.working && a.scr.partial == "" {
				a.drawStatusLocked()
			}
			a.outMu.Unlock()
		}
	}
}

// React notes the start of a turn (the "eyes" on its message) and how it
// ended (a check mark or a cross).
func (a *Adapter) React(_ context.Context, _ platform.Target, name string) error {
	a.update(func() {
		switch name {
		case reactWorking:
			a.scr.working, a.scr.stopping, a.scr.doing = true, false, ""
			a.scr.started = a.cfg.Now()
		case reactDone:
			a.scr.done++
		case reactFailed:
			a.scr.failed++
		}
	})
	return nil
}

// Unreact notes the end of a turn: its "eyes" are taken off. On a
// terminal the line under the cursor is cleared even when no status line
// shows (the reply's printing may have cleared it already), so that the
// end of a turn always leaves the same mark: what a person, or a test
// reading the screen, can tell the turn's end by.
func (a *Adapter) Unreact(_ context.Context, _ platform.Target, name string) error {
	if name == reactWorking {
		a.update(func() {
			a.scr.working, a.scr.stopping = false, false
			a.scr.shown = a.scr.shown || a.cfg.Terminal
		})
	}
	return nil
}

// ShowStatus shows what the running turn does now on the status line
// (a terminal only); "" shows that Claude is working.
func (a *Adapter) ShowStatus(_ context.Context, _ platform.Target, text string) error {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	a.update(func() { a.scr.doing = inline(first, false) })
	return nil
}

// Outcomes reports how many turns ended well and how many failed, from
// the reactions the engine put on their messages.
func (a *Adapter) Outcomes() (done, failed int) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	return a.scr.done, a.scr.failed
}

// Interrupted is what a Ctrl-C did (Interrupt).
type Interrupted int

const (
	// NotWorking: no turn runs; the caller ends the program.
	NotWorking Interrupted = iota
	// StoppingTurn: the running turn is being stopped; the program goes on.
	StoppingTurn
	// StopAgain: the turn was being stopped already; the caller exits at
	// once.
	StopAgain
)

// Interrupt is a Ctrl-C: while a turn runs, the first one stops it (the
// Config.Stop message goes to the engine as if typed), the next one asks
// the caller to exit at once. It may be called from any goroutine.
func (a *Adapter) Interrupt() Interrupted {
	a.outMu.Lock()
	if !a.scr.working || a.cfg.Stop == "" {
		a.outMu.Unlock()
		return NotWorking
	}
	if a.scr.stopping {
		a.outMu.Unlock()
		return StopAgain
	}
	a.scr.stopping = true
	a.outMu.Unlock()
	select {
	case a.interrupts <- struct{}{}:
	default: // one is on its way already
	}
	a.update(func() {})
	return StoppingTurn
}

// EditReply shows a reply as it is written: a terminal cannot take back
// what it printed, so each call prints only what is new since the last:
// the lines that were completed, and of the line being written its words
// so far (outside code blocks, and never inside a span of bold or code
// whose end is not written yet). While the reply is written its text ends
// in the engine's mark that more is coming, after a code block closed for
// the moment: neither is printed. The final text (no mark) prints what is
// left. A final text that does not go on from what was printed (Claude's
// text was changed at the end) prints its lines from the first that
// differs.
func (a *Adapter) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	if err := ctx.Err(); err != nil {
		return msgs, err
	}
	a.outMu.Lock()
	defer a.outMu.Unlock()
	sc := &a.scr
	if len(msgs) == 0 || msgs[0].MessageID != sc.replyID {
		a.endPartialLocked()
		sc.replyID = fmt.Sprintf("%s-out-%d", a.runID, a.outSeq.Add(1))
		sc.printed, sc.partial = "", ""
		sc.md = mdLines{styled: a.cfg.Terminal}
	}
	posted := to
	posted.Platform = a.cfg.Name
	posted.MessageID = sc.replyID
	body, streaming := strings.CutSuffix(text, "\n"+moreMark)
	rest := ""
	if streaming {
		body, rest = streamedLines(body)
	} else {
		body = strings.TrimRight(body, "\n") + "\n"
	}
	if !strings.HasPrefix(body, sc.printed) {
		// Start again from the first line that differs, on a line of its
		// own.
		a.endPartialLocked()
		sc.printed = body[:commonLines(sc.printed, body)]
	}
	var out strings.Builder
	if fresh := body[len(sc.printed):]; fresh != "" {
		lines := strings.Split(strings.TrimSuffix(fresh, "\n"), "\n")
		if sc.partial != "" {
			// The line in progress is done: the rest of it.
			if tail, ok := strings.CutPrefix(lines[0], sc.partial); ok {
				out.WriteString(inline(tail, a.cfg.Terminal) + "\n")
				lines = lines[1:]
			} else {
				out.WriteString("\n")
			}
			sc.partial = ""
		}
		for _, l := range lines {
			if r, ok := sc.md.line(l); ok {
				out.WriteString(r + "\n")
			}
		}
		sc.printed = body
	}
	if streaming && a.cfg.Terminal {
		if words := wholeWords(rest, sc.md.fence != ""); len(words) > len(sc.partial) && strings.HasPrefix(words, sc.partial) {
			out.WriteString(inline(words[len(sc.partial):], true))
			sc.partial = words
		}
	}
	if !streaming {
		out.WriteString("\n") // a reply is followed by a blank line
	}
	if out.Len() == 0 {
		return []platform.Target{posted}, nil
	}
	a.clearStatusLocked()
	_, err := io.WriteString(a.cfg.Out, out.String())
	if sc.partial == "" {
		a.drawStatusLocked() // not under a line being written: it would erase it
	}
	if err != nil {
		return nil, fmt.Errorf("writing a reply to the terminal: %w", err)
	}
	if !streaming {
		a.notePrinted(platform.Target{Platform: a.cfg.Name, Channel: to.Channel, MessageID: sc.replyID}, text)
	}
	return []platform.Target{posted}, nil
}

// endPartialLocked ends a line of a reply that was being written, so that
// what is printed next starts on a line of its own.
func (a *Adapter) endPartialLocked() {
	if a.scr.partial != "" {
		_, _ = io.WriteString(a.cfg.Out, "\n")
		a.scr.partial = ""
	}
}

// wholeWords is the part of a line being written that can be printed now:
// up to its last space, cut before a span of bold or code that is not
// closed yet; "" inside a code block and for a line whose kind its start
// decides (a heading, a quote, a fence, the context line).
func wholeWords(line string, inCode bool) string {
	if inCode || strings.HasPrefix(strings.TrimSpace(line), "#") || strings.HasPrefix(line, ">") ||
		reFenceLine.MatchString(line) || strings.HasPrefix(line, "[") {
		return ""
	}
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return ""
	}
	w := line[:i+1]
	for _, mark := range []string{"**", "`", "__"} {
		if strings.Count(w, mark)%2 == 1 {
			w = w[:strings.LastIndex(w, mark)]
		}
	}
	if j := strings.LastIndexByte(w, ' '); j >= 0 {
		return w[:j+1]
	}
	return ""
}

// moreMark is the last line of a reply that is still being written (the
// engine's render.Streaming).
const moreMark = "…"

// streamedLines splits a reply being written into its whole lines, which
// can be printed for good, and the line still being written; the fence
// that closes, for the moment, a code block still being written is in
// neither.
func streamedLines(body string) (whole, rest string) {
	i := strings.LastIndexByte(body, '\n')
	if i < 0 {
		return "", body
	}
	last, whole := body[i+1:], body[:i+1]
	if reFenceLine.MatchString(last) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(last), "`~")) == "" {
		// The last line is a fence: it closes a block only for the
		// moment when the block was open before it.
		var m mdLines
		m.text(strings.TrimSuffix(whole, "\n"))
		if m.fence != "" {
			j := strings.LastIndexByte(strings.TrimSuffix(whole, "\n"), '\n')
			return whole[:j+1], whole[j+1 : len(whole)-1]
		}
	}
	return whole, last
}

// commonLines is the length of the whole lines a and b begin with alike.
func commonLines(a, b string) int {
	n := 0
	for {
		i := strings.IndexByte(a[n:], '\n')
		if i < 0 || !strings.HasPrefix(b[n:], a[n:n+i+1]) {
			return n
		}
		n += i + 1
	}
}
