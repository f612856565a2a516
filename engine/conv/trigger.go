package conv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/schedule"
	"github.com/cc-connect/cc-connect/trigger"
)

// Runs without a person (trigger.Submitter). A schedule or a webhook
// hands the engine a trigger.Run; Submit journals it like a chat message,
// under the run's id (so the one duplicate check, inbox.Seen.Claim, makes
// a resubmitted run run once), and returns only then. The rest happens on
// conversation goroutines:
//
//   - A run whose conversation has a thread already (the schedule names
//     one, a continuing schedule's earlier run started one, or the
//     platform has no threads and the conversation is the channel) is a
//     turn of that conversation: its header is posted there, then the
//     prompt runs.
//   - Otherwise the thread does not exist yet: it will hang under the
//     header. The run is journaled under the channel's provisional
//     conversation (thread runThreadPrefix), whose goroutine posts the
//     header in the channel, records the thread it started (threadBook,
//     persisted), and hands the turn to that thread's conversation,
//     journaled there under a derived id, before acknowledging its own
//     entry. A crash between two of these steps repeats at most the
//     header: the derived id is seen once it is journaled.
//
// People answer in the thread like in any conversation, with the same
// commands.

// runThreadPrefix is the thread of a channel's provisional conversation,
// where runs wait for their header: no platform thread id looks like it.
// One per channel, so that runs do not leave a journal file each.
const runThreadPrefix = "run:"

// handOffSuffix derives the id of a run's turn in its thread from the
// run's id.
const handOffSuffix = "#thread"

// Inbox kinds of runs: the run's details, JSON, after the prefix.
const (
	kindRun     = "run:"      // a run waiting for its header (provisional conversation)
	kindRunTurn = "run-turn:" // a run's turn in its conversation
)

// runInfo is what a journaled item knows of the run it came from.
type runInfo struct {
	ID           string `json:"id"`
	Header       string `json:"header,omitempty"` // "" once posted
	Conversation string `json:"conversation,omitempty"`
}

func runKind(it workItem) string {
	if it.run == nil {
		return ""
	}
	b, _ := json.Marshal(it.run)
	if it.kind == itemRun {
		return kindRun + string(b)
	}
	return kindRunTurn + string(b)
}

// runOfKind reads an entry kind written by runKind.
func runOfKind(kind string) (itemKind, *runInfo, bool) {
	k, rest := itemRun, strings.TrimPrefix(kind, kindRun)
	if rest == kind {
		k, rest = itemTurn, strings.TrimPrefix(kind, kindRunTurn)
		if rest == kind {
			return 0, nil, false
		}
	}
	var r runInfo
	if err := json.Unmarshal([]byte(rest), &r); err != nil || r.ID == "" {
		return 0, nil, false
	}
	return k, &r, true
}

// Schedules is the scheduler as the engine uses it: !schedules, and a
// wake-up when a run ends (schedule.Scheduler).
type Schedules interface {
	Chat(ctx context.Context, args string, who schedule.Asker) string
	Wake()
}

// runState is the engine's book of runs.
type runState struct {
	ready   chan struct{} // closed once recovery has reopened the journals
	threads *threadBook
	// headerWait is the first pause between tries to post a header
	// (headerBackoff; tests shorten it before Run).
	headerWait time.Duration

	log       *slog.Logger
	schedules func() Schedules // the scheduler to wake when a run ends

	mu      sync.Mutex
	working map[string]bool // run ids queued or running
}

func (rs *runState) init(stateDir string, log *slog.Logger, schedules func() Schedules) {
	rs.log, rs.schedules = log, schedules
	rs.ready = make(chan struct{})
	rs.threads = &threadBook{path: threadBookPath(stateDir)}
	rs.working = map[string]bool{}
	rs.headerWait = headerBackoff
}

func (rs *runState) runQueued(id string) {
	rs.mu.Lock()
	rs.working[id] = true
	rs.mu.Unlock()
}

// runFinished is called on the session goroutine when an item is done:
// a run's turn that ended frees its schedule.
func (rs *runState) runFinished(it workItem) {
	if it.run == nil || it.kind != itemTurn {
		return
	}
	rs.mu.Lock()
	delete(rs.working, it.run.ID)
	rs.mu.Unlock()
	s := rs.schedules()
	rs.log.Info("Run finished", "platform", it.msg.Target.Platform, "channel", it.msg.Target.Channel,
		"thread", it.msg.Target.Thread, "run_id", it.run.ID)
	if s != nil {
		s.Wake()
	}
}

// noteRecoveredRuns marks the runs a reopened journal holds as working.
func (rs *runState) noteRecoveredRuns(items []workItem) {
	for _, it := range items {
		if it.run != nil {
			rs.runQueued(it.run.ID)
		}
	}
}

