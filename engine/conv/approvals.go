package conv

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/format"
	"github.com/cc-connect/cc-connect/platform"
)

// Approvals that travel with a cluster binding. On one host a request a
// turn waits on is kept in the conversation's record (parked.go); that
// file is the host's own, and the binding's next holder runs the message
// again from the session as of its last answered turn. So a clustered
// conversation's requests are kept in the cluster's context bucket too,
// one record per conversation:
//
//   - each request is written as it is asked, before its prompt is
//     posted (so that a kill -9 right after the post finds it), and again
//     with the prompt's message once posted, with the answer once given,
//     and once the approvers were reminded; only while this host holds the
//     binding's lease, and, while it stops, only to add an answer (the
//     CLI withdraws what it waited on when the hand-over interrupts it);
//   - the record goes when the turn reaches its durable end (a reply, a
//     !stop, a failure the thread was told of);
//   - the next holder, given the message again by the stream, reads the
//     record before it journals it (Stream.Adopt): requests that name the
//     message are adopted. Their ids are registered at once, so that a
//     press on the old prompt, which reaches the new holder through the
//     stream right behind the message, is taken (held until the turn
//     waits: heldForAdoption). So are !allow, !deny, !skip and a reply in
//     the thread to an adopted question or plan sent meanwhile (the
//     accept path takes such a reply as an answer, as it does while a
//     turn waits on one): the same gate at accept, and the wait's desk
//     applies them as the host that asked would have; an ordinary
//     message queues behind the adopted one. Before the message runs, the
//     turn waits
//     on them with no process, as after a restart (parkedWait), telling
//     the thread that the request above still waits; then the message
//     runs, and the repeated request (the same tool and input) is
//     answered with the answer given, nobody asked again.
//
// The timeout still counts from the first posting and the reminder is
// not repeated: both travel in the record (parkedRequest).

// Approvals keeps the requests each clustered conversation's turn waits
// on, for the host that takes the binding over. The cluster implements
// it (cluster.ApprovalStore through clusterlink); a host alone has none.
type Approvals interface {
	// PutApprovals stores rec as the requests of the conversation at to
	// of binding b, replacing what was stored.
	PutApprovals(ctx context.Context, b binding.Key, to platform.Target, rec []byte) error
	// Approvals reads them back; nil when none are stored.
	Approvals(ctx context.Context, b binding.Key, to platform.Target) ([]byte, error)
	// RemoveApprovals removes them.
	RemoveApprovals(ctx context.Context, b binding.Key, to platform.Target) error
}

// approvalsRecord is what the bucket keeps of a conversation's requests.
type approvalsRecord struct {
	Format   int             `json:"format"`
	Host     string          `json:"host"` // the host that wrote it
	At       time.Time       `json:"at"`
	Item     string          `json:"item"` // the message whose turn waits (its platform id)
	Requests []parkedRequest `json:"requests"`
}

// approvalsTimeout bounds one write or read of the record.
const approvalsTimeout = 5 * time.Second

// sharedApprovals is a clustered conversation's side of the record; it
// lives on the conversation's goroutine.
type sharedApprovals struct {
	store Approvals
	b     binding.Key
	to    platform.Target
	host  string
	log   *slog.Logger
	bg    context.Context
	// fence is this host's tenure of the binding, nil when it holds none;
	// stopping says cc-connect stops.
	fence    func() Fence
	stopping func() bool
	// last is what was written last ("" when nothing is stored), and
	// answers how many answers it held.
	last    string
	answers int
}

// write stores the requests of item's turn: those answered (given) and
// those still waiting (pending, each as it is or will be shown).
func (s *sharedApprovals) write(item string, reqs []parkedRequest) {
	if s == nil {
		return
	}
	answers := 0
	for _, r := range reqs {
		if r.Answer != nil {
			answers++
		}
	}
	if len(reqs) == 0 && s.last == "" {
		return
	}
	if s.stopping() && answers <= s.answers {
		return // the hand-over's interrupt withdraws them: the record stays as it was
	}
	same, err := json.Marshal(approvalsRecord{Item: item, Requests: reqs})
	if err != nil || string(same) == s.last {
		return
	}
	v, err := json.Marshal(approvalsRecord{Format: format.Written(), Host: s.host, At: time.Now().UTC(), Item: item, Requests: reqs})
	if err != nil {
		return
	}
	f := s.fence()
	if f == nil || f.Check() != nil {
		return // not this host's to write: the binding is served elsewhere
	}
	ctx, cancel := context.WithTimeout(s.bg, approvalsTimeout)
	defer cancel()
	if err := s.store.PutApprovals(ctx, s.b, s.to, v); err != nil {
		s.log.Warn("Keeping the waiting requests in the cluster failed; a host that takes the conversation over asks again",
			"message_id", item, "error", err)
		return
	}
	s.last, s.answers = string(same), answers
}

