package conv

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/platform"
)

// A conversation's context across hosts. Claude Code keeps what was said
// in its transcript, on the disk of the host that ran the turn. In a
// cluster the holder of a binding replicates, after each turn it answers,
// the conversation's session id and transcript (replica.replicate); a
// host that takes a conversation over with no record of its own writes
// the transcript back where its CLI looks for it and records the session
// id (Stream.Restore), so that the next turn resumes the same Claude
// session with its history. Where that cannot be (the workspace is not
// at the same path here, the transcript was over the limit, the record
// unreadable) the conversation starts a new session, and the thread is
// told why.

// Contexts is where a cluster keeps its conversations' context. The
// cluster implements it (cluster.Node through clusterlink); a host alone
// has none.
type Contexts interface {
	// PutContext stores the context of the conversation at to in binding
	// b; its transcript's first unchanged bytes are what this host stored
	// last time. A transcript over Limit is given as nil with its Size:
	// the record then says it is not replicated. It returns the bytes it
	// sent.
	PutContext(ctx context.Context, b binding.Key, to platform.Target, c Context, unchanged int64) (sent int, err error)
	// GetContext reads it back; ErrNoContext when none is stored.
	GetContext(ctx context.Context, b binding.Key, to platform.Target) (Context, error)
	// Limit is the largest transcript stored.
	Limit() int64
}

// Context is a conversation's replicated context.
type Context struct {
	SessionID string
	Workspace string
	// Host is the host that replicated it: the one that answered the
	// conversation last.
	Host       string
	Transcript []byte
	Size       int64 // the transcript's size, also when it is not stored
	// NotReplicated says why the transcript is not stored ("" when it is).
	NotReplicated string
}

// ErrNoContext: no context of the conversation is replicated.
var ErrNoContext = errors.New("no replicated context")

// contextTimeout bounds one replication or read of a context (up to the
// limit's megabytes).
const contextTimeout = 30 * time.Second

// replica replicates one conversation's context; it lives in the
// conversation's goroutine (turnRunner), so it needs no lock.
type replica struct {
	contexts Contexts
	b        binding.Key
	to       platform.Target
	log      *slog.Logger
	// sid and size are what this host stored last: the parts of sid's
	// transcript below size are not sent again.
	sid  string
	size int64
}

// replicate stores the conversation's context after a turn it answered:
// session sid, run in ws. A failure is logged: the conversation goes on
// here, and would start afresh on another host.
func (r *replica) replicate(bg context.Context, tx procs.Transcripts, sid, ws string) {
	if r == nil || sid == "" {
		return
	}
	path, size, err := tx.Find(sid)
	if err != nil {
		r.log.Warn("Replicating the conversation's context failed: its transcript was not found", "session_id", sid, "error", err)
		return
	}
	c := Context{SessionID: sid, Workspace: ws, Size: size}
	if size <= r.contexts.Limit() {
		if c.Transcript, err = readUpTo(path, r.contexts.Limit()); err != nil {
			r.log.Warn("Replicating the conversation's context failed", "session_id", sid, "error", err)
			return
		}
		c.Size = int64(len(c.Transcript))
	}
	var unchanged int64
	if r.sid == sid && c.Transcript != nil && c.Size >= r.size {
		unchanged = r.size
	}
	ctx, cancel := context.WithTimeout(bg, contextTimeout)
	defer cancel()
	sent, err := r.contexts.PutContext(ctx, r.b, r.to, c, unchanged)
	if err != nil {
		r.sid = ""
		r.log.Warn("Replicating the conversation's context failed; another host taking it over would start a new session",
			"session_id", sid, "error", err)
		return
	}
	r.sid, r.size = sid, c.Size
	if c.Transcript == nil {
		r.sid = ""
	}
	r.log.Debug("Replicated the conversation's context", "session_id", sid, "transcript_bytes", c.Size, "sent_bytes", sent)
}

// readUpTo reads the file at path, refusing one over limit bytes.
func readUpTo(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("transcript %s grew over %d bytes", path, limit)
	}
	return b, nil
}