// acceptRun claims its id and journals it into its conversation, as
// HandleMessage does a chat message; check, when set, may refuse it once
// the claim is held (it is not a duplicate).
func (e *Set) acceptRun(ctx context.Context, b binding.Binding, a platform.Adapter, it workItem, check func() error) error {
	claim, err := e.Claim(ctx, it.msg)
	switch {
	case errors.Is(err, inbox.ErrDuplicate):
		return trigger.ErrDuplicate
	case err != nil:
		return fmt.Errorf("journaling run %s: %w", it.run.ID, err)
	case claim != nil:
		defer claim.Release()
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	for {
		s, err := e.session(b, it.msg, a)
		if err != nil {
			return fmt.Errorf("journaling run %s: %w", it.run.ID, err)
		}
		res, err := s.acceptItem(it)
		switch {
		case errors.Is(err, errSessionClosed) && !e.isStopping():
			continue // it retired meanwhile: a new one takes it
		case err != nil:
			return fmt.Errorf("journaling run %s: %w", it.run.ID, err)
		case res.Status == platform.Duplicate:
			return trigger.ErrDuplicate
		case res.Status != platform.Queued:
			return fmt.Errorf("journaling run %s: not accepted (%s)", it.run.ID, res.Reason)
		}
		e.runs.runQueued(it.run.ID)
		return nil
	}
}

// Header posting: the pause after a failed try doubles from headerBackoff
// up to headerBackoffMax; the provisional conversation keeps trying until
// the platform takes it or cc-connect stops.
const (
	headerBackoff    = time.Second
	headerBackoffMax = time.Minute
)

// handOff runs a provisional conversation's item (session goroutine):
// the header in the channel, the thread it starts recorded, the turn
// journaled in that thread's conversation, then its own entry acked. While
// the platform refuses the header it tries again; when cc-connect stops
// first, the entry stays for the next start.
func (s *Conversation) handOff(it workItem) {
	defer s.mb.setState(stateIdle)
	run := it.run
	to := it.msg.Target
	to.Thread = ""
	thread, known := s.e.runs.threads.get(to.Platform, to.Channel, run.Conversation)
	header := platform.Target{}
	if !known {
		posted, err := s.postHeader(to, run.Header)
		if err != nil {
			s.log.Warn("Run's header not posted before the shutdown; the run stays journaled for the next start",
				"run_id", run.ID, "error", err)
			return
		}
		th, _ := s.chat.chat().(platform.Threader)
		if th == nil {
			s.log.Error("Platform lost its threads; the run stays journaled for the next start", "run_id", run.ID)
			return
		}
		thread, header = th.ThreadUnder(posted).Thread, posted
		if err := s.e.runs.threads.put(to.Platform, to.Channel, run.Conversation, thread); err != nil {
			// The run goes on; only a later run of the same
			// conversation starts a new thread.
			s.log.Error("Recording a run's thread failed", "run_id", run.ID, "thread", thread, "error", err)
		}
	}
	m := it.msg
	m.ID = run.ID + handOffSuffix
	m.Target = platform.Target{Platform: to.Platform, Channel: to.Channel, Thread: thread, MessageID: header.MessageID}
	turn := workItem{kind: itemTurn, msg: m, run: &runInfo{ID: run.ID, Conversation: run.Conversation}}
	b, ok := s.e.resolve(to.Platform, to.Channel)
	if !ok {
		b = s.binding
	}
	err := s.e.acceptRun(s.e.bg, b, s.chat.chat(), turn, nil)
	switch {
	case err == nil, errors.Is(err, trigger.ErrDuplicate):
		s.jr.ack(it, inbox.AckResult)
	case s.e.isStopping():
		// The next start hands it off again.
	default:
		s.log.Error("Handing a run to its thread failed; the run stays journaled for the next start", "run_id", run.ID, "error", err)
	}
}

// postHeader posts a run's header, trying again while the platform fails,
// until cc-connect stops.
func (s *Conversation) postHeader(to platform.Target, header string) (platform.Target, error) {
	wait := s.e.runs.headerWait
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(s.e.bg, sendTimeout)
		posted, err := s.chat.chat().Send(ctx, to, header)
		cancel()
		if err == nil {
			return posted, nil
		}
		s.log.Warn("Posting a run's header failed; trying again", "error", err, "try", try, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-s.e.stopping:
			t.Stop()
			return platform.Target{}, err
		case <-t.C:
		}
		wait = min(2*wait, headerBackoffMax)
	}
}

// runHeader posts the header of a run's turn in its conversation, before
// the turn (a run whose thread existed already), and points the turn's
// reactions at it. Not again for a turn a restart found started; one that
// had not started may get it twice (a crash after the post), never none.
func (tr *turnRunner) runHeader(it *workItem) {
	if it.run == nil || it.run.Header == "" || it.started || it.continuation {
		return
	}
	posted := tr.chat.send(it.run.Header)
	if it.msg.Target.MessageID == "" {
		it.msg.Target.MessageID = posted.MessageID
	}
}