// clear removes the record once its turn reached its durable end.
func (s *sharedApprovals) clear() {
	if s == nil || s.last == "" {
		return
	}
	if f := s.fence(); f == nil || f.Check() != nil {
		return // the binding's next holder runs the turn again, and needs them
	}
	ctx, cancel := context.WithTimeout(s.bg, approvalsTimeout)
	defer cancel()
	if err := s.store.RemoveApprovals(ctx, s.b, s.to); err != nil {
		s.log.Warn("Removing the answered requests from the cluster failed; they expire there", "error", err)
		return
	}
	s.last, s.answers = "", 0
}

// adopted marks the record as this host's to remove (it adopted it).
func (s *sharedApprovals) adopted(reqs []parkedRequest) {
	if s == nil {
		return
	}
	s.last = "adopted"
	for _, r := range reqs {
		if r.Answer != nil {
			s.answers++
		}
	}
}

// adoption is what a host that takes a binding over found in the record
// for a message it was given again: the requests its turn waited on, and
// the answers that reached the conversation before it waits on them.
type adoption struct {
	item    string
	waiting []parkedRequest
	early   []control
}

// adoptions are the adoptions whose messages have not run yet, by
// conversation key.
type adoptions struct {
	mu sync.Mutex // guards m
	m  map[string]*adoption
}

func (a *adoptions) put(key string, ad *adoption) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]*adoption{}
	}
	a.m[key] = ad
}

// get returns the adoption of key's message item, or nil; it stays.
func (a *adoptions) get(key, item string) *adoption {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ad := a.m[key]; ad != nil && ad.item == item {
		return ad
	}
	return nil
}

// take removes and returns the adoption of key's message item, or nil.
func (a *adoptions) take(key, item string) *adoption {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ad := a.m[key]
	if ad == nil || ad.item != item {
		return nil
	}
	delete(a.m, key)
	return ad
}

// hold keeps an answer to an adopted request that reached key's
// conversation before its turn waits on it; false when c answers none.
// A press names its request; a typed answer (!allow, !deny, !skip: no
// id) and a reply in the thread are held when a request they may answer
// waits, and the wait gives them to its desk as it would have taken them
// itself (replayEarly), so that they answer what they would have
// answered on the host that asked.
func (a *adoptions) hold(key string, c control) bool {
	if a == nil || (c.kind != ctrlAnswer && c.kind != ctrlReply) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ad := a.m[key]
	if ad == nil {
		return false
	}
	for _, r := range ad.waiting {
		if r.Answer != nil {
			continue
		}
		if c.kind == ctrlReply && !awaitsText(r) || c.kind == ctrlAnswer && c.requestID != "" && r.Req.RequestID != c.requestID {
			continue
		}
		ad.early = append(ad.early, c)
		return true
	}
	return false
}

// awaitsText says whether message id, a reply in key's thread, answers a
// request of its adoption: a question or a plan waits (what the desk's
// setAwait says of a running turn), and id is not the message whose turn
// asked it. The accept path takes such a reply as an answer, not as a
// message to run.
func (a *adoptions) awaitsText(key, id string) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ad := a.m[key]
	if ad == nil || ad.item == id {
		return false
	}
	return slices.ContainsFunc(ad.waiting, func(r parkedRequest) bool { return r.Answer == nil && awaitsText(r) })
}

// awaitsText says whether a reply in the thread answers r: a question or
// a plan (permissions.setAwait).
func awaitsText(r parkedRequest) bool {
	return r.Req.ToolName == "AskUserQuestion" || r.Req.ToolName == "ExitPlanMode"
}

// heldForAdoption says whether control c, an answer no running turn
// waits on, was kept for an adopted request of the conversation of key.
func heldForAdoption(e *Set, key string, c control) bool {
	if !e.cluster.adopting.hold(key, c) {
		return false
	}
	e.log.Info("An answer came before the turn waits on the adopted request: held for it", "session_key", key, "request_id", c.requestID)
	return true
}

