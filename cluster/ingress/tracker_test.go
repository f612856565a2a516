package ingress

import (
	"context"
	"slices"
	"testing"
)

type fakeAck struct{ acks, progress, terms int }

func (f *fakeAck) Ack() error                      { f.acks++; return nil }
func (f *fakeAck) DoubleAck(context.Context) error { f.acks++; return nil }
func (f *fakeAck) InProgress() error               { f.progress++; return nil }
func (f *fakeAck) Nak() error                      { return nil }
func (f *fakeAck) TermWithReason(string) error     { f.terms++; return nil }

func TestTracker(t *testing.T) {
	t.Parallel()
	type step struct {
		seq, dseq uint64
		sync      int      // >0: call sync(sync-1) after the arrival
		want      []uint64 // sequences handed on by this step, in order
	}
	tests := []struct {
		name    string
		last    uint64
		pending int
		steps   []step
	}{
		{"fresh consumer hands on at once", 0, 0, []step{
			{seq: 1, dseq: 1, want: []uint64{1}},
			{seq: 2, dseq: 2, want: []uint64{2}},
		}},
		{"takeover holds new messages until the predecessor's come back, then sorts", 10, 2, []step{
			{seq: 9, dseq: 11, sync: 1 + 2},                          // new message: held (1 in hand, 2 pending)
			{seq: 7, dseq: 12, sync: 1 + 3},                          // a redelivery: still one missing
			{seq: 8, dseq: 13, sync: 1 + 3, want: []uint64{7, 8, 9}}, // all three in hand
			{seq: 10, dseq: 14, want: []uint64{10}},
		}},
		{"a delivery gap holds back until the lost one is redelivered", 0, 0, []step{
			{seq: 1, dseq: 1, want: []uint64{1}},
			{seq: 3, dseq: 3, sync: 1 + 3}, // dseq 2 (seq 2) lost: held
			{seq: 2, dseq: 4, sync: 1 + 3, want: []uint64{2, 3}},
		}},
		{"a redelivery of a message in hand is not handed on twice", 0, 0, []step{
			{seq: 1, dseq: 1, want: []uint64{1}},
			{seq: 1, dseq: 2},
			{seq: 2, dseq: 3, want: []uint64{2}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := newTracker(tt.last, tt.pending)
			for i, st := range tt.steps {
				var got []uint64
				if e, _ := tr.arrive(st.seq, st.dseq, "c", &fakeAck{}); e != nil {
					got = append(got, e.seq)
				}
				if st.sync > 0 {
					for _, e := range tr.sync(st.sync - 1) {
						got = append(got, e.seq)
					}
				}
				if !slices.Equal(got, st.want) {
					t.Fatalf("step %d (seq %d, dseq %d): handed on %v, want %v", i, st.seq, st.dseq, got, st.want)
				}
			}
		})
	}
}

func TestTrackerRedeliveryReplacesReplySubject(t *testing.T) {
	t.Parallel()
	tr := newTracker(0, 0)
	first, second := &fakeAck{}, &fakeAck{}
	e, _ := tr.arrive(1, 1, "c", first)
	tr.arrive(1, 2, "c", second)
	msg, ok := tr.finish(e)
	if !ok || msg != ackable(second) {
		t.Fatalf("finish acknowledges %v, want the latest delivery", msg)
	}
	if _, again := tr.finish(e); again {
		t.Fatal("an entry finished twice")
	}
	if tr.count() != 0 {
		t.Fatalf("%d in hand after finishing the only one", tr.count())
	}
}
