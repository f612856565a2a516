package conv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// Durability of accepted messages. A user message that passes the access
// checks is appended to its conversation's inbox journal, one record and
// one fsync, before HandleMessage returns: before the platform event is
// acknowledged and before the user hears it is queued. That record also
// makes the message's id seen (inbox.Seen), so a redelivery is a
// duplicate from then on. The message leaves the journal only when its
// turn reaches a durable end: a result (or a failure the user was told
// about), or an explicit cancel. Whatever is left when cc-connect dies is
// replayed, in order, by the next start (recovery.go).
//
// What is journaled: user turns (!compact too, which is one), and !new and
// !resume, which wait in the FIFO between turns: after a crash the turns
// queued behind them still run in the session they chose. Commands that
// act at once journal only their id (a seen record), before they act.

// Texts of the durable path.
const (
	inboxFullText = "This conversation already has %d messages waiting: this message was not accepted. " +
		"Please send it again once the current turn is done."
	inboxWriteText = "This message could not be saved, so it was not accepted: %s. Please send it again; " +
		"the messages accepted before it are kept and still run."
	inboxTooLargeText = "This message is too large: %s, the limit is %s; send it as a file."
	inboxBytesText    = "This message (%s) does not fit in this conversation's journal next to the %d messages it holds (%s of its %s): " +
		"it was not accepted. Please send it again once the current turn is done, or send it as a file."
	queueFullText = "Queue full (%d messages waiting): this message was not queued. Please send it again once the current turn is done."
)

// Entry kinds of the FIFO items other than turns. resume carries the
// session id after the colon; resume-arg what the user typed, resolved
// when the item runs.
const (
	kindNew       = "new"
	kindResume    = "resume:"
	kindResumeArg = "resume-arg:"
	// kindOwn is the reply of a turn the CLI ran by itself (own.go): its
	// text is the entry's, to post, not a prompt.
	kindOwn = "own"
)

// errSessionClosed means the session's goroutine ended (retired or shut
// down) before the item could be queued.
var errSessionClosed = errors.New("session closed")

// journal is one conversation's inbox journal as its session uses it: it
// opens the file (failing closed while it cannot be read), accepts work
// into the file and the mailbox in one step, and records a message's
// progress (started, reply being posted, acknowledged). It posts nothing:
// callers get the text to tell the user.
type journal struct {
	path     string
	stateDir string
	limits   inbox.Limits
	seen     *inbox.Seen
	now      func() time.Time
	log      *slog.Logger
	admins   func() []string         // of the binding in force now
	killedAt func(point string) bool // Engine.killedAt
	// queued is told of each item accepted, after its write and before
	// it joins the FIFO (where the conversation's goroutine may start
	// it at once): the activity feed's "asked".
	queued func(workItem)

	// acceptMu makes the journal write and the FIFO push one step, so
	// that the journal's order is the FIFO's; retirement takes it to close
	// the mailbox between two accepts.
	acceptMu sync.Mutex

	// cl links a clustered conversation to the cluster's stream
	// (cluster.go); nil outside a cluster.
	cl *clusterLedger

	mu  sync.Mutex // guards in and err
	in  *inbox.Inbox
	err error // why the journal cannot be read; new input is refused meanwhile
}

// InboxPath is the journal of a session key: one file per conversation,
// named like its state file.
func InboxPath(stateDir, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(stateDir, "inbox", hex.EncodeToString(sum[:16])+".jsonl")
}

// open opens the journal and returns the pending entries as FIFO items.
// A journal that cannot be read leaves it failed closed (openErr says
// why): it refuses new input and the file stays for an admin to inspect.
func (j *journal) open() []workItem {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.openLocked()
}

