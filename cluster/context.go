package cluster

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/format"
)

// A conversation's context. Claude Code keeps a conversation's history in
// its transcript, on the disk of the host that ran it; a standby that
// takes the conversation over would start a new Claude session without
// it. So after each turn it answers, the binding's holder stores the
// conversation's session id and transcript in the context bucket
// (names.ContextBucket), and a host that takes the conversation over
// reads them back. The transcript only grows, so it is stored in parts of
// ContextPart bytes (each gzipped) and a turn rewrites only the parts
// from the first that changed; the head, written last, names the parts
// and the transcript's digest, so a reader never takes a half-written
// transcript for a whole one.

// ContextLimit is the largest transcript replicated. A larger one is not
// (its head says so), and the conversation starts afresh on another host.
const ContextLimit = 16 << 20

// ContextPart is the size of one part of a replicated transcript, before
// compression.
const ContextPart = 256 << 10

// ContextHead is a conversation's replicated context record.
type ContextHead struct {
	Format    int       `json:"format"`
	Host      string    `json:"host"`
	At        time.Time `json:"at"`
	SessionID string    `json:"session_id"`
	Workspace string    `json:"workspace"`
	Size      int64     `json:"size"`
	Parts     int       `json:"parts"`
	SHA256    string    `json:"sha256,omitempty"`
	// NotReplicated says why the transcript is not stored ("" when it is).
	NotReplicated string `json:"not_replicated,omitempty"`
}

// PutContext stores conversation's context in binding b: its session id,
// its workspace and its transcript, of which the first unchanged bytes
// are the same as this host stored last time (their parts are not sent
// again). A transcript of size over ContextLimit is not stored (given as
// nil); its head says so. It returns the bytes it sent.
func (n *Node) PutContext(ctx context.Context, b names.Binding, conversation, sessionID, workspace string, transcript []byte, size, unchanged int64) (int, error) {
	h := ContextHead{Format: format.Written(), Host: n.s.Host, At: time.Now().UTC(), SessionID: sessionID,
		Workspace: workspace, Size: size}
	sent := 0
	if size > ContextLimit || int64(len(transcript)) != size {
		h.NotReplicated = fmt.Sprintf("its transcript (%d MiB) is over the %d MiB limit", (size+1<<20-1)>>20, ContextLimit>>20)
	} else {
		sum := sha256.Sum256(transcript)
		h.SHA256 = hex.EncodeToString(sum[:])
		h.Parts = (len(transcript) + ContextPart - 1) / ContextPart
		for i := int(max(unchanged, 0) / ContextPart); i < h.Parts; i++ {
			part := transcript[i*ContextPart : min((i+1)*ContextPart, len(transcript))]
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			if _, err := zw.Write(part); err != nil {
				return sent, err
			}
			if err := zw.Close(); err != nil {
				return sent, err
			}
			if err := n.putContextKey(ctx, names.ContextPart(b, conversation, i), z.Bytes()); err != nil {
				return sent, fmt.Errorf("replicating part %d of the transcript of conversation %s: %w", i, conversation, err)
			}
			sent += z.Len()
		}
	}
	head, err := json.Marshal(h)
	if err != nil {
		return sent, err
	}
	if err := n.putContextKey(ctx, names.ContextHead(b, conversation), head); err != nil {
		return sent, fmt.Errorf("replicating the context of conversation %s: %w", conversation, err)
	}
	return sent + len(head), n.noteContext(ctx, b, conversation, h)
}

// putContextKey writes one key of the context bucket; it expires with
// the records of what was answered.
func (n *Node) putContextKey(ctx context.Context, key string, value []byte) error {
	_, err := putContextKey(ctx, n.js, n.s.Names, key, value)
	return err
}

// putContextKey writes key of the context bucket through js: every key of
// that bucket (a context's parts and head, a reply being posted, the
// requests a turn waits on) expires with the records of what was answered.
func putContextKey(ctx context.Context, js jetstream.JetStream, nm names.Names, key string, value []byte) (*jetstream.PubAck, error) {
	return js.Publish(ctx, nm.ContextKVKey(key), value, jetstream.WithMsgTTL(AnsweredTTL))
}

// noteContext adds to the conversation's record (Served) whether its
// context is replicated, for status.
func (n *Node) noteContext(ctx context.Context, b names.Binding, conversation string, h ContextHead) error {
	rec := Served{Host: n.s.Host, At: h.At, Context: "yes"}
	if h.NotReplicated != "" {
		rec.Context = "no (" + h.NotReplicated + ")"
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	subject := n.s.Names.KVKey(names.Served(b, conversation))
	_, err = n.js.Publish(ctx, subject, v, jetstream.WithMsgTTL(AnsweredTTL))
	if isTTLRefused(err) {
		_, err = n.js.Publish(ctx, subject, v)
	}
	if err != nil {
		return fmt.Errorf("recording that the context of conversation %s is replicated: %w", conversation, err)
	}
	return nil
}

// ErrNoContext: no context of the conversation is replicated.
var ErrNoContext = errors.New("no replicated context")

// GetContext reads conversation's context in binding b: its head, and its
// transcript when the head says it is stored. ErrNoContext when none is.
func (n *Node) GetContext(ctx context.Context, b names.Binding, conversation string) (ContextHead, []byte, error) {
	var h ContextHead
	e, err := n.ctxKV.Get(ctx, names.ContextHead(b, conversation))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return h, nil, ErrNoContext
	case err != nil:
		return h, nil, fmt.Errorf("reading the context of conversation %s: %w", conversation, err)
	}
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		return h, nil, fmt.Errorf("reading the context of conversation %s: %w", conversation, err)
	}
	if err := format.Check("the replicated context of conversation "+conversation, h.Format); err != nil {
		return h, nil, err
	}
	if h.NotReplicated != "" {
		return h, nil, nil
	}
	out := make([]byte, 0, h.Size)
	for i := range h.Parts {
		e, err := n.ctxKV.Get(ctx, names.ContextPart(b, conversation, i))
		if err != nil {
			return h, nil, fmt.Errorf("reading part %d of the transcript of conversation %s: %w", i, conversation, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(e.Value()))
		if err != nil {
			return h, nil, fmt.Errorf("reading part %d of the transcript of conversation %s: %w", i, conversation, err)
		}
		part, err := io.ReadAll(io.LimitReader(zr, ContextPart+1))
		if err != nil {
			return h, nil, fmt.Errorf("reading part %d of the transcript of conversation %s: %w", i, conversation, err)
		}
		out = append(out, part...)
	}
	sum := sha256.Sum256(out)
	if int64(len(out)) != h.Size || hex.EncodeToString(sum[:]) != h.SHA256 {
		return h, nil, fmt.Errorf("the replicated transcript of conversation %s does not match its record (%d bytes read, %d recorded)",
			conversation, len(out), h.Size)
	}
	return h, out, nil
}

// ContextBucketConfig is the context bucket's configuration.
func ContextBucketConfig(n names.Names, replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      n.ContextBucket(),
		Description: "cc-connect cluster: the conversations' Claude session ids and transcripts",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		// A part is ContextPart bytes before compression; gzip adds a few
		// bytes to what does not compress.
		MaxValueSize:   ContextPart + 4<<10,
		LimitMarkerTTL: time.Minute,
	}
}