// Adopt reads, for message m of binding b given to this host again
// (deliveries > 1) and not queued or running here, the requests its turn
// waited on at the host before; those that name m are adopted: their ids
// registered now, so that a press on the old prompt is taken, and the
// turn waits on them before m runs (adoptWait). A failed read is logged:
// the message runs, and Claude asks again.
func (st *Stream) Adopt(ctx context.Context, b binding.Key, m platform.Message, deliveries int) {
	e := st.e
	key := Key(m.Target)
	if e.cluster.Approvals == nil || deliveries <= 1 || st.Holds(key, m.ID) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, approvalsTimeout)
	defer cancel()
	v, err := e.cluster.Approvals.Approvals(ctx, b, m.Target)
	if err != nil {
		e.log.Warn("Reading the requests a handed-over turn waited on failed; Claude asks again", "session_key", key,
			"message_id", m.ID, "error", err)
		return
	}
	if v == nil {
		return
	}
	var rec approvalsRecord
	if err := json.Unmarshal(v, &rec); err != nil || rec.Item != m.ID || len(rec.Requests) == 0 {
		return
	}
	for i, r := range rec.Requests {
		if r.Prompt.MessageID == "" {
			// Written before its prompt was posted: its buttons carry
			// its id all the same; its outcome is posted, not edited in.
			rec.Requests[i].ViaPrompter = false
		}
	}
	if err := format.Check("the requests a handed-over turn waited on", rec.Format); err != nil {
		e.log.Warn("The requests a handed-over turn waited on are of a newer format; Claude asks again", "session_key", key, "error", err)
		return
	}
	e.cluster.adopting.put(key, &adoption{item: m.ID, waiting: rec.Requests})
	e.mu.Lock()
	for _, r := range rec.Requests {
		if r.Answer == nil {
			e.requests[r.Req.RequestID] = key
		}
	}
	e.mu.Unlock()
	e.log.Info("Adopted the requests a handed-over turn waited on", "session_key", key, "message_id", m.ID,
		"requests", len(rec.Requests), "from_host", rec.Host)
}

// adoptWait waits, before a handed-over message runs, on the requests its
// turn waited on at the host before (Stream.Adopt), with no process
// running; the answers then answer the repeated requests (it.answered).
// False: the message does not run here now (stopped: done; the binding
// moved or this host stops: left for the next holder).
func adoptWait(tr *turnRunner, it *workItem) bool {
	ad := tr.e.cluster.adopting.get(tr.key, it.msg.ID)
	if ad == nil {
		return true
	}
	// The wait's desk first, then the adoption goes: a typed answer or a
	// reply accepted meanwhile is held by the one or taken by the other,
	// never run as a message (accept, hold).
	w := newParkedWait(tr, *it, ad.waiting)
	if t := tr.e.cluster.adopting.take(tr.key, it.msg.ID); t != nil {
		ad = t
	}
	tr.shared.adopted(ad.waiting)
	w.share = func(all []parkedRequest) { tr.shared.write(it.msg.ID, all) }
	ok := replayEarly(w, ad.early)
	if ok && len(w.perms.pending) > 0 {
		tr.chat.send(render.StillWaits(orDefault(w.perms.first(), "a permission request")))
	}
	var answered []parkedRequest
	if ok {
		answered, ok = w.run()
	}
	switch {
	case ok:
		it.answered = answered
		return true
	case w.stopped:
		tr.shared.clear()
	case tr.ho.takes(*it):
		tr.ho.leave(*it, "the binding moved or this host stops while the turn waits on an answer")
	}
	tr.agent.ReleaseIfIdle()
	return false
}

// travelling is what the record keeps of item's turn: the answers given
// in it, those given before that the repeated requests have not used yet,
// and the requests still waiting.
func travelling(ps *permissions, item string) []parkedRequest {
	out := make([]parkedRequest, 0, len(ps.given)+len(ps.preset)+len(ps.pending))
	for _, rs := range [][]parkedRequest{ps.given, ps.preset} {
		for _, r := range rs {
			r.Item = item
			out = append(out, r)
		}
	}
	for _, p := range ps.pending {
		out = append(out, parkedRequest{Item: item, Req: p.req, Prompt: p.prompt, ViaPrompter: p.viaPrompter, Asked: p.asked, Reminded: p.reminded})
	}
	return out
}

// replayEarly gives w the answers that reached the conversation before
// it waited; false when one ended the wait (a !stop cannot be held, so
// only answers come here).
func replayEarly(w *parkedWait, early []control) bool {
	for _, c := range early {
		if !w.control(c) {
			return false
		}
	}
	return true
}

// adoptedWaiting is what a recovered message's turn waits on when the
// conversation's record holds nothing of it: what it waited on at the
// host that served the binding after this one (Stream.Adopt). The
// adoption stays until adoptedEarly takes it, once the wait's desk takes
// replies (so that none falls between the two and runs as a message).
func adoptedWaiting(tr *turnRunner, it workItem) []parkedRequest {
	ad := tr.e.cluster.adopting.get(tr.key, it.msg.ID)
	if ad == nil {
		return nil
	}
	return ad.waiting
}

// adoptedEarly takes the adoption of a recovered message, and returns the
// answers that came before its turn waited.
func adoptedEarly(tr *turnRunner, it workItem) []control {
	ad := tr.e.cluster.adopting.take(tr.key, it.msg.ID)
	if ad == nil {
		return nil
	}
	tr.shared.adopted(ad.waiting)
	return ad.early
}