func (j *journal) openLocked() []workItem {
	if j.in != nil {
		return nil
	}
	in, err := inbox.Open(j.path, j.limits, j.seen)
	if err != nil {
		j.err = err
		return nil
	}
	j.in, j.err = in, nil
	for _, r := range in.Repairs() {
		j.log.Warn("Inbox journal repaired on open", "path", in.Path(), "repair", r)
	}
	pending := in.Pending()
	items := make([]workItem, 0, len(pending))
	for _, en := range pending {
		it, ok := entryItem(en)
		if !ok {
			// Written by a newer cc-connect: keep it for that one.
			j.log.Warn("Inbox entry of an unknown kind skipped", "kind", en.Kind, "message_id", en.ID)
			continue
		}
		items = append(items, it)
	}
	items = ownFirst(inPlatformOrder(items))
	// The first of the others is what recovery looks at (recovery.go), and
	// any other sent before the restart: a message left out of the turn it
	// was steered into, which the CLI ran next by itself (steer.go).
	first := slices.IndexFunc(items, func(it workItem) bool { return it.kind != itemOwn })
	for i := range items {
		items[i].recovered = items[i].kind == itemTurn && (i == first || items[i].started && items[i].steeredInto == "")
	}
	return items
}

// openErr is why the journal cannot be read, or nil.
func (j *journal) openErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// file is the open journal, or nil.
func (j *journal) file() *inbox.Inbox {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.in
}

// accepted is where accept put an item: its place in the FIFO, whether it
// waits behind other work and whether it came late; refusal, when set, is what to tell the user
// instead (it was not accepted).
type accepted struct {
	pos     int
	waits   bool
	late    bool // posted before a turn that had started (order.go)
	refusal string
	reason  string // the refusal, for the adapter's log
}

// accept journals it (one fsync) and queues it in mb, in one step. When the
// journal had failed and now opens (an admin fixed it), the entries it
// holds are queued before it. errSessionClosed means the mailbox is closed
// (the session is retiring or stopping) and nothing was written.
func (j *journal) accept(it workItem, mb *mailbox) (accepted, error) {
	j.acceptMu.Lock()
	defer j.acceptMu.Unlock()
	open, n, full := mb.room()
	if !open {
		return accepted{}, errSessionClosed
	}
	if full {
		j.log.Warn("Queue full; message refused", "queue_len", n)
		return accepted{refusal: fmt.Sprintf(queueFullText, n), reason: "queue full"}, nil
	}
	j.mu.Lock()
	var reloaded []workItem
	if j.in == nil {
		reloaded = j.openLocked() // retry: an admin may have moved a bad file aside
	}
	in, openErr := j.in, j.err
	j.mu.Unlock()
	if reloaded = j.queueable(reloaded); len(reloaded) > 0 {
		mb.push(reloaded...)
	}
	if in == nil {
		j.log.Error("Message refused: the inbox journal is unreadable", "path", j.path, "error", openErr, "admins", j.admins())
		return accepted{refusal: j.failClosedText(openErr), reason: "journal unreadable"}, nil
	}
	en := itemEntry(it, j.now())
	if it.dlv != nil {
		// The write made on the lease's strength: checked right before.
		if err := it.dlv.Fence().Check(); err != nil {
			return accepted{}, err
		}
		en.Fence, en.StreamSeq = it.dlv.Fence().Token(), it.dlv.Seq()
	}
	err := in.Append(en)
	if err == nil && j.killedAt(PointAccepted) {
		return accepted{}, ErrKilled
	}
	var size *inbox.SizeError
	switch {
	case err == nil:
	case errors.Is(err, inbox.ErrDuplicate):
		// Pending already (a session retired and reopened the journal
		// while this copy was on its way): it runs from there.
		j.log.Debug("Ignoring a message already in the inbox", "message_id", en.ID)
		return accepted{pos: -1}, nil
	case errors.As(err, &size) && errors.Is(err, inbox.ErrMessageTooLarge):
		j.log.Warn("Message over the inbox size limit; refused", "size", size.Size, "limit", size.Limit)
		n, limit := sizesApart(size.Size, size.Limit)
		return accepted{refusal: fmt.Sprintf(inboxTooLargeText, n, limit), reason: "message too large"}, nil
	case errors.As(err, &size):
		j.log.Warn("Inbox full by size; message refused", "pending", in.Len(), "size", size.Size, "used", size.Used, "limit", size.Limit)
		return accepted{refusal: fmt.Sprintf(inboxBytesText, humanSize(size.Size), in.Len(), humanSize(size.Used), humanSize(size.Limit)),
			reason: "journal full"}, nil
	case errors.Is(err, inbox.ErrFull):
		j.log.Warn("Inbox full; message refused", "pending", in.Len(), "error", err)
		return accepted{refusal: fmt.Sprintf(inboxFullText, in.Len()), reason: "journal full"}, nil
	default:
		// The error names the journal's path: it stays in the log.
		j.log.Error("Journaling a message failed; message refused", "error", err)
		why := "writing cc-connect's state failed (the log has the details)"
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			why = "the disk that holds cc-connect's state is full"
		}
		return accepted{refusal: fmt.Sprintf(inboxWriteText, why), reason: "journal write failed"}, nil
	}
	it.inboxID, it.uuid, it.fence, it.streamSeq = en.ID, en.UUID, en.Fence, en.StreamSeq
	if it.dlv != nil && j.cl != nil {
		j.track(en.ID, it.dlv)
	}
	it.dlv = nil // the ledger holds it: a redelivery may replace it
	if j.queued != nil {
		j.queued(it)
	}
	pos, waits, late := mb.push(it)
	return accepted{pos: pos, waits: waits, late: late}, nil
}

