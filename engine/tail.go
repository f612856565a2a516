package engine

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
// What recovery relies on is written before the tail starts: the ack
// record (settle), so that a kill after the next turn's start finds this
// message done, and the charge in the ledger's memory, which the next
// turn's caps count. The order between tails holds: a session runs one at
// a time, and the session goroutine waits for the last one (tail.wait)
// before anything that must come after it: the next tail, a settle that
// saves on its own, closing the journal. What the next turn writes
// meanwhile needs no wait: the record's saves are ordered by its saveMu
// and always write the newest record, and the journal and the ledger take
// concurrent writers.
type tail struct {
	e    *Engine
	done chan struct{} // closed when the last tail ended; nil before the first
}

// run waits for the previous tail, then runs f as the next one. Only the
// session goroutine calls it. The tail counts as the engine's work
// (WaitIdle waits for it).
func (t *tail) run(f func()) {
	t.wait()
	done := make(chan struct{})
	t.done = done
	t.e.busy.add(1)
	go func() {
		defer t.e.busy.add(-1)
		defer close(done)
		if h := t.e.beforeTail; h != nil {
			h()
		}
		f()
	}()
}

// wait blocks until the last tail ended.
func (t *tail) wait() {
	if t.done != nil {
		<-t.done
	}
}
