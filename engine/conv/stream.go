package conv

import (
	"sync"

	"github.com/cc-connect/cc-connect/platform"
)

// stream is a turn's reply streamed into the thread, off the session
// goroutine: the live view hands it the text so far and never waits, and
// the stream's own goroutine makes the edits, each with the newest text
// asked for, at the platform's pace (the adapter's EditReply waits for
// it). So an edit waiting for the platform never holds up !stop, a
// permission answer or the turn's next event: the view keeps only the
// latest text, and edits that came too fast for the platform are skipped,
// not queued.
type stream struct {
	chat *relay
	// posted is told the streamed messages each time one is added, and
	// nil once they are deleted (the journal records them for recovery);
	// on the stream's goroutine.
	posted  func([]platform.Target)
	deletes bool // the platform deletes messages (moving the stream below a prompt)

	mu      sync.Mutex // guards the fields below
	want    string     // the newest text asked for; "" when none waits
	restart bool       // delete what shows and start again below (a prompt was posted)
	msgs    []platform.Target
	broken  bool // an edit failed: nothing more is edited
	closed  bool
	running bool
	wake    chan struct{} // capacity 1
	done    chan struct{} // closed when the goroutine ended
}

func newStream(chat *relay, deletes bool, posted func([]platform.Target)) *stream {
	return &stream{chat: chat, deletes: deletes, posted: posted, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// show asks for text to be shown; it returns at once.
func (s *stream) show(text string) {
	s.mu.Lock()
	s.want = text
	s.startLocked()
	s.mu.Unlock()
	poke(s.wake)
}

// moveBelow deletes what the stream shows (where the platform deletes),
// so that what is shown next starts below a prompt just posted; it
// returns at once.
func (s *stream) moveBelow() {
	s.mu.Lock()
	s.restart, s.want = true, ""
	s.startLocked()
	s.mu.Unlock()
	poke(s.wake)
}

// settle ends the stream: an edit in flight and a move below a prompt
// finish, the text waiting is dropped (the turn's final text, or its
// failure, replaces it), and it returns what the stream left: the messages
// that hold a part, and whether an edit failed.
func (s *stream) settle() (msgs []platform.Target, broken bool) {
	s.mu.Lock()
	s.closed, s.want = true, ""
	running := s.running
	s.mu.Unlock()
	if running {
		poke(s.wake)
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.msgs, s.broken
}

func (s *stream) startLocked() {
	if !s.running && !s.closed {
		s.running = true
		go s.run()
	}
}

// run makes the edits asked for, one at a time, each with the newest text.
func (s *stream) run() {
	defer close(s.done)
	for {
		s.mu.Lock()
		restart, want, msgs, broken, closed := s.restart, s.want, s.msgs, s.broken, s.closed
		s.restart, s.want = false, ""
		if restart {
			s.msgs = nil
		}
		s.mu.Unlock()
		switch {
		case restart:
			if s.deletes && len(msgs) > 0 {
				for _, m := range msgs {
					s.chat.deleteMsg(m)
				}
				// The journal names them no longer: a restart would
				// otherwise try to mark deleted messages cut off. Deleted
				// first: a kill in between leaves a failed edit, not a
				// partial reply left unmarked.
				if s.posted != nil {
					s.posted(nil)
				}
			}
			continue
		case want != "" && !broken:
			out, ok := s.chat.editReply(msgs, want)
			s.mu.Lock()
			grew := len(out) > len(s.msgs)
			s.msgs = out
			s.broken = s.broken || !ok
			s.mu.Unlock()
			if grew && s.posted != nil {
				s.posted(out) // a new message holds part of the reply: the journal names it
			}
			continue
		case closed:
			return
		}
		<-s.wake
	}
}
