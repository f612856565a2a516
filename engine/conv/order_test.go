package conv

import (
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

// steered marks it as steered into a turn (steer.go).
func steered(it workItem) workItem {
	it.steeredInto = "turn"
	return it
}

// TestInPlatformOrder pins the queueing rule itself, channel by channel.
func TestInPlatformOrder(t *testing.T) {
	it := func(text string, seq uint64, channel string, started bool) workItem {
		return workItem{started: started, msg: platform.Message{Text: text, Seq: seq,
			Target: platform.Target{Platform: "fake", Channel: channel}}}
	}
	for _, tc := range []struct {
		name  string
		items []workItem
		want  string
	}{
		{"empty", nil, ""},
		{"sorted", []workItem{it("a", 1, "C", false), it("b", 2, "C", false)}, "a b"},
		{"reversed", []workItem{it("c", 3, "C", false), it("b", 2, "C", false), it("a", 1, "C", false)}, "a b c"},
		{"started first", []workItem{it("a", 1, "C", false), it("b", 2, "C", true)}, "b a"},
		{"barrier", []workItem{it("b", 2, "C", false), it("x", 0, "C", false), it("a", 1, "C", false)}, "b x a"},
		{"another channel is no order", []workItem{it("b", 2, "C", false), it("a", 1, "D", false)}, "b a"},
		{"equal seqs keep theirs", []workItem{it("a", 1, "C", false), it("a2", 1, "C", false)}, "a a2"},
		// Journaled before the turn they went into (its message read
		// back after them), and in another order than posted.
		{"steered after their turn, in order", []workItem{steered(it("r2", 3, "C", true)), steered(it("r1", 2, "C", true)), it("m", 1, "C", true),
			it("w", 4, "C", false)}, "m r1 r2 w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, it := range inPlatformOrder(tc.items) {
				got = append(got, it.msg.Text)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("order %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMailboxLate: an item posted before one taken, or before one started
// before a restart that still waits for recovery, is late; one posted
// before a waiting item that was not started is not.
func TestMailboxLate(t *testing.T) {
	it := func(seq uint64, started bool) workItem {
		return workItem{kind: itemTurn, started: started, msg: platform.Message{Seq: seq, Target: platform.Target{Platform: "fake", Channel: "C"}}}
	}
	for _, tc := range []struct {
		name     string
		queued   []workItem
		take     bool
		push     workItem
		wantPos  int
		wantLate bool
	}{
		{"before a waiting one", []workItem{it(20, false)}, false, it(10, false), 1, false},
		{"after a waiting one", []workItem{it(20, false)}, false, it(30, false), 2, false},
		{"before the taken one", []workItem{it(20, false)}, true, it(10, false), 1, true},
		{"after the taken one", []workItem{it(20, false)}, true, it(30, false), 1, false},
		{"before one started before a restart", []workItem{it(20, true), it(40, false)}, false, it(10, false), 2, true},
		{"between it and a later one", []workItem{it(20, true), it(40, false)}, false, it(30, false), 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mb := newMailbox(10, func(int) {})
			mb.push(tc.queued...)
			if tc.take {
				mb.take()
			}
			pos, _, late := mb.push(tc.push)
			if pos != tc.wantPos || late != tc.wantLate {
				t.Errorf("pushed at %d, late %v; want %d, %v", pos, late, tc.wantPos, tc.wantLate)
			}
		})
	}
}

// TestMailboxMoveBefore: a root read back for one reply, found queued
// behind another reply that came in before it, is moved right before that
// one, so that the thread runs from its root; a root already ahead stays.
func TestMailboxMoveBefore(t *testing.T) {
	item := func(id string) workItem { return workItem{kind: itemTurn, inboxID: id} }
	order := func(mb *mailbox) string {
		var ids []string
		for _, it := range mb.items {
			ids = append(ids, it.inboxID)
		}
		return strings.Join(ids, " ")
	}
	for _, tc := range []struct {
		name, id, next string
		want           string
	}{
		{"behind: moved", "root", "r0", "root r0 r1 r2"},
		{"ahead: stays", "root", "r1", "r0 root r1 r2"},
		{"unknown: nothing moves", "nope", "r0", "r0 root r1 r2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mb := newMailbox(10, func(int) {})
			mb.items = []workItem{item("r0"), item("root"), item("r1"), item("r2")}
			mb.moveBefore(tc.id, tc.next)
			if got := order(mb); got != tc.want {
				t.Errorf("order %q, want %q", got, tc.want)
			}
		})
	}
}
