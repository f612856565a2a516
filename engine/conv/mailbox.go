package conv

import (
	"slices"
	"sync"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/platform"
)

// state is where a session is in its turn cycle.
type state string

const (
	stateIdle           state = "idle"
	stateRunning        state = "running"
	stateRequiresAction state = "requires_action"
)

type itemKind int

const (
	itemTurn    itemKind = iota // a user message for the agent
	itemNew                     // !new: ordered after the turns before it
	itemResume                  // !resume: ordered after the turns before it
	itemRun                     // a run waiting for its header and thread (trigger.go)
	itemOwn                     // the journaled reply of a turn the CLI ran by itself, to post (own.go)
	itemPending                 // a reply another host settled, to post (pendingreply.go)
)

// workItem is one entry of a session's FIFO: accepted work, journaled
// before it was queued.
type workItem struct {
	kind itemKind
	msg  platform.Message
	// resumeID is the session a !resume switches to; resumeArg, when set
	// instead, what the user typed (a number from !sessions or an id),
	// resolved when the item runs.
	resumeID, resumeArg string
	// Durability (journal.go, recovery.go): the message's journal entry,
	// the uuid it was accepted with (and is sent with), whether it was
	// sent before a restart, whether it is the first item of a session
	// reopened by recovery, whether it resumes a cut turn (so it is not
	// marked started again), and whether it was recovered once already
	// after its agent died mid-turn.
	inboxID  string
	uuid     string
	started  bool
	replying bool // its reply was being posted when cc-connect stopped
	// streamed are the messages its reply was streamed into, and parts
	// the parts of its reply known posted, as the journal had them when
	// cc-connect stopped (recovery.go).
	streamed     []platform.Target
	parts        []int
	replyTail    string // what the reply being posted carried after the agent's text
	recovered    bool
	continuation bool
	afterCrash   bool
	// refused: Claude refused it for a usage limit and its session holds
	// it under its uuid, so it is sent again under a fresh one (the CLI
	// skips a uuid it already has); parkedAs is that first uuid once run
	// chose the fresh one, forgotten by the usage windows once the
	// journal carries the fresh one (send).
	refused  bool
	parkedAs string
	// fence is the cluster lease token it was journaled under (0: not from
	// a cluster's stream); dlv, on the accept path only, the delivery the
	// journal's cluster ledger keeps for it (cluster.go).
	fence     uint64
	streamSeq uint64 // its sequence in the ingress stream
	// settled: this host settled its event in the stream before it
	// stopped (inbox.Entry.Settled), so this host alone posts its reply.
	settled bool
	// replicated: its reply was stored in the cluster before that
	// settlement (inbox.Entry.Replicated, pendingreply.go).
	replicated bool
	dlv        Delivery
	// files are the attachments the journal names for a replayed message
	// (msg.Attachments, with their Open, for one accepted in this run), or
	// those an earlier version stored at acceptance.
	files []journaledFile
	// run is the run this item came from (trigger.go); nil for chat.
	run *runInfo
	// images are the message's pictures, read back once prepare stored
	// them, sent with its prompt as image blocks (teamturn.go).
	images []agentproc.Image
	// threadContext is the thread's earlier messages for this attempt's
	// prompt, decided before the process starts (teamturn.go).
	threadContext string
	// checks are what is read back from the platform before it runs
	// (checks.go): checkRoot, checkGap; journaled with it. before, on
	// the way into the FIFO only, is the waiting item (its journal
	// entry) an item read back for it goes right before.
	checks []string
	before string
	// answered are the answers given to the requests the turn waited on
	// while no process ran (parked.go): the resumed CLI's same requests
	// get them.
	answered []parkedRequest
	// pending is the reply of an itemPending.
	pending *pendingPost
	// follow is what it does when it comes while a turn runs, chosen
	// for this message (!steer, !queue; steer.go); "" follows the
	// binding. steeredInto is the journal entry of the turn it was
	// written into (steer.go), from the journal after a restart too.
	follow      string
	steeredInto string
	// takenIn: the CLI said it took it into that turn (journaled).
	takenIn bool
	// ownBy is the process that runs it as a turn of its own: it was
	// steered into a turn that ended before the CLI took it in, and the
	// CLI runs it next by itself (steer.go); its turn is that one.
	ownBy procs.Process
}

type ctrlKind int

