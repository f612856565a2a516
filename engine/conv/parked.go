package conv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// Approvals that outlive the process. A permission request, a question or
// a plan a turn waits on is written into the conversation's record as it
// is posted (parkedRequest: the request as the CLI sent it and where its
// prompt is), so that a restart or a kill -9 does not take it away: the
// turn's recovery (recovery.go) finds it, re-arms the prompt that is
// still in the thread (its buttons carry the same request id, and a reply
// in the thread still answers a question or a plan) and waits for its
// answer with no process running. The answer is written into the record
// too, then the turn resumes in its session with a continuation that
// tells Claude what was answered; when the resumed CLI makes the same
// request again (same tool, same input), the permission desk answers it
// with that answer instead of asking anyone again (permissions.preset).
// The timeout still applies, counted from when the prompt was first
// posted, and so does the reminder.

// parkedRequest is one request a turn waits on, as the record keeps it.
type parkedRequest struct {
	// Item is the message whose turn waits (its platform id): a record
	// saved late must not re-arm a request of an earlier turn.
	Item        string                      `json:"item"`
	Req         agentproc.PermissionRequest `json:"req"`
	Prompt      platform.Target             `json:"prompt"`
	ViaPrompter bool                        `json:"via_prompter,omitempty"`
	Asked       time.Time                   `json:"asked"`
	Reminded    bool                        `json:"reminded,omitempty"`
	// Answer is set once the request was answered while no process ran;
	// Outcome is how the prompt showed it ("allowed once by bob").
	Answer  *agentproc.PermissionDecision `json:"answer,omitempty"`
	Outcome string                        `json:"outcome,omitempty"`
	// Interrupted: cc-connect interrupted the CLI when it stopped
	// (parkAtShutdown), so what the transcript holds after the request
	// is that interruption, not a reply. Without it (a kill), the CLI
	// may have gone on and finished: its input closed denies a pending
	// request.
	Interrupted bool `json:"interrupted,omitempty"`
}

// encodeParked is the record's form of the requests (a string keeps
// Record comparable).
func encodeParked(ps []parkedRequest) string {
	if len(ps) == 0 {
		return ""
	}
	b, err := json.Marshal(ps)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeParked reads the record's requests; a field that does not parse
// (an older or hand-edited record) is as if nothing were parked, which is
// what a restart did before: the turn resumes and the CLI asks again.
func decodeParked(s string) []parkedRequest {
	if s == "" {
		return nil
	}
	var ps []parkedRequest
	if err := json.Unmarshal([]byte(s), &ps); err != nil {
		return nil
	}
	return ps
}

// parked is the requests of the running turn as the record keeps them.
func (ps *permissions) parked(item string) string {
	out := make([]parkedRequest, 0, len(ps.pending))
	for _, p := range ps.pending {
		if p.prompt.MessageID == "" && !p.viaPrompter {
			continue // never shown: nothing in the thread to answer
		}
		out = append(out, parkedRequest{Item: item, Req: p.req, Prompt: p.prompt, ViaPrompter: p.viaPrompter, Asked: p.asked, Reminded: p.reminded})
	}
	return encodeParked(out)
}

// repark takes back a request that was waiting when the process went: its
// prompt is in the thread already, so nothing is posted; presses and
// replies reach this desk again.
func (ps *permissions) repark(r parkedRequest) {
	p := &pendingPerm{req: r.Req, prompt: r.Prompt, viaPrompter: r.ViaPrompter, asked: r.Asked, reminded: r.Reminded}
	if p.asked.IsZero() {
		p.asked = time.Now()
	}
	if ps.timeout > 0 {
		p.deadline = p.asked.Add(ps.timeout)
	}
	if r.Req.ToolName == "AskUserQuestion" {
		if qs, err := newQuestionSet(r.Req.Input); err == nil {
			p.qs = qs
		}
	}
	p.plan = r.Req.ToolName == "ExitPlanMode"
	ps.pending = append(ps.pending, p)
	ps.register(r.Req.RequestID)
	ps.setWaiting(true)
	ps.arm()
	ps.setAwait()
}

// presetAnswer answers a request the resumed CLI makes again with the
// answer it got while no process ran, and reports whether it did.
func (ps *permissions) presetAnswer(proc responder, req agentproc.PermissionRequest) bool {
	for i, a := range ps.preset {
		if a.Req.ToolName != req.ToolName || !sameInput(a.Req.Input, req.Input) {
			continue
		}
		ps.preset = append(ps.preset[:i], ps.preset[i+1:]...)
		ps.log.Info("Permission answered with the answer given while the agent was not running", "request_id", req.RequestID, "tool", req.ToolName, "decision", a.Answer.Behavior.String())
		if err := ps.respond(proc, req, *a.Answer); err != nil {
			ps.log.Error("Answering the permission request failed", "request_id", req.RequestID, "error", err)
		}
		return true
	}
	return false
}

// compactJSON is raw on one line.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return strings.Join(strings.Fields(string(raw)), " ")
	}
	return b.String()
}

