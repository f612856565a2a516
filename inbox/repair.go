package inbox

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// recordStart begins every journal line (Op is the record's first field).
// It cannot occur inside a record's strings, whose quotes JSON escapes, so
// in a line that does not parse it marks where each record began.
var recordStart = []byte(`{"op":"`)

// parseLine decodes one journal line. A line that is not one record may
// be what a failed append left before the fix that cuts such appends off:
// a record cut short, glued to the records written after it. Those are
// recovered when what the cut record was can be told and dropping (or
// applying) it cannot run a message twice or out of order:
//
//   - a cut "add" was a message whose Append failed: the user was told it
//     was not accepted, so it is dropped;
//   - a cut "start" was a turn refused because its start could not be
//     saved, so it never reached claude: dropped;
//   - a cut "reply" only said a reply was about to be posted; recovery
//     asks the transcript, so it is dropped;
//   - a cut "seen" was a command's id whose write failed: dropped (at
//     worst a redelivery of that command runs it again);
//   - a cut "ack" whose message id is whole ended that message's turn, so
//     it is applied; dropping it would run the message again.
//
// Anything else (a line that is no record at all, a cut ack without its
// id, a cut record of an unknown kind) fails: guessing could run a message
// twice or out of order.
func parseLine(l []byte) (recs []diskRecord, repairs []string, err error) {
	r, err := decode(l)
	if err == nil {
		return []diskRecord{r}, nil, nil
	} else if json.Valid(l) || !bytes.HasPrefix(l, recordStart) {
		return nil, nil, err
	}
	pieces := splitRecords(l)
	last := pieces[len(pieces)-1]
	if len(pieces) == 1 {
		return nil, nil, fmt.Errorf("a record that does not parse and is not followed by another")
	}
	for _, p := range pieces[:len(pieces)-1] {
		r, what, err := cutRecord(p)
		if err != nil {
			return nil, nil, err
		}
		if r != nil {
			recs = append(recs, *r)
		}
		repairs = append(repairs, what)
	}
	if r, err = decode(last); err != nil {
		return nil, nil, fmt.Errorf("the record after a cut one does not parse: %v", err)
	}
	return append(recs, r), repairs, nil
}

// splitRecords cuts l at every record start.
func splitRecords(l []byte) [][]byte {
	var out [][]byte
	for len(l) > 0 {
		next := bytes.Index(l[1:], recordStart)
		if next < 0 {
			return append(out, l)
		}
		out = append(out, l[:next+1])
		l = l[next+1:]
	}
	return out
}

// cutRecord says what to do with a record cut short: the record to apply
// (nil to drop it) and a description of the repair.
func cutRecord(p []byte) (*diskRecord, string, error) {
	op, rest, ok := quoted(p[len(recordStart)-1:])
	if !ok {
		return nil, "", fmt.Errorf("a record cut short before its kind")
	}
	switch op {
	case opAdd:
		return nil, "dropped a message record cut short by a failed write (the user was told it was not accepted)", nil
	case opStart:
		return nil, "dropped a turn-start record cut short by a failed write (that turn was refused)", nil
	case opReply:
		return nil, "dropped a reply mark cut short by a failed write (recovery asks the transcript what was posted)", nil
	case opSeen:
		return nil, "dropped a command's seen mark cut short by a failed write (a redelivery of that command may run it again)", nil
	case opAck:
		const idKey = `,"id":`
		if !bytes.HasPrefix(rest, []byte(idKey)) {
			return nil, "", fmt.Errorf("an acknowledgement cut short before its message id")
		}
		id, _, ok := quoted(rest[len(idKey):])
		if !ok || id == "" {
			return nil, "", fmt.Errorf("an acknowledgement cut short inside its message id")
		}
		return &diskRecord{Op: opAck, ID: id}, fmt.Sprintf("applied an acknowledgement of %q cut short by a failed write", id), nil
	}
	return nil, "", fmt.Errorf("a record of unknown kind %q cut short", op)
}

// quoted reads the JSON string at the start of b and returns it with what
// follows it; ok is false when b does not start with a whole string.
func quoted(b []byte) (s string, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			if err := json.Unmarshal(b[:i+1], &s); err != nil {
				return "", nil, false
			}
			return s, b[i+1:], true
		}
	}
	return "", nil, false
}