// Restore gives a conversation at to in binding b the context another
// host replicated: its transcript written where this host's CLI looks for
// it, and a record naming its session, which the next turn resumes.
// restored says it did; otherwise why, when not "", says why the
// replicated context could not be used (the conversation then starts a
// new session, and the thread is told).
//
// A conversation this host has a record of (it served it before) keeps
// its own session unless another host answered it since: the replicated
// context is another host's and holds what this host's transcript of
// that session does not (behind). Then it is restored over this host's
// record the same way; for a conversation in memory, whose process holds
// the older context and may still write to that session's transcript,
// restored says it will be: the conversation's goroutine places it
// between turns, once that process has exited (placeRestored), and tells
// the thread if it then cannot. When it cannot be (the workspace is not
// at the same path here, say), the conversation goes on in its own
// session, as before: why is "" then.
func (st *Stream) Restore(ctx context.Context, b binding.Binding, to platform.Target) (restored bool, why string) {
	e := st.e
	if e.cluster.Contexts == nil {
		return false, ""
	}
	key := Key(to)
	known := e.Has(key)
	log := e.log.With("platform", to.Platform, "channel", to.Channel, "thread", to.Thread, "session_key", key)
	ctx, cancel := context.WithTimeout(ctx, contextTimeout)
	defer cancel()
	c, err := e.cluster.Contexts.GetContext(ctx, b.Key(), to)
	if known {
		if err != nil && !errors.Is(err, ErrNoContext) {
			log.Warn("Reading the conversation's replicated context failed; it goes on in this host's own session", "error", err)
		}
		if err != nil || !st.behind(c) {
			return false, ""
		}
		restored, why = st.restore(log, b, to, c, true)
		if why != "" {
			log.Warn("Another host answered the conversation since this host did, but its replicated context cannot be used here; "+
				"it goes on in this host's own session", "answered_by", c.Host, "reason", why)
		}
		return restored, ""
	}
	switch {
	case errors.Is(err, ErrNoContext):
		return false, ""
	case err != nil:
		log.Warn("Reading the conversation's replicated context failed; it starts a new session", "error", err)
		return false, "its history could not be read from the cluster"
	}
	return st.restore(log, b, to, c, false) // which says why a context cannot be used
}

// behind says whether c, the replicated context of a conversation this
// host has a record of, is newer than this host's: another host wrote it,
// and this host's transcript of its session does not already begin with
// it (a host that restored it and answered since, its own copy not
// replicated yet, is ahead of it, not behind).
func (st *Stream) behind(c Context) bool {
	e := st.e
	if c.Host == "" || c.Host == e.cluster.Host {
		return false
	}
	if c.NotReplicated != "" {
		return true // restore says why it cannot be used
	}
	path, _, err := e.host.Transcripts().Find(c.SessionID)
	if err != nil {
		return true
	}
	own, err := readUpTo(path, max(e.cluster.Contexts.Limit(), int64(len(c.Transcript))))
	return err != nil || !bytes.HasPrefix(own, c.Transcript)
}

