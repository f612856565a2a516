package conv

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/format"
	"github.com/cc-connect/cc-connect/platform"
)

// Replies a host settled and was posting. In a cluster the holder of a
// binding settles a message's event in the stream before it posts the
// reply (cluster.go: settleFirst), so that no other host runs it again.
// A host killed between the two held the only copy of the reply (in its
// Claude transcript), and used to post it when it came back: after what
// the conversation's next host had answered since, out of order. So the
// reply goes to the cluster first:
//
//   - right before the settlement, the holder writes the reply it is
//     about to post into the conversation's pending reply record (one per
//     conversation: it runs one turn at a time); a failed write settles
//     nothing, and the event runs again under its next delivery;
//   - once the reply is posted, before its journal ack, the record is
//     removed;
//   - the host that starts serving the binding posts, before any event
//     of its tenure, each record whose event the stream no longer holds
//     (settled, its reply perhaps not posted), looking for it on the
//     platform first (Reply.Again), and removes it (Stream.PostPending);
//   - the host that comes back with such an entry parked (settleParked)
//     leaves a record that still names it to the binding's holder (itself
//     when it holds the lease: it recovers it from its transcript, in
//     order, since nobody answered in between), and drops the entry when
//     the record no longer names it: another host posted the reply.

// Replies keeps the reply each conversation's host settled and is
// posting, read by the host that takes the binding over. The cluster
// implements it (cluster.ReplyStore through clusterlink); a host alone
// has none.
type Replies interface {
	// PutReply stores rec as the reply being posted in the conversation
	// at to of binding b, and returns its revision.
	PutReply(ctx context.Context, b binding.Key, to platform.Target, rec []byte) (uint64, error)
	// Reply is the reply being posted in the conversation at to; a nil
	// Value when none is.
	Reply(ctx context.Context, b binding.Key, to platform.Target) (StoredReply, error)
	// Replies are the replies being posted in binding b's conversations.
	Replies(ctx context.Context, b binding.Key) ([]StoredReply, error)
	// RemoveReply removes the reply of revision of the conversation at
	// to, once posted; a later one stays.
	RemoveReply(ctx context.Context, b binding.Key, to platform.Target, revision uint64) error
}

// StoredReply is one conversation's reply being posted, as stored.
type StoredReply struct {
	Value    []byte
	Revision uint64
}

// pendingRecord is the record of a reply being posted.
type pendingRecord struct {
	Format int       `json:"format"`
	Host   string    `json:"host"` // the host that settled the event
	At     time.Time `json:"at"`
	// ID and Seq are the message's platform id and its event's sequence
	// in the stream; Message where it was posted, User who wrote it and
	// Text its first words (for the log and a quote).
	ID      string          `json:"id"`
	Seq     uint64          `json:"seq"`
	Message platform.Target `json:"message"`
	User    string          `json:"user,omitempty"`
	Text    string          `json:"text,omitempty"`
	// Key is the reply's key on the platform (replyKey: alike on every
	// host), Reply its text.
	Key   string `json:"key"`
	Reply string `json:"reply"`
	// Posting says the host that settled it began posting it on a
	// platform that can neither tag nor find its posts (Telegram): a
	// host that takes the binding over cannot tell what landed, so it
	// leaves the reply to that host's journal (which wrote each part
	// down as it landed) rather than post it a second time.
	Posting bool `json:"posting,omitempty"`
}

// pendingReplyLimit bounds a stored reply's text (the context bucket
// takes values of 260 KiB); a longer reply is stored cut, and says so.
const pendingReplyLimit = 240 << 10

// pendingReplies is a clustered conversation's side of the records.
type pendingReplies struct {
	replies Replies
	b       binding.Key
	to      platform.Target // the conversation
	host    string
	mu      sync.Mutex              // guards written
	written map[string]writtenReply // message id → what this host wrote
}

// writtenReply is a record this host wrote, and its revision.
type writtenReply struct {
	rec pendingRecord
	rev uint64
}

// put stores the reply of it, about to be posted.
func (p *pendingReplies) put(ctx context.Context, it workItem, reply string) error {
	if len(reply) > pendingReplyLimit {
		cut := pendingReplyLimit
		for cut > 0 && !utf8.RuneStart(reply[cut]) {
			cut--
		}
		reply = reply[:cut] + "\n\n(cut: the reply was longer than the cluster keeps for a host that takes it over)"
	}
	return p.write(ctx, pendingRecord{Format: format.Written(), Host: p.host, At: time.Now().UTC(), ID: it.inboxID,
		Seq: it.streamSeq, Message: it.msg.Target, User: it.msg.UserID, Text: Quote(it.msg.Text, 80), Key: replyKey(it, true), Reply: reply})
}