const (
	ctrlAnswer   ctrlKind = iota // a permission answer
	ctrlStop                     // !stop
	ctrlReap                     // close an idle process to free a slot
	ctrlNotice                   // post text (a queue notice, a refusal)
	ctrlCommand                  // a command that acts at once (!status, !model…)
	ctrlReply                    // a reply in the thread to a question or a plan waiting for it (text)
	ctrlFence                    // the binding's cluster lease was lost: stop the running turn unanswered
	ctrlRestored                 // another host's newer replicated context (restore) is to replace this host's: placed once no turn runs
)

// control reaches a session's goroutine without queueing behind turns.
type control struct {
	kind      ctrlKind
	requestID string // ctrlAnswer: "" means the pending one
	choice    platform.Choice
	question  int                // ctrlAnswer on a question prompt: which question
	options   platform.OptionSet // and which of its options
	userName  string
	userID    string          // who sent it (ctrlAnswer, ctrlReply), for the activity feed
	to        platform.Target // where to answer the sender
	text      string          // ctrlNotice
	msg       platform.Message
	cmd       string // ctrlCommand: its name, and its arguments in args
	args      string
	restore   *Context // ctrlRestored
}

// controlLimit bounds the control lane: past it the conversation's
// goroutine is stuck, and new controls are refused rather than queued.
const controlLimit = 64

// mailbox is where a conversation's work waits for its goroutine: the FIFO
// of journaled work (turns, !new, !resume) and the control lane for what
// must not wait behind a turn (permission answers, !stop, notices to post,
// commands that act at once, a reap). Any goroutine pushes and nothing a
// pusher does waits on the session; only the session goroutine takes.
// counted is told of every item and control added (the engine's busy
// count, whose lock is a leaf), under the mailbox's lock: before the
// session goroutine can take it, finish it and uncount it (busy.go). The
// session goroutine tells it of each it finished.
type mailbox struct {
	queueLimit int
	counted    func(n int)

	mu     sync.Mutex // guards the fields below
	items  []workItem
	ctrls  []control
	state  state
	closed bool // the session goroutine ended or is ending: nothing is added
	// taken is the latest item by the platform's order that left the FIFO
	// (its message only): an item posted before it comes late.
	taken workItem

	work chan struct{} // capacity 1: items gained one, or the session was woken
	ctrl chan struct{} // capacity 1: ctrls gained one
}

func newMailbox(queueLimit int, counted func(n int)) *mailbox {
	return &mailbox{queueLimit: queueLimit, counted: counted, state: stateIdle,
		work: make(chan struct{}, 1), ctrl: make(chan struct{}, 1)}
}

// room reports whether an item may be queued: the mailbox is open and the
// FIFO not full (n is how many wait). The journal checks it before it
// writes, under its accept lock, which retirement takes too.
func (mb *mailbox) room() (open bool, n int, full bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return !mb.closed, len(mb.items), len(mb.items) >= mb.queueLimit
}

// push queues items in the platform's order (order.go): each before the
// waiting items posted after it. It returns the place of the last and
// whether it waits behind other work, and late when the last was posted
// before a turn that was already taken (it cannot go back in time).
func (mb *mailbox) push(items ...workItem) (pos int, waits, late bool) {
	mb.mu.Lock()
	for _, it := range items {
		i := insertAt(mb.items, it)
		if it.before != "" {
			// Read back for the item it goes before (checks.go):
			// right before it, whatever their order says.
			if j := slices.IndexFunc(mb.items, func(x workItem) bool { return x.inboxID == it.before }); j >= 0 {
				i = j
			}
			it.before = ""
		}
		mb.items = slices.Insert(mb.items, i, it)
		pos = i + 1
		// Late: posted before a turn taken in this process, or before
		// one started before a restart that waits to be recovered.
		late = before(it, mb.taken) || i > 0 && mb.items[i-1].started && before(it, mb.items[i-1])
	}
	waits = mb.state != stateIdle || pos > 1
	mb.counted(len(items))
	mb.mu.Unlock()
	poke(mb.work)
	return pos, waits, late
}

// pushControl adds c to the control lane; false when the mailbox is closed
// or the lane is full.
func (mb *mailbox) pushControl(c control) bool {
	mb.mu.Lock()
	if mb.closed || len(mb.ctrls) >= controlLimit {
		mb.mu.Unlock()
		return false
	}
	mb.ctrls = append(mb.ctrls, c)
	mb.counted(1)
	mb.mu.Unlock()
	poke(mb.ctrl)
	return true
}

