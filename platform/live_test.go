package platform

import (
	"context"
	"reflect"
	"testing"
	"time"
)

func TestOptionSet(t *testing.T) {
	tests := []struct {
		name string
		set  OptionSet
		want []int
	}{
		{"none", Options(), nil},
		{"some, in order", Options(3, 0, 2), []int{0, 2, 3}},
		{"out of range left out", Options(-1, 0, 32, 31), []int{0, 31}},
		{"with is idempotent", Options(1).With(1).With(4), []int{1, 4}},
		{"toggle adds", Options(1).Toggle(2), []int{1, 2}},
		{"toggle removes", Options(1, 2).Toggle(2), []int{1}},
		{"toggle out of range", Options(1).Toggle(40), []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.set.List(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("List = %v, want %v", got, tt.want)
			}
			for i := -1; i < 33; i++ {
				want := false
				for _, w := range tt.want {
					want = want || w == i
				}
				if tt.set.Has(i) != want {
					t.Errorf("Has(%d) = %t", i, !want)
				}
			}
		})
	}
}

// Adapters that say nothing get what their interfaces say.
type (
	plain   struct{}
	editing struct{ plain }
)

func (plain) Name() string                                         { return "p" }
func (plain) Run(context.Context, Handler) error                   { return nil }
func (plain) Send(context.Context, Target, string) (Target, error) { return Target{}, nil }
func (editing) EditReply(context.Context, Target, []Target, string) ([]Target, error) {
	return nil, nil
}
func (editing) Delete(context.Context, Target) error { return nil }

type (
	tagging   struct{ plain }
	recording struct{ tagging }
)

func (tagging) SendReply(context.Context, Target, string, Reply) (ReplyResult, error) {
	return ReplyResult{}, nil
}
func (recording) RecordsParts() {}

func TestCapabilitiesOf(t *testing.T) {
	tests := []struct {
		name string
		a    Adapter
		want Capabilities
	}{
		{"nothing", plain{}, Capabilities{MessageLimit: 1900, EditInterval: time.Second, EditRate: EditRate{Interval: time.Second}}},
		{"edits and deletes", editing{}, Capabilities{MessageLimit: 1900, Edits: true, EditInterval: time.Second,
			EditRate: EditRate{Interval: time.Second}, Deletes: true}},
		{"a part recorder", recording{}, Capabilities{MessageLimit: 1900, EditInterval: time.Second,
			EditRate: EditRate{Interval: time.Second}, RecordsParts: true}},
		{"a replier that tags", tagging{}, Capabilities{MessageLimit: 1900, EditInterval: time.Second,
			EditRate: EditRate{Interval: time.Second}, TagsReplies: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CapabilitiesOf(tt.a); got != tt.want {
				t.Errorf("CapabilitiesOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