// write stores rec as this host's record of its message.
func (p *pendingReplies) write(ctx context.Context, rec pendingRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	rev, err := p.replies.PutReply(ctx, p.b, p.to, v)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.written == nil {
		p.written = map[string]writtenReply{}
	}
	p.written[rec.ID] = writtenReply{rec: rec, rev: rev}
	p.mu.Unlock()
	return nil
}

// posting marks the record this host wrote for it as being posted
// (pendingRecord.Posting); nothing when it wrote none.
func (p *pendingReplies) posting(ctx context.Context, it workItem) error {
	p.mu.Lock()
	w, ok := p.written[it.inboxID]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	rec := w.rec
	rec.Posting = true
	return p.write(ctx, rec)
}

// names reads whether the conversation's record names message id: its
// reply is still to be posted (by the binding's holder).
func (p *pendingReplies) names(ctx context.Context, id string) (bool, uint64, error) {
	s, err := p.replies.Reply(ctx, p.b, p.to)
	if err != nil || s.Value == nil {
		return false, 0, err
	}
	rec, err := decodePending(s.Value)
	if err != nil {
		return false, 0, err
	}
	return rec.ID == id, s.Revision, nil
}

// posted removes the record of it once its reply is posted: the one this
// host wrote, or, for a reply recovered after a restart, the one that
// still names it.
func (p *pendingReplies) posted(ctx context.Context, it workItem) error {
	p.mu.Lock()
	w, ok := p.written[it.inboxID]
	delete(p.written, it.inboxID)
	p.mu.Unlock()
	rev := w.rev
	if !ok {
		if !it.replying {
			return nil // its reply was never stored
		}
		named, r, err := p.names(ctx, it.inboxID)
		if err != nil || !named {
			return err
		}
		rev = r
	}
	return p.replies.RemoveReply(ctx, p.b, p.to, rev)
}

// decodePending reads a stored record; a newer format than this build
// reads is refused (format.Check).
func decodePending(v []byte) (pendingRecord, error) {
	var rec pendingRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return rec, fmt.Errorf("reading a reply being posted: %w", err)
	}
	if err := format.Check("a reply being posted", rec.Format); err != nil {
		return rec, err
	}
	return rec, nil
}

// replicateReply stores the reply of it before its event is settled;
// nil without a record (a host alone, not from the stream).
func (j *journal) replicateReply(ctx context.Context, it workItem, reply string) error {
	if j.cl == nil || j.cl.pending == nil || it.inboxID == "" || it.streamSeq == 0 {
		return nil
	}
	if err := j.cl.pending.put(ctx, it, reply); err != nil {
		return fmt.Errorf("replicating the reply before settling: %w", err)
	}
	return nil
}

// markPosting marks the stored reply of it as being posted, right before
// the post, where the platform can neither tag nor find its posts: from
// then on only this host, whose journal writes down each part as it
// lands, may post it (pendingRecord.Posting). A failed write is logged:
// the binding's next holder may then post it a second time.
func markPosting(j *journal, it workItem) {
	if j.cl == nil || j.cl.pending == nil || it.inboxID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), answeredTimeout)
	defer cancel()
	if err := j.cl.pending.posting(ctx, it); err != nil {
		j.log.Warn("Marking a stored reply as being posted failed; if this host dies while posting it, the binding's next holder may post it again",
			"message_id", it.inboxID, "error", err)
	}
}

// replyPosted removes the record of it's reply, posted now. A failure is
// logged: the binding's next holder finds it and looks the reply up on
// the platform before it posts it.
func (j *journal) replyPosted(it workItem) {
	if j.cl == nil || j.cl.pending == nil || it.inboxID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), answeredTimeout)
	defer cancel()
	if err := j.cl.pending.posted(ctx, it); err != nil {
		j.log.Warn("Removing the record of a posted reply failed; the binding's next holder looks it up before posting it",
			"message_id", it.inboxID, "error", err)
	}
}

