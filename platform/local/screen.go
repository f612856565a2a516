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
	md      mdLines

	// How the turns ended (the reactions they got).
	done, failed int
}

// spinner turns once a second, so that a frozen terminal shows.
var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// maxDoing bounds the status's text on the status line, which must stay on
// one line of the terminal to be redrawn in place.
const maxDoing = 56

// statusLine is the status line's text, unstyled.
func (s *screen) statusLine(now time.Time) string {
	el := now.Sub(s.started).Truncate(time.Second)
	doing := s.doing
	if doing == "" {
		doing = "Claude is working"
	}
	if s.stopping {
		doing = "Stopping the turn (Ctrl-C again exits at once)"
	} else if utf8.RuneCountInString(doing) > maxDoing {
		doing = string([]rune(doing)[:maxDoing-1]) + "…"
	}
	hint := " · Ctrl-C stops it"
	if s.stopping {
		hint = ""
	}
	return fmt.Sprintf("%s %s · %s%s", spinner[int(el/time.Second)%len(spinner)], el, doing, hint)
}

// write runs print with the status line taken off the screen and draws it
// again after, so that what is printed never mixes with it. Only a
// terminal has a status line.
func (a *Adapter) write(print func()) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	a.clearStatusLocked()
	print()
	a.drawStatusLocked()
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
	_, _ = io.WriteString(a.cfg.Out, "\r\x1b[K"+styleDim+a.scr.statusLine(a.cfg.Now())+styleOff)
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
			if a.scr.working {
				a.drawStatusLocked()
			}
			a.outMu.Unlock()
		}
	}
}

// React notes the start of a turn (the "eyes" on its message) and how it
// ended (a check mark or a cross).
func (a *Adapter) React(_ context.Context, _ platform.Target, name string) error {
	a.write(func() {
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

// Unreact notes the end of a turn: its "eyes" are taken off.
func (a *Adapter) Unreact(_ context.Context, _ platform.Target, name string) error {
	if name == reactWorking {
		a.write(func() { a.scr.working, a.scr.stopping = false, false })
	}
	return nil
}

// ShowStatus shows what the running turn does now on the status line
// (a terminal only); "" shows that Claude is working.
func (a *Adapter) ShowStatus(_ context.Context, _ platform.Target, text string) error {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	a.write(func() { a.scr.doing = inline(first, false) })
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
	a.write(func() {})
	return StoppingTurn
}

// EditReply shows a reply as it is written: a terminal cannot take back
// what it printed, so each call prints the whole lines that are new since
// the last. While the reply is still written the text ends in the
// engine's mark that more is coming, after a code block it closed for the
// moment: neither is printed, nor the last line, which may not be whole
// yet. The final text (no mark) prints what is left. A final text that
// does not go on from what was printed (Claude's text was changed at the
// end) prints its lines from the first that differs.
func (a *Adapter) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	if err := ctx.Err(); err != nil {
		return msgs, err
	}
	var werr error
	a.write(func() {
		if len(msgs) == 0 || msgs[0].MessageID != a.scr.replyID {
			a.scr.replyID = fmt.Sprintf("%s-out-%d", a.runID, a.outSeq.Add(1))
			a.scr.printed = ""
			a.scr.md = mdLines{styled: a.cfg.Terminal}
		}
		body, streaming := strings.CutSuffix(text, "\n"+moreMark)
		if streaming {
			body = streamedLines(body)
		} else {
			body = strings.TrimRight(body, "\n") + "\n"
		}
		if !strings.HasPrefix(body, a.scr.printed) {
			// Start again from the first line that differs.
			keep := commonLines(a.scr.printed, body)
			a.scr.printed = body[:keep]
		}
		fresh := body[len(a.scr.printed):]
		if fresh == "" {
			return
		}
		lines := strings.Split(strings.TrimSuffix(fresh, "\n"), "\n")
		var out strings.Builder
		for _, l := range lines {
			if r, ok := a.scr.md.line(l); ok {
				out.WriteString(r + "\n")
			}
		}
		if !streaming {
			out.WriteString("\n") // a reply is followed by a blank line
		}
		_, werr = io.WriteString(a.cfg.Out, out.String())
		a.scr.printed = body
		if !streaming {
			a.notePrinted(platform.Target{Platform: a.cfg.Name, Channel: to.Channel, MessageID: a.scr.replyID}, text)
		}
	})
	posted := to
	posted.Platform = a.cfg.Name
	posted.MessageID = a.scr.replyID
	if werr != nil {
		return nil, fmt.Errorf("writing a reply to the terminal: %w", werr)
	}
	return []platform.Target{posted}, nil
}

// moreMark is the last line of a reply that is still being written (the
// engine's render.Streaming).
const moreMark = "…"

// streamedLines is the part of a reply being written that can be printed
// for good: its whole lines, without the fence that closes, for the
// moment, a code block still being written.
func streamedLines(body string) string {
	i := strings.LastIndexByte(body, '\n')
	if i < 0 {
		return ""
	}
	last, rest := body[i+1:], body[:i+1]
	if reFenceLine.MatchString(last) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(last), "`~")) == "" {
		// The last line is a fence: it closes a block only for the
		// moment when the block was open before it.
		var m mdLines
		m.text(strings.TrimSuffix(rest, "\n"))
		if m.fence != "" {
			j := strings.LastIndexByte(strings.TrimSuffix(rest, "\n"), '\n')
			return rest[:j+1]
		}
	}
	return rest
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
