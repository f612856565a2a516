package inbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cc-connect/cc-connect/format"
)

// The journal's on-disk format: one JSON record a line, appended, never
// rewritten in place.
//
//	{"op":"add","entry":{…}}               a message accepted (fsynced)
//	{"op":"seen","id":…,"platform":…,"at":…} a message id accepted without an entry (a command)
//	{"op":"start","id":…,"uuid":…}         the message was written to claude, carrying uuid
//	{"op":"stream","id":…,"msgs":[…]}      the messages its reply streams into
//	{"op":"reply","id":…,"msgs":[…],"tail":…} its reply was being posted (into msgs, when streamed; tail after the agent's text)
//	{"op":"part","id":…,"part":n}          part n of its reply was posted
//	{"op":"ack","id":…,"reason":…}         it reached a durable end
//
// cc-connect up to this format wrote the entry's target with the Go field
// names of platform.Target ({"target":{"Platform":…,"Channel":…}}), no
// accepted time and no uuid in the entry (it chose the uuid at the start);
// such journals are still read (legacyTarget), so that what a previous
// version accepted replays after an upgrade.

// Each record carries the format it was written in ("v", package
// format); a journal holding a newer one than this build reads is refused
// whole (format.NewerError), never half read.

// diskRecord is one journal line.
type diskRecord struct {
	Op       string     `json:"op"`
	Entry    *diskEntry `json:"entry,omitempty"`
	ID       string     `json:"id,omitempty"`
	Platform string     `json:"platform,omitempty"` // seen
	At       *time.Time `json:"at,omitempty"`       // seen
	UUID     string     `json:"uuid,omitempty"`     // start
	Into     string     `json:"into,omitempty"`     // start: MarkSteered
	In       bool       `json:"in,omitempty"`       // start: MarkTakenIn
	Msgs     []Posted   `json:"msgs,omitempty"`     // stream, reply
	Part     *int       `json:"part,omitempty"`     // part
	Tail     string     `json:"tail,omitempty"`     // reply
	Settled  bool       `json:"settled,omitempty"`  // reply: MarkSettled
	// Replicated: the reply was written to the cluster before the
	// settlement (reply: MarkSettled).
	Replicated bool      `json:"replicated,omitempty"`
	Reason     AckReason `json:"reason,omitempty"`
	// V is the format the record was written in (format.Written; absent
	// in journals written before formats were versioned, which are
	// format 1). Last, so that every record still starts with its op.
	V int `json:"v,omitempty"`
}

const (
	opAdd    = "add"
	opSeen   = "seen"
	opStart  = "start"
	opReply  = "reply"
	opStream = "stream"
	opPart   = "part"
	opAck    = "ack"
)

// diskEntry is an Entry as the journal keeps it.
type diskEntry struct {
	ID          string       `json:"id"`
	Platform    string       `json:"platform,omitempty"`
	Channel     string       `json:"channel,omitempty"`
	Thread      string       `json:"thread,omitempty"`
	MessageID   string       `json:"message_id,omitempty"`
	UserID      string       `json:"user_id"`
	UserName    string       `json:"user_name,omitempty"`
	Text        string       `json:"text"`
	Received    time.Time    `json:"received"`
	Seq         uint64       `json:"seq,omitempty"`
	Accepted    *time.Time   `json:"accepted,omitempty"`
	UUID        string       `json:"uuid,omitempty"`
	Kind        string       `json:"kind,omitempty"`
	DM          bool         `json:"dm,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	Fence       uint64       `json:"fence,omitempty"`
	StreamSeq   uint64       `json:"stream_seq,omitempty"`
	Checks      []string     `json:"checks,omitempty"`
	// Target is where the message was posted, as journals before this
	// format wrote it; never written now.
	Target *legacyTarget `json:"target,omitempty"`
}

// legacyTarget is platform.Target as encoding/json wrote it without tags.
type legacyTarget struct {
	Platform  string
	Channel   string
	Thread    string
	MessageID string
}

func toDisk(e Entry) *diskEntry {
	accepted := e.Accepted
	return &diskEntry{ID: e.ID, Platform: e.Platform, Channel: e.Channel, Thread: e.Thread, MessageID: e.MessageID,
		UserID: e.UserID, UserName: e.UserName, Text: e.Text, Received: e.Received, Seq: e.Seq, Accepted: &accepted,
		UUID: e.UUID, Kind: e.Kind, DM: e.DM, Attachments: e.Attachments, Fence: e.Fence, StreamSeq: e.StreamSeq, Checks: e.Checks}
}

func (d *diskEntry) entry() Entry {
	e := Entry{ID: d.ID, Platform: d.Platform, Channel: d.Channel, Thread: d.Thread, MessageID: d.MessageID,
		UserID: d.UserID, UserName: d.UserName, Text: d.Text, Received: d.Received, Seq: d.Seq, UUID: d.UUID, Kind: d.Kind,
		DM: d.DM, Attachments: d.Attachments, Fence: d.Fence, StreamSeq: d.StreamSeq, Checks: d.Checks}
	if t := d.Target; t != nil && e.Platform == "" {
		e.Platform, e.Channel, e.Thread, e.MessageID = t.Platform, t.Channel, t.Thread, t.MessageID
	}
	if d.Accepted != nil {
		e.Accepted = *d.Accepted
	}
	// Zero before this format: Open dates it to when it is read, so that
	// the id is remembered for a whole window after an upgrade.
	return e
}

// encode writes one journal line. HTML escaping is off: it would turn
// every <, > and & of a pasted log or page into six bytes.
func encode(r diskRecord) ([]byte, error) {
	r.V = format.Written()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encoding inbox record: %w", err)
	}
	return b.Bytes(), nil // Encode ends it with a newline
}

func decode(line []byte) (diskRecord, error) {
	var r diskRecord
	if err := json.Unmarshal(line, &r); err != nil {
		return r, err
	}
	switch r.Op {
	case opAdd:
		if r.Entry == nil || r.Entry.ID == "" {
			return r, errors.New("add without an entry id")
		}
	case opSeen:
		if r.ID == "" || r.At == nil {
			return r, errors.New("seen without an id or a time")
		}
	case opStart, opReply, opStream, opAck:
		if r.ID == "" {
			return r, fmt.Errorf("%s without an id", r.Op)
		}
	case opPart:
		if r.ID == "" || r.Part == nil || *r.Part < 0 {
			return r, errors.New("part without an id or a part")
		}
	default:
		return r, fmt.Errorf("unknown operation %q", r.Op)
	}
	return r, nil
}