// sameInput compares two tool inputs as JSON values.
func sameInput(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return bytes.Equal(a, b)
	}
	if bytes.Equal(x.Bytes(), y.Bytes()) {
		return true
	}
	var u, v any
	if json.Unmarshal(a, &u) != nil || json.Unmarshal(b, &v) != nil {
		return false
	}
	ub, _ := json.Marshal(u) // map keys sorted
	vb, _ := json.Marshal(v)
	return bytes.Equal(ub, vb)
}

// errParked ends a turn that waits only on people when cc-connect stops:
// its requests stay in the record and its message in the journal, for
// the next start to wait on (recovery.go).
var errParked = errors.New("waiting on an answer at shutdown")

// park lets go of the requests without closing their prompts, when
// cc-connect stops while the turn waits on them: it reports whether
// there were any, each shown in the thread (what a restart can keep).
func (ps *permissions) park() bool {
	if len(ps.pending) == 0 {
		return false
	}
	for _, p := range ps.pending {
		if p.prompt.MessageID == "" && !p.viaPrompter {
			return false
		}
	}
	for _, p := range ps.pending {
		ps.unregister(p.req.RequestID)
	}
	ps.pending = nil
	ps.stopTimers()
	return true
}

// parksAtShutdown says whether the turn of it, waiting only on people
// when cc-connect stops, keeps its requests here for this host's restart
// (parkAtShutdown): on one host; on a cluster binding only a scheduled or
// webhook run's, which stays on its host (approvals.go: it has no stream
// delivery to hand over) — a message's turn goes to the binding's next
// holder instead.
func parksAtShutdown(tr *turnRunner, it workItem) bool {
	return !tr.e.cluster.clustered(it.msg.Target.Platform) || it.run != nil
}

// parkAtShutdown ends a turn whose requests were parked as cc-connect
// stops: the CLI is interrupted, so that closing its input does not
// answer them (stdin EOF denies a pending request, and Claude would go on
// with the denial); the restart resumes the turn with the real answer.
func parkAtShutdown(tr *turnRunner, t *turn, proc procs.Process) outcome {
	tr.log.Info("Shutting down while the turn waits on an answer: the request stays open for after the restart", "session_id", tr.rb.sessionID())
	tr.rb.update(func(r *Record) {
		ps := decodeParked(r.Parked)
		for i := range ps {
			ps[i].Interrupted = true
		}
		r.Parked = encodeParked(ps)
	})
	tr.interrupt(proc)
	t.live.stop()
	return outcome{err: errParked, stderr: proc.StderrTail()}
}

// standIn takes the answers of requests that wait while no process runs.
type standIn struct {
	answers map[string]agentproc.PermissionDecision
}

func (s *standIn) RespondPermission(_ context.Context, requestID string, d agentproc.PermissionDecision) error {
	if s.answers == nil {
		s.answers = map[string]agentproc.PermissionDecision{}
	}
	s.answers[requestID] = d
	return nil
}

// parkedWait is a turn waiting, with no process running, for the answers
// of the requests it waited on when its process went (recovery.go): the
// desk re-armed on the prompts in the thread, a stand-in taking the
// answers, and the record keeping them as they come.
type parkedWait struct {
	tr       *turnRunner
	it       workItem
	waiting  []parkedRequest
	perms    *permissions
	si       *standIn
	answered []parkedRequest
	// share, when set, keeps the requests in the cluster as the record
	// keeps them (approvals.go); stopped: a !stop ended the wait.
	share   func(all []parkedRequest)
	stopped bool
}

func newParkedWait(tr *turnRunner, it workItem, waiting []parkedRequest) *parkedWait {
	w := &parkedWait{tr: tr, it: it, waiting: waiting, perms: tr.newPermissions(), si: &standIn{}}
	w.perms.remindRing = func(what string) { tr.team.ringApprovers(it.msg, what) }
	for _, r := range waiting {
		if r.Answer != nil {
			w.answered = append(w.answered, r)
			continue
		}
		w.perms.repark(r)
	}
	return w
}