// PostPending posts, before any event of this host's tenure of binding b
// is delivered, the replies that the hosts before it settled and did not
// remove (killed before or while posting): each goes to its
// conversation's FIFO ahead of that conversation's new events. A record
// whose event the stream still holds is left: the event runs again. One
// this host wrote, or whose message its journal holds, is left to its
// journal (settleParked). A conversation new to this host is restored
// from its replicated context first, as a moved conversation's event is,
// and told moved(restored, why) once, before the reply. One this host
// knows has its replicated context compared with its record here, when
// first(key) says the tenure has not done so yet (the ingress does it at
// a conversation's first message of a tenure otherwise): restored when
// another host answered it since, and told so before the reply, rather
// than after it, at its next message.
func (st *Stream) PostPending(ctx context.Context, b binding.Key, moved func(restored bool, why string) string,
	first func(key string) bool) error {
	c := &st.e.cluster
	if c.Replies == nil || c.InStream == nil {
		return nil
	}
	stored, err := c.Replies.Replies(ctx, b)
	if err != nil {
		return err
	}
	var recs []pendingRecord
	revs := map[string]uint64{}
	for _, s := range stored {
		rec, err := decodePending(s.Value)
		if err != nil {
			st.e.log.Warn("A reply being posted in the cluster is unreadable; left alone", "platform", b.Platform, "channel", b.Channel, "error", err)
			continue
		}
		recs = append(recs, rec)
		revs[rec.ID] = s.Revision
	}
	slices.SortFunc(recs, func(x, y pendingRecord) int { return cmp.Compare(x.Seq, y.Seq) })
	for _, rec := range recs {
		if rec.Host == c.Host {
			// This host's own: its journal holds the entry until the
			// reply is posted and the record removed, and decides
			// (settleParked, which ran just before).
			continue
		}
		in, err := c.InStream(ctx, rec.Seq)
		if err != nil {
			return fmt.Errorf("asking the stream about a reply being posted: %w", err)
		}
		if in {
			continue // not settled: its event runs again
		}
		bd, ok := st.e.resolve(rec.Message.Platform, rec.Message.Channel)
		if !ok {
			continue
		}
		a, ok := st.e.host.Chat(rec.Message.Platform)
		if !ok {
			continue
		}
		if rec.Posting {
			// Its host was posting it where nothing tells what landed:
			// its journal does, so the reply is left to it (late, when
			// it is back and serves the binding), never posted twice.
			st.e.log.Info("A reply another host was posting is left to that host's journal: the platform cannot tell what of it landed",
				"platform", rec.Message.Platform, "channel", rec.Message.Channel, "message_id", rec.ID, "settled_by", rec.Host)
			continue
		}
		m := platform.Message{ID: rec.ID, Target: rec.Message, UserID: rec.User, Text: rec.Text}
		key := Key(rec.Message)
		known := st.e.Has(key)
		// Noted for the tenure either way: its next message needs no
		// second read of the bucket.
		check := first == nil || first(key)
		restored, why := false, ""
		if !known || check {
			restored, why = st.Restore(ctx, bd, rec.Message)
		}
		s, err := st.e.session(bd, m, a)
		if err != nil {
			return err
		}
		_, inJournal := s.jr.pending(rec.ID)
		if moved != nil && (restored || (!known && !inJournal)) {
			s.notice(moved(restored, why))
		}
		if inJournal {
			continue // in this host's journal too: it decides (settleParked)
		}
		s.log.Info("A reply another host settled and did not post: posting it before the conversation's next message",
			"message_id", rec.ID, "settled_by", rec.Host)
		s.mb.push(workItem{kind: itemPending, msg: m, pending: &pendingPost{rec: rec, revision: revs[rec.ID]}})
	}
	return nil
}

// pendingPost is a reply another host settled, for this host to post.
type pendingPost struct {
	rec      pendingRecord
	revision uint64
}

// postPending posts the reply of a record (PostPending) while this host
// holds the binding: recorded as answered here (the host that settled it
// may have died before it wrote that), looked for on the platform first,
// then the record removed.
func postPending(s *Conversation, p *pendingPost) {
	c := &s.e.cluster
	if c.fence(s.binding.Platform, s.binding.Channel) == nil {
		s.log.Info("A reply another host settled is left for the binding's next holder: this host no longer serves it", "message_id", p.rec.ID)
		return
	}
	ctx, cancel := context.WithTimeout(s.e.bg, settleTimeout)
	defer cancel()
	// Queued twice when a tenure's start was tried again, or posted
	// meanwhile: only a record still there is posted.
	switch st, err := c.Replies.Reply(ctx, s.binding.Key(), s.to); {
	case err != nil:
		s.log.Warn("Reading a reply another host settled failed; it is left for the binding's next tenure", "message_id", p.rec.ID, "error", err)
		return
	case st.Revision != p.revision:
		return
	}
	if err := c.answer(ctx, s.binding.Key(), s.to, p.rec.ID); err != nil {
		s.log.Warn("Recording a message as answered in the cluster failed; a host that reads its thread back may run it again",
			"message_id", p.rec.ID, "error", err)
	}
	if strings.TrimSpace(p.rec.Reply) != "" {
		res := s.chat.sendReply(p.rec.Reply, platform.Reply{Key: p.rec.Key, After: p.rec.Message.MessageID, Again: true})
		s.log.Info("Posted a reply another host settled", "message_id", p.rec.ID, "settled_by", p.rec.Host,
			"parts", res.Parts, "found", res.Found, "posted", res.Posted)
	}
	if err := c.Replies.RemoveReply(ctx, s.binding.Key(), s.to, p.revision); err != nil {
		s.log.Warn("Removing the record of a posted reply failed; the binding's next holder looks it up before posting it",
			"message_id", p.rec.ID, "error", err)
	}
}
