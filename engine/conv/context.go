package conv

import (
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
	SessionID  string
	Workspace  string
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

// Restore gives a conversation new to this host, at to in binding b, the
// context another host replicated: its transcript written where this
// host's CLI looks for it, and a record naming its session, which the
// next turn resumes. restored says it did; otherwise why, when not "",
// says why the replicated context could not be used (the conversation
// then starts a new session, and the thread is told).
func (st *Stream) Restore(ctx context.Context, b binding.Binding, to platform.Target) (restored bool, why string) {
	e := st.e
	if e.cluster.Contexts == nil {
		return false, ""
	}
	key := Key(to)
	log := e.log.With("platform", to.Platform, "channel", to.Channel, "thread", to.Thread, "session_key", key)
	ctx, cancel := context.WithTimeout(ctx, contextTimeout)
	defer cancel()
	c, err := e.cluster.Contexts.GetContext(ctx, b.Key(), to)
	switch {
	case errors.Is(err, ErrNoContext):
		return false, ""
	case err != nil:
		log.Warn("Reading the conversation's replicated context failed; it starts a new session", "error", err)
		return false, "its history could not be read from the cluster"
	case c.NotReplicated != "":
		return false, "its history was not replicated: " + c.NotReplicated
	case c.Workspace != b.Workspace:
		return false, fmt.Sprintf("it ran in the workspace %s, which this channel does not use on this host", c.Workspace)
	}
	if fi, err := os.Stat(c.Workspace); err != nil || !fi.IsDir() {
		return false, fmt.Sprintf("its workspace %s does not exist on this host", c.Workspace)
	}
	if err := e.host.Transcripts().Place(c.Workspace, c.SessionID, c.Transcript); err != nil {
		log.Warn("Writing the conversation's replicated transcript failed; it starts a new session", "session_id", c.SessionID, "error", err)
		return false, "its history could not be written on this host"
	}
	rec := Record{Key: key, Platform: to.Platform, Channel: to.Channel, Thread: to.Thread, Workspace: c.Workspace,
		SessionID: c.SessionID, LastActivity: e.now()}
	if err := e.store.Save(rec); err != nil {
		log.Warn("Recording the conversation's replicated session failed; it starts a new session", "session_id", c.SessionID, "error", err)
		return false, "its session could not be recorded on this host"
	}
	log.Info("Took over the conversation with its replicated context", "session_id", c.SessionID, "transcript_bytes", len(c.Transcript))
	return true, ""
}