// takeControl returns the oldest control, if any.
func (mb *mailbox) takeControl() (control, bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if len(mb.ctrls) == 0 {
		return control{}, false
	}
	c := mb.ctrls[0]
	mb.ctrls[0] = control{}
	mb.ctrls = mb.ctrls[1:]
	if len(mb.ctrls) > 0 {
		poke(mb.ctrl)
	}
	return c, true
}

// peek returns the first item of the FIFO without taking it.
func (mb *mailbox) peek() (workItem, bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if len(mb.items) == 0 {
		return workItem{}, false
	}
	return mb.items[0], true
}

// checked clears the checks of the waiting item of journal entry id, or
// takes it out of the FIFO when drop is set (its checks refused it); it
// reports whether the item was there.
func (mb *mailbox) checked(id string, drop bool) bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	for i := range mb.items {
		if mb.items[i].inboxID != id {
			continue
		}
		if drop {
			mb.items = slices.Delete(mb.items, i, i+1)
		} else {
			mb.items[i].checks = nil
		}
		return true
	}
	return false
}

// moveBefore moves the waiting item of journal entry id right before the
// one of next, when it waits behind it; nothing else moves.
func (mb *mailbox) moveBefore(id, next string) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	i := slices.IndexFunc(mb.items, func(x workItem) bool { return x.inboxID == id })
	j := slices.IndexFunc(mb.items, func(x workItem) bool { return x.inboxID == next })
	if i < 0 || j < 0 || i < j {
		return
	}
	it := mb.items[i]
	mb.items = slices.Delete(mb.items, i, i+1)
	mb.items = slices.Insert(mb.items, j, it)
}

// take returns the first item of the FIFO. A turn leaving the FIFO makes
// the session running at once: a message arriving now is told it waits,
// and the process is not reaped for another session.
func (mb *mailbox) take() (workItem, bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if len(mb.items) == 0 {
		return workItem{}, false
	}
	it := mb.items[0]
	mb.items[0] = workItem{}
	mb.items = mb.items[1:]
	if it.kind == itemTurn {
		mb.state = stateRunning
	}
	if it.msg.Seq != 0 && !before(it, mb.taken) {
		mb.taken = workItem{msg: it.msg} // the message alone: its order
	}
	return it, true
}

// pushFront queues items ahead of every waiting one (what the agent
// already has and runs next: steer.go).
func (mb *mailbox) pushFront(items ...workItem) {
	mb.mu.Lock()
	mb.items = slices.Insert(mb.items, 0, items...)
	mb.counted(len(items))
	mb.mu.Unlock()
	poke(mb.work)
}

// takeIf takes the first item of the FIFO when ok holds for it.
func (mb *mailbox) takeIf(ok func(workItem) bool) (workItem, bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if len(mb.items) == 0 || !ok(mb.items[0]) {
		return workItem{}, false
	}
	it := mb.items[0]
	mb.items[0] = workItem{}
	mb.items = mb.items[1:]
	if it.msg.Seq != 0 && !before(it, mb.taken) {
		mb.taken = workItem{msg: it.msg}
	}
	return it, true
}

// closeIfIdle closes the mailbox when nothing waits in it and ok() holds
// (checked under the lock); it reports whether it closed it.
func (mb *mailbox) closeIfIdle(ok func() bool) bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if len(mb.items) > 0 || len(mb.ctrls) > 0 || !ok() {
		return false
	}
	mb.closed = true
	return true
}

// closeAll closes the mailbox and returns what was still in it.
func (mb *mailbox) closeAll() ([]workItem, []control) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	items, ctrls := mb.items, mb.ctrls
	mb.items, mb.ctrls, mb.closed = nil, nil, true
	return items, ctrls
}

func (mb *mailbox) setState(st state) {
	mb.mu.Lock()
	mb.state = st
	mb.mu.Unlock()
}

// snapshot is the state, the queue length (turns and commands waiting)
// and whether the conversation is busy (a turn runs or work waits).
func (mb *mailbox) snapshot() (st state, queued int, busy bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.state, len(mb.items), mb.state != stateIdle || len(mb.items) > 0
}

// waitingTurns counts the queued user turns, for the queue metric.
func (mb *mailbox) waitingTurns() int {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	n := 0
	for _, it := range mb.items {
		if it.kind == itemTurn {
			n++
		}
	}
	return n
}

// wake makes the session goroutine look at its state again (a reload
// marked it, say).
func (mb *mailbox) wake() { poke(mb.work) }

// poke signals a capacity-1 channel without blocking.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
