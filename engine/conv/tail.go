package conv

import (
	"sync"
	"time"
)

// A turn's tail: what makes a settled turn durable once its reply is
// posted and its ack written: the record with the turn's figures, the
// spending ledger and the journal's fsync (with the stream's ack in a
// cluster), three files and four or five fsyncs, about a millisecond on a
// fast disk and far more on a slow one. It runs on a goroutine of its own,
// so that a message that arrived meanwhile starts its turn at once instead
// of waiting on the disk. The turn's wrap-up follows on the same goroutine
// (turnRunner.run): the reaction's swap and a spare's start, which went
// after the fsyncs when they ran on the session goroutine, and stay there
// so that a message sent right after the reply is accepted before them.
//
// The tail waits until the conversation has been quiet for tailQuiet
// (each new tail starts the wait again, up to tailMaxWait after the
// first): a message sent at the reply (a script, a queued message, a
// quick hand) is accepted with its fsync alone on the disk instead of
// beside the tail's, and the tails of turns that follow each other close
// run as one batch, one save of each file, since the record and the
// ledger write only what changed and the journal's fsync covers every ack
// written before it. A shutdown, a reload and a save on the session
// goroutine (wait) run the batch at once.
//
// What recovery relies on is written before the tail starts: the ack
// record (settle), so that a kill after the next turn's start finds this
// message done, and the charge in the ledger's memory, which the next
// turn's caps count. A kill before the tail ran costs the record the
// figures of the turns since the last batch (until the next result) and
// never a message; a power cut may run those turns' messages again. The
// order between batches holds: a session runs one at a time, in order,
// and the session goroutine waits for them (wait) before anything that
// must come after: a settle that saves on its own, closing the journal.
// What the next turn writes meanwhile needs no wait: the record's saves
// are ordered by its saveMu and always write the newest record, and the
// journal and the ledger take concurrent writers.
type tail struct {
	e  *Set
	mu sync.Mutex
	// steps is the batch that has not started, in the order of its turns.
	steps []func()
	// kick is closed to run the waiting batch at once, and changed is
	// signalled when a step joins it; both nil when no batch waits.
	kick    chan struct{}
	changed chan struct{}
	done    chan struct{} // closed when the last batch ended; nil before the first
}

const (
	// tailQuiet is how long a tail waits for the conversation to be quiet:
	// longer than a reply takes to reach a client that answers it at once
	// and send its next message, short beside a person's.
	tailQuiet = 10 * time.Millisecond
	// tailMaxWait bounds the wait under turns that follow each other
	// without a pause: the oldest ack waits no longer for its fsync.
	tailMaxWait = 100 * time.Millisecond
)

// run adds f to the waiting batch, or starts one after the last. Only the
// session goroutine calls it. A batch counts as the engine's work
// (WaitIdle waits for it).
func (t *tail) run(f func()) {
	if h := t.e.tailAdded; h != nil {
		defer h()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.steps = append(t.steps, f)
	if t.kick != nil {
		select {
		case t.changed <- struct{}{}:
		default: // one signal waiting is as good as two
		}
		return
	}
	prev, done := t.done, make(chan struct{})
	t.kick, t.changed, t.done = make(chan struct{}), make(chan struct{}, 1), done
	t.e.busy.add(1)
	go t.batch(prev, done, t.kick, t.changed)
}

// batch waits for the previous batch and for quiet, then runs its steps.
func (t *tail) batch(prev, done, kick, changed chan struct{}) {
	defer t.e.busy.add(-1)
	defer close(done)
	began := time.Now()
	if prev != nil {
		<-prev
	}
	quietFor, maxWait := t.e.tailQuiet, t.e.tailMaxWait
	quiet := time.NewTimer(min(quietFor, maxWait))
	defer quiet.Stop()
	for waiting := true; waiting; {
		select {
		case <-kick:
			waiting = false
		case <-quiet.C:
			waiting = false
		case <-changed:
			left := maxWait - time.Since(began)
			if left <= 0 {
				waiting = false
				break
			}
			quiet.Stop()
			quiet.Reset(min(quietFor, left))
		}
	}
	t.mu.Lock()
	steps := t.steps
	t.steps, t.kick, t.changed = nil, nil, nil
	t.mu.Unlock()
	if h := t.e.beforeTail; h != nil {
		h()
	}
	for _, f := range steps {
		f()
	}
}

// wait runs the waiting batch at once and blocks until the last batch
// ended.
func (t *tail) wait() {
	t.mu.Lock()
	if t.kick != nil {
		close(t.kick)
		t.kick = nil
	}
	done := t.done
	t.mu.Unlock()
	if done != nil {
		<-done
	}
}