// acceptControl records m's id in the journal (one fsync), then hands cs
// to the session's control lane: a command that acts at once, and must not
// act again when the platform redelivers it. A journal that cannot be read
// does not stop commands (their id then lasts only as long as this run's
// claim). False when the lane is full.
func (j *journal) acceptControl(m platform.Message, cs []control, mb *mailbox) (bool, error) {
	j.acceptMu.Lock()
	defer j.acceptMu.Unlock()
	if open, _, _ := mb.room(); !open {
		return false, errSessionClosed
	}
	if in := j.file(); in != nil && m.ID != "" {
		if err := in.MarkSeen(m.Target.Platform, m.ID, j.now()); err != nil {
			j.log.Warn("Remembering a command's id failed; a redelivery may run it again", "message_id", m.ID, "error", err)
		}
	}
	for _, c := range cs {
		if !mb.pushControl(c) {
			return false, nil
		}
	}
	return true, nil
}

// itemEntry is the journal entry of a FIFO item, with the uuid its message
// will carry to claude.
func itemEntry(it workItem, now time.Time) inbox.Entry {
	m := it.msg
	id := m.ID
	if id == "" {
		// This platform cannot redeliver; any stable unique id will do.
		id = "local-" + uuid.NewString()
	}
	en := inbox.Entry{ID: id, Platform: m.Target.Platform, Channel: m.Target.Channel, Thread: m.Target.Thread,
		MessageID: m.Target.MessageID, UserID: m.UserID, UserName: m.UserName, Text: m.Text, Received: m.Received, DM: m.IsDM,
		Seq: m.Seq, Accepted: now, UUID: uuid.NewString(), Checks: it.checks}
	switch it.kind {
	case itemNew:
		en.Kind = kindNew
	case itemResume:
		en.Kind = kindResume + it.resumeID
		if it.resumeArg != "" {
			en.Kind = kindResumeArg + it.resumeArg
		}
	}
	if k := runKind(it); k != "" {
		en.Kind = k
	}
	for _, a := range m.Attachments {
		en.Attachments = append(en.Attachments, inbox.Attachment{Name: a.Name, Mime: a.Mime, Ref: a.Ref, Declared: a.Size})
	}
	return en
}