func isRunKind(kind string) bool {
	return strings.HasPrefix(kind, kindRun) || strings.HasPrefix(kind, kindRunTurn)
}

// admit readies a turn before it runs (turnRunner.run): a run's header is
// posted, a turn over a spending cap is refused, and a worktree binding's
// conversation is moved into its worktree. False: the turn does not run
// (the conversation was told why, the message answered).
func (tr *turnRunner) admit(it *workItem) bool {
	tr.runHeader(it)
	if tr.refuseOverCap(*it) { // the caps: a reservation made, or the turn refused
		return false
	}
	if !tr.ensureWorktree() {
		tr.purse.releaseTurn() // the turn does not run
		tr.jr.ack(*it, inbox.AckResult)
		tr.mb.setState(stateIdle)
		return false
	}
	return true
}

// refuseOverCap reserves the turn's estimate before it starts (the
// purse), or refuses the turn when it does not fit under a cap: the
// conversation is told which cap and when it resets, and the message
// leaves the journal (it was answered).
func (tr *turnRunner) refuseOverCap(it workItem) bool {
	over := tr.purse.reserveTurn(it)
	if over == nil {
		return false
	}
	tr.log.Info("Turn refused: a spending cap is reached", "user_id", it.msg.UserID, "error", over)
	tr.chat.send(over.Text(tr.purse.now()))
	tr.jr.ack(it, inbox.AckResult)
	tr.mb.setState(stateIdle)
	return true
}

// Submit journals a run (trigger.Submitter): nil once it is on disk,
// trigger.ErrDuplicate when it was before, an error wrapping
// trigger.ErrRefused when it can never be taken; any other error means
// it was not journaled.
func (e *Set) Submit(ctx context.Context, r trigger.Run) error {
	if r.ID == "" || strings.TrimSpace(r.Prompt) == "" || r.Platform == "" || r.Channel == "" {
		return fmt.Errorf("%w: a run needs an id, a prompt, a platform and a channel", trigger.ErrRefused)
	}
	select {
	case <-e.runs.ready:
	case <-e.stopping:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	log := e.log.With("platform", r.Platform, "channel", r.Channel, "run_id", r.ID)
	b, ok := e.resolve(r.Platform, r.Channel)
	if !ok {
		return fmt.Errorf("%w: no binding routes %s/%s", trigger.ErrRefused, r.Platform, r.Channel)
	}
	a, ok := e.host.Chat(r.Platform)
	if !ok {
		return fmt.Errorf("%w: no platform named %q", trigger.ErrRefused, r.Platform)
	}
	to := platform.Target{Platform: r.Platform, Channel: r.Channel, Thread: r.Thread}
	// After the duplicate check: a run journaled before a crash is not
	// refused when it is submitted again.
	capped := func() error {
		over := e.spend.overCap(b, r.UserID)
		if over == nil {
			return nil
		}
		log.Info("Run refused: a spending cap is reached", "user_id", r.UserID, "error", over)
		e.host.Notify(a, to, fmt.Sprintf("%s did not run. %s", orDefault(r.Header, r.Name), over.Text(e.spend.now())))
		return fmt.Errorf("%w: %v", trigger.ErrRefused, over)
	}
	cv := orDefault(r.Conversation, r.ID)
	it := workItem{kind: itemTurn, run: &runInfo{ID: r.ID, Header: r.Header, Conversation: cv}}
	if r.Thread == "" {
		if _, threads := a.(platform.Threader); threads {
			if thread, ok := e.runs.threads.get(r.Platform, r.Channel, cv); ok {
				to.Thread = thread
				if err := e.runs.threads.used(r.Platform, r.Channel, cv); err != nil {
					log.Warn("Recording a run thread's use failed; it may be forgotten 90 days after it started", "thread", thread, "error", err)
				}
			} else {
				to.Thread, it.kind = runThreadPrefix, itemRun
			}
		}
	}
	it.msg = platform.Message{ID: r.ID, Target: to, UserID: r.UserID, UserName: orDefault(r.UserName, r.UserID),
		Text: r.Prompt, Mentioned: true, Received: r.At}
	err := e.acceptRun(ctx, b, a, it, capped)
	switch {
	case err == nil:
		log.Info("Run journaled", "kind", r.Kind, "name", r.Name, "session_key", Key(to))
		kind := activity.Scheduled
		if r.Kind == trigger.KindWebhook {
			kind = activity.Webhook
		}
		e.activity.Record(activity.Event{Time: e.now(), Kind: kind, Binding: BindingName(b), Conversation: Key(to), Platform: r.Platform,
			User: r.UserID, UserName: r.UserName, Input: r.Name, Text: r.Prompt})
	case errors.Is(err, trigger.ErrDuplicate):
		log.Debug("Run journaled before")
	}
	return err
}

// Working reports whether the run journaled under id is still queued or
// running.
func (e *Set) Working(id string) bool {
	e.runs.mu.Lock()
	defer e.runs.mu.Unlock()
	return e.runs.working[id]
}
