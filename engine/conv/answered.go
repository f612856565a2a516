package conv

import (
	"context"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// What was answered already. Reading a thread back from the platform (its
// root, the messages a dead instance may have taken: checks.go) finds
// messages that may have run before; taken says which, in one place for
// every such recovery:
//
//   - a host alone took what its journal's seen ids hold: it answers each
//     of them (a kill leaves them pending in its journal, for its restart);
//   - in a cluster, another host may have taken the message and answered
//     it, and this host's journal never saw it. So the holder of a binding
//     records each message it answers (Answers.Answer, right before its
//     reply is posted and after the stream settled its event), and taken
//     asks the record too (Answers.Answered).
//
// The same record keeps a message read back and answered by one host from
// running again when its own delivery reaches the stream later and
// another host holds the binding by then (Stream.AnsweredElsewhere).

// Answers is the record of the messages a cluster's hosts answered, read
// by every host. The cluster implements it (cluster.Node through
// clusterlink); a host alone has none.
type Answers interface {
	// Answered is the host that answered message id of binding b; ""
	// when none did.
	Answered(ctx context.Context, b binding.Key, id string) (host string, err error)
	// Answer records that this host answers message id of binding b, in
	// the conversation at to (which status shows as served here).
	Answer(ctx context.Context, b binding.Key, to platform.Target, id string) error
}

// answeredTimeout bounds one read of the record.
const answeredTimeout = 2 * time.Second

// answer records that this host answers message id of binding b in the
// conversation at to; nil without a record.
func (c *Cluster) answer(ctx context.Context, b binding.Key, to platform.Target, id string) error {
	if c.Answers == nil || id == "" {
		return nil
	}
	return c.Answers.Answer(ctx, b, to, id)
}

// AnsweredElsewhere says whether message id of binding b, which this
// host's journal never took, was answered by another host: its delivery
// from the stream is then settled without running. False outside a
// cluster and for what this host took (the journal's own duplicate rules
// decide those).
func (st *Stream) AnsweredElsewhere(ctx context.Context, b binding.Key, platform, id string) (bool, error) {
	e := st.e
	seen := e.jrs.seenIDs()
	if e.cluster.Answers == nil || id == "" || seen != nil && seen.Has(inbox.SeenKey(platform, id)) {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, answeredTimeout)
	defer cancel()
	by, err := e.cluster.Answers.Answered(ctx, b, id)
	return by != "", err
}

// taken says whether message id, read back from the platform into this
// conversation, ran or runs already: this host took it, or another host
// answered it. When the record cannot be read it counts as taken: the
// message is then left to its own delivery rather than perhaps answered
// twice.
func (s *Conversation) taken(id string) bool {
	if seen := s.e.jrs.seenIDs(); seen != nil && seen.Has(inbox.SeenKey(s.to.Platform, id)) {
		return true
	}
	if s.e.cluster.Answers == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(s.e.bg, answeredTimeout)
	defer cancel()
	by, err := s.e.cluster.Answers.Answered(ctx, s.binding.Key(), id)
	if err != nil {
		s.log.Warn("Reading whether another host answered a message failed; it is not taken from the platform's copy",
			"message_id", id, "error", err)
		return true
	}
	return by != ""
}

// forgotten says whether a message posted at is older than what the
// cluster's record of answered messages keeps (at now): whether a host
// answered it cannot be told. False outside a cluster, and for a message
// whose time is not known.
func (c *Cluster) forgotten(at, now time.Time) bool {
	return c.Answers != nil && c.AnsweredFor > 0 && !at.IsZero() && now.Sub(at) >= c.AnsweredFor
}

// answeredHere says whether the record names this host as the one that
// answered message id of binding b: it wrote that only after the stream
// confirmed its settlement of the event (journal.settleFirst), so no
// other host gets the event again.
func (c *Cluster) answeredHere(bg context.Context, b binding.Key, id string) bool {
	if c.Answers == nil || c.Host == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(bg, answeredTimeout)
	defer cancel()
	by, err := c.Answers.Answered(ctx, b, id)
	return err == nil && by == c.Host
}