// entryItem rebuilds the FIFO item a journal entry was made from; false
// for a kind this version does not know.
func entryItem(en inbox.Entry) (workItem, bool) {
	to := platform.Target{Platform: en.Platform, Channel: en.Channel, Thread: en.Thread, MessageID: en.MessageID}
	it := workItem{kind: itemTurn, inboxID: en.ID, uuid: en.UUID, started: en.Started, replying: en.Replying, fence: en.Fence, streamSeq: en.StreamSeq,
		settled: en.Settled, replicated: en.Replicated,
		msg: platform.Message{ID: en.ID, Target: to, UserID: en.UserID, UserName: en.UserName, Text: en.Text, Received: en.Received, IsDM: en.DM,
			Seq: en.Seq},
		parts: slices.Clone(en.Parts), replyTail: en.ReplyTail, checks: en.Checks, steeredInto: en.SteeredInto, takenIn: en.TakenIn}
	for _, p := range en.Streamed {
		it.streamed = append(it.streamed, platform.Target{Platform: en.Platform, Channel: p.Channel, Thread: p.Thread, MessageID: p.ID})
	}
	for _, a := range en.Attachments {
		it.files = append(it.files, journaledFile{Attachment: a})
	}
	switch {
	case en.Kind == "":
	case en.Kind == kindNew:
		it.kind = itemNew
	case strings.HasPrefix(en.Kind, kindResumeArg):
		it.kind, it.resumeArg = itemResume, strings.TrimPrefix(en.Kind, kindResumeArg)
	case strings.HasPrefix(en.Kind, kindResume):
		it.kind, it.resumeID = itemResume, strings.TrimPrefix(en.Kind, kindResume)
	case en.Kind == kindOwn:
		it.kind = itemOwn
	case isRunKind(en.Kind):
		k, run, ok := runOfKind(en.Kind)
		if !ok {
			return workItem{}, false
		}
		it.kind, it.run = k, run
	default:
		return workItem{}, false
	}
	return it, true
}