// run serves the controls that come while it waits and returns the
// requests answered, or false when the turn does not go on here: stopped
// (the message is done), the binding moved, or cc-connect stopping (the
// record keeps them for the next start).
func (w *parkedWait) run() ([]parkedRequest, bool) {
	tr, perms := w.tr, w.perms
	defer perms.stopTimers()
	stopping := tr.e.stopping
	for len(perms.pending) > 0 {
		select {
		case <-tr.mb.ctrl:
			for c, ok := tr.mb.takeControl(); ok; c, ok = tr.mb.takeControl() {
				tr.mb.counted(-1)
				if !w.control(c) {
					return nil, false
				}
			}
		case <-timerC(perms.timer):
			perms.expire(w.si)
			w.save()
		case <-timerC(perms.remindTimer):
			perms.remind()
			w.save()
		case <-stopping:
			return nil, false
		}
	}
	return w.answered, true
}

// control handles one control; false ends the wait without the turn.
func (w *parkedWait) control(c control) bool {
	tr, perms := w.tr, w.perms
	switch c.kind {
	case ctrlAnswer, ctrlReply:
		perms.answer(w.si, c)
		w.save()
	case ctrlStop:
		tr.stopShell(c.to)
		perms.endAll("stopped")
		tr.rb.update(func(r *Record) { r.Parked, r.PendingPermission = "", "" })
		tr.chat.sendTo(c.to, "Stopped: the turn that waited for an answer is over. The session is kept.")
		tr.jr.ack(w.it, inbox.AckCancel)
		w.stopped = true
		return false
	case ctrlFence:
		perms.endAll("the conversation moved")
		return false
	case ctrlReap:
		// no process to reap
	default:
		tr.other(c)
	}
	return true
}

// save takes the stand-in's answers into the record with what still waits.
func (w *parkedWait) save() {
	for id, d := range w.si.answers {
		for _, r := range w.waiting {
			if r.Req.RequestID == id {
				d := d
				r.Answer, r.Outcome = &d, outcomeOf(d)
				w.answered = append(w.answered, r)
			}
		}
	}
	w.si.answers = nil
	all := append(append([]parkedRequest(nil), w.answered...), decodeParked(w.perms.parked(w.it.msg.ID))...)
	first := w.perms.first()
	w.tr.rb.update(func(r *Record) { r.Parked, r.PendingPermission = encodeParked(all), first })
	if w.share != nil {
		w.share(all)
	}
}

// outcomeOf says what an answer was, for the continuation.
func outcomeOf(d agentproc.PermissionDecision) string {
	switch d.Behavior {
	case agentproc.Allow, agentproc.AlwaysAllow:
		return describe(d.Behavior)
	default:
		return "denied: " + d.Message
	}
}

// answersNote tells Claude, in the continuation, what was answered while
// its process was not running, so that it makes the request again.
func answersNote(answered []parkedRequest) string {
	if len(answered) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nWhile cc-connect restarted, the person answered what you were waiting on:")
	for _, r := range answered {
		what := render.ToolSummary(r.Req.ToolName, r.Req.Input)
		// The exact input, for a question and a plan too: the resumed
		// CLI may not show the call (its transcript drops a call without
		// a result), and only the same input gets the answer
		// (permissions.presetAnswer).
		switch {
		case r.Req.ToolName == "AskUserQuestion" && r.Answer.Behavior == agentproc.Allow:
			fmt.Fprintf(&b, "\n- your questions were answered: make the same call again to receive the answers (tool %s, input %s).", r.Req.ToolName, compactJSON(r.Req.Input))
		case r.Req.ToolName == "ExitPlanMode" && r.Answer.Behavior == agentproc.Allow:
			fmt.Fprintf(&b, "\n- your plan was approved: make the same call again to proceed (tool %s, input %s).", r.Req.ToolName, compactJSON(r.Req.Input))
		case r.Answer.Behavior == agentproc.Allow || r.Answer.Behavior == agentproc.AlwaysAllow:
			fmt.Fprintf(&b, "\n- %s was %s: make the same call again to run it (tool %s, input %s).", what, describe(r.Answer.Behavior), r.Req.ToolName, compactJSON(r.Req.Input))
		default:
			fmt.Fprintf(&b, "\n- %s was denied: %s", what, r.Answer.Message)
		}
	}
	return b.String()
}