// restore writes c where this host's CLI looks for it and records its
// session for the conversation at to: over this host's own record when
// known; a known conversation in memory is handed c to place itself.
func (st *Stream) restore(log *slog.Logger, b binding.Binding, to platform.Target, c Context, known bool) (restored bool, why string) {
	e := st.e
	key := Key(to)
	switch {
	case c.NotReplicated != "":
		return false, "its history was not replicated: " + c.NotReplicated
	case c.Workspace != b.Workspace:
		return false, fmt.Sprintf("it ran in the workspace %s, which this channel does not use on this host", c.Workspace)
	}
	if fi, err := os.Stat(c.Workspace); err != nil || !fi.IsDir() {
		return false, fmt.Sprintf("its workspace %s does not exist on this host", c.Workspace)
	}
	if s := e.live(key); known && s != nil {
		// Its process may still write to this session's transcript (a
		// turn ending, one the CLI starts by itself when a background
		// task ends): its goroutine places the transcript once no turn
		// runs and that process has exited, then records the session,
		// before the message it runs next (placeRestored).
		if !s.mb.pushControl(control{kind: ctrlRestored, restore: &c, to: s.to}) {
			return false, "its conversation on this host is stuck"
		}
		log.Info("Taking over the conversation with its replicated context, over this host's older record, once its process has exited",
			"session_id", c.SessionID, "transcript_bytes", len(c.Transcript), "answered_by", c.Host)
		return true, ""
	}
	if err := e.host.Transcripts().Place(c.Workspace, c.SessionID, c.Transcript, known); err != nil {
		log.Warn("Writing the conversation's replicated transcript failed; it starts a new session", "session_id", c.SessionID, "error", err)
		return false, "its history could not be written on this host"
	}
	rec := Record{Key: key, Platform: to.Platform, Channel: to.Channel, Thread: to.Thread}
	if known {
		own, ok, err := e.store.Load(key, e.now())
		if err == nil && ok {
			rec = own
		}
	}
	rec.Workspace, rec.SessionID, rec.NewSessionID, rec.LastActivity = c.Workspace, c.SessionID, "", e.now()
	if err := e.store.Save(rec); err != nil {
		log.Warn("Recording the conversation's replicated session failed; it starts a new session", "session_id", c.SessionID, "error", err)
		return false, "its session could not be recorded on this host"
	}
	log.Info("Took over the conversation with its replicated context", "session_id", c.SessionID, "transcript_bytes", len(c.Transcript),
		"answered_by", c.Host, "over_own_record", known)
	return true, ""
}

// placeRestored places the context another host replicated, which
// Stream.Restore took over for this live conversation (tr.restoring), on
// the conversation's goroutine while no turn runs: first the process that
// holds the older context is closed and waited for (it writes to the same
// session's transcript), then the transcript is written over this host's
// and the record names its session, so the next turn resumes it. The
// thread was told the conversation continues with its history; when that
// cannot be, it is told it goes on in this host's own session. It needs
// only the conversation's parts: a function, not one more method.
func placeRestored(s *Conversation) {
	c := *s.tr.restoring
	s.tr.restoring = nil
	if proc := s.agent.Live(); proc != nil {
		s.log.Info("Closing the agent process: another host answered the conversation since, and its context was restored",
			"session_id", s.rb.sessionID(), "restored_session_id", c.SessionID)
		s.agent.Close()
		select {
		case <-proc.Done():
		default:
			s.log.Error("The replicated context is not placed: the process holding the older context outlived its close, and may still write",
				"session_id", c.SessionID, "pid", proc.Pid())
			restoreFailed(s, c, "the process that held its older context on this host did not exit")
			return
		}
	}
	if err := s.e.host.Transcripts().Place(c.Workspace, c.SessionID, c.Transcript, true); err != nil {
		s.log.Warn("Writing the conversation's replicated transcript failed; it goes on in this host's own session",
			"session_id", c.SessionID, "error", err)
		restoreFailed(s, c, "its history could not be written on this host")
		return
	}
	s.rb.update(func(r *Record) { r.SessionID, r.NewSessionID = c.SessionID, "" })
	if s.tr.rep != nil {
		// What this host replicated last is not the start of this
		// transcript: the next replication sends it whole.
		s.tr.rep.sid = ""
	}
	s.log.Info("Took over the conversation with its replicated context, over this host's older record", "session_id", c.SessionID,
		"transcript_bytes", len(c.Transcript), "answered_by", c.Host)
}

// restoreFailed tells the thread, told before that the conversation moved
// here with its history, that it goes on without what host c.Host
// answered: in this host's own session.
func restoreFailed(s *Conversation, c Context, why string) {
	host := cmp.Or(c.Host, "?")
	s.chat.send(fmt.Sprintf("This conversation's history from host %s could not be used here, because %s: "+
		"it continues in this host's own Claude session, which does not hold what was said on host %s.", host, why, host))
}