// failClosedText tells the user (and the admins, named) why this
// conversation refuses new input.
func (j *journal) failClosedText(err error) string {
	// Everyone allowed in the thread reads this: name the file relative to
	// the state dir and leave host paths and error details to the log.
	why := "could not be read"
	if errors.Is(err, inbox.ErrTooLarge) {
		why = "is over its size limit"
	}
	name := j.path
	if rel, rerr := filepath.Rel(j.stateDir, name); rerr == nil {
		name = rel
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This conversation's message journal %s, so new messages are refused until an admin inspects it (%s in the state dir; the log has the details). ", why, name)
	b.WriteString("The file is kept as it is; moving it aside lets the conversation continue.")
	if admins := j.admins(); len(admins) > 0 {
		fmt.Fprintf(&b, " Admins: %s.", strings.Join(admins, ", "))
	}
	return b.String()
}

// markStarted records, before the message is written to claude, that it
// goes with its uuid: the one it was accepted with, or the fresh one of a
// message sent again after a usage limit refused it (not fsynced: see
// inbox.MarkStarted). After a crash the transcript tells whether the CLI
// had it.
func (j *journal) markStarted(it workItem) error {
	in := j.file()
	if it.inboxID == "" || in == nil {
		return nil
	}
	if err := in.MarkStarted(it.inboxID, it.uuid); err != nil {
		return fmt.Errorf("journaling the start of the turn: %w", err)
	}
	return nil
}

// markSteered records, before the message is written into the running turn
// of the entry into, that it goes there with the uuid it was accepted with
// (steer.go).
func (j *journal) markSteered(it workItem, into string) error {
	in := j.file()
	if it.inboxID == "" || in == nil {
		return fmt.Errorf("no journal entry to mark")
	}
	if err := in.MarkSteered(it.inboxID, into); err != nil {
		return fmt.Errorf("journaling the steered message: %w", err)
	}
	return nil
}

// markTakenIn records that the CLI said it took it, steered into the
// running turn, into that turn, and so that the thread is shown so (a
// recovery does not show it again). Whether it was taken in, a recovery
// asks the transcript (takeSteered): the CLI can take a message in before
// cc-connect reads that it did.
func (j *journal) markTakenIn(it workItem) {
	in := j.file()
	if it.inboxID == "" || in == nil {
		return
	}
	if err := in.MarkTakenIn(it.inboxID); err != nil {
		j.log.Warn("Journaling that a steered message was taken in failed", "message_id", it.inboxID, "error", err)
	}
}

// markReplying records that the reply to it is about to be posted, so that
// recovery after a crash knows it may have reached the chat (and, with an
// adapter that can tell, could ask whether it did).
// streamed are the messages a streamed reply is about to be finished in,
// tail what the reply carries after the agent's text (one write for all).
func (j *journal) markReplying(it workItem, streamed []platform.Target, tail string) {
	in := j.file()
	if it.inboxID == "" || in == nil {
		return
	}
	if err := in.MarkReplying(it.inboxID, postedOf(streamed), tail); err != nil {
		j.log.Warn("Journaling the reply's post failed", "message_id", it.inboxID, "error", err)
	}
}

// markStreamed records the messages the reply to it is streamed into, so
// that recovery after a kill can finish them or say they were cut off.
func (j *journal) markStreamed(it workItem, msgs []platform.Target) {
	in := j.file()
	if it.inboxID == "" || in == nil {
		return
	}
	if err := in.MarkStreamed(it.inboxID, postedOf(msgs)); err != nil {
		j.log.Warn("Journaling the streamed reply's messages failed", "message_id", it.inboxID, "error", err)
	}
}

// markPart records that part of the reply to it was posted, where the
// platform cannot find its posts again.
func (j *journal) markPart(it workItem, part int) {
	in := j.file()
	if it.inboxID == "" || in == nil {
		return
	}
	if err := in.MarkPart(it.inboxID, part); err != nil {
		j.log.Warn("Journaling a posted part of the reply failed", "message_id", it.inboxID, "part", part, "error", err)
	}
}

func postedOf(msgs []platform.Target) []inbox.Posted {
	var out []inbox.Posted
	for _, m := range msgs {
		out = append(out, inbox.Posted{Channel: m.Channel, Thread: m.Thread, ID: m.MessageID})
	}
	return out
}

// ack removes a message whose turn reached a durable end.
func (j *journal) ack(it workItem, why inbox.AckReason) { j.ackLater(it, why)() }

// ackLater is ack in two steps (inbox.AckUnsynced): it writes the ack, so
// that a kill from then on does not run the message again, and returns
// the rest, the fsync and the stream's ack, for a turn's tail to run.
func (j *journal) ackLater(it workItem, why inbox.AckReason) (finish func()) {
	in := j.file()
	if it.inboxID == "" || in == nil {
		return func() {}
	}
	if err := j.fenced(it); err != nil {
		// Not ours to finish: the binding's next holder runs it.
		j.park(it, err)
		return func() {}
	}
	failed := func(err error) {
		if errors.Is(err, inbox.ErrNotCompacted) {
			j.log.Warn("Compacting the inbox journal failed; it stays as it is until a later compaction", "error", err)
			return
		}
		j.log.Error("Acknowledging a message in the inbox failed; it may run again after a restart",
			"message_id", it.inboxID, "error", err)
	}
	sync, err := in.AckUnsynced(it.inboxID, why)
	if err != nil {
		failed(err)
		return func() { j.finished(it) }
	}
	return func() {
		if err := sync(); err != nil {
			failed(err)
		}
		j.finished(it)
	}
}

// pending is the journal's pending entry of message id, if it holds one.
func (j *journal) pending(id string) (inbox.Entry, bool) {
	in := j.file()
	if in == nil {
		return inbox.Entry{}, false
	}
	for _, en := range in.Pending() {
		if en.ID == id {
			return en, true
		}
	}
	return inbox.Entry{}, false
}

// close closes the journal; what is pending stays on disk.
func (j *journal) close() {
	j.mu.Lock()
	in := j.in
	j.in = nil
	j.mu.Unlock()
	if in != nil {
		if err := in.Close(); err != nil {
			j.log.Warn("Closing the inbox failed", "error", err)
		}
	}
}

// journals are the conversations' journals as a whole: the seen ids of
// every one (the one duplicate check), the limits each is opened with, and
// which hold pending work at a start.
type journals struct {
	stateDir     string
	seenWindow   time.Duration
	queueLimit   int
	compactBytes int64 // inbox.Limits.CompactBytes; 0 = its default (tests lower it)
	now          func() time.Time
	log          *slog.Logger

	// seenSet is the accepted message ids of every journal; seenOnce
	// opens it, and the journals, on first use, and finds the journals
	// holding pending messages (pending), which recovery reopens.
	seenOnce sync.Once
	seenSet  *inbox.Seen
	pending  []string
}

// seenIDs opens the seen message ids on first use: the compacted ids of
// seen.jsonl and those of every journal, which it opens once (compacting
// those with nothing pending, recovery.go's scanJournals) so that a
// message accepted before a restart is known before the first new one is
// checked; the journals that hold pending messages are kept for recovery.
// When seen.jsonl cannot be read, the journals' ids are still known (a
// fresh file beside it takes the compacted ones from then on), and the
// failure is logged.
func (js *journals) seenIDs() *inbox.Seen {
	js.seenOnce.Do(func() {
		dir := filepath.Join(js.stateDir, "inbox")
		path := filepath.Join(dir, "seen.jsonl")
		s, err := inbox.OpenSeen(path, js.seenWindow, js.now)
		if err != nil {
			aside := filepath.Join(dir, "seen.unreadable-"+js.now().UTC().Format("20060102T150405")+".jsonl")
			js.log.Error("Seen message ids unreadable; redeliveries of messages acknowledged before are not caught. The file is kept; ids go to a new one",
				"path", path, "new_path", aside, "error", err)
			if s, err = inbox.OpenSeen(aside, js.seenWindow, js.now); err != nil {
				js.log.Error("Opening a new seen file failed too; redeliveries are caught only while their journal holds them", "error", err)
				return
			}
		}
		for _, r := range s.Repairs() {
			js.log.Warn("Seen message ids repaired on open", "path", path, "repair", r)
		}
		js.seenSet = s
		js.pending = js.scanJournals(dir, s)
	})
	return js.seenSet
}

// inboxLimits: QueueLimit messages may wait behind the running one, as in
// the FIFO.
func (js *journals) inboxLimits() inbox.Limits {
	return inbox.Limits{MaxPending: js.queueLimit + 1, CompactBytes: js.compactBytes}
}

// sizesApart writes a size and the limit it is over so that they differ
// on screen: 8.0 MB against 8.0 MB would not say which is larger.
func sizesApart(n, limit int64) (string, string) {
	a, b := humanSize(n), humanSize(limit)
	if a == b {
		return fmt.Sprintf("%d bytes", n), fmt.Sprintf("%d bytes", limit)
	}
	return a, b
}

// Claim takes the claim on m's id (inbox.Seen.Claim), the one duplicate
// check; a nil claim and no error for a message without an id. The
// caller releases it once the message is journaled or refused.
func (e *Set) Claim(ctx context.Context, m platform.Message) (*inbox.Claim, error) {
	seen := e.jrs.seenIDs()
	if m.ID == "" || seen == nil {
		return nil, nil
	}
	c, err := seen.Claim(ctx, inbox.SeenKey(m.Target.Platform, m.ID))
	if err == nil && e.killedAt(PointClaimed) {
		c.Release()
		return nil, ErrKilled
	}
	return c, err
}
