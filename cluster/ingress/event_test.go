package ingress

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/trigger"
)

// TestMessageSurvivesTheWire: what the owner's engine takes is the message
// the receiving host's adapter made, the platform's order (Seq) included:
// without it the owner could not run waiting messages in the order asked.
func TestMessageSurvivesTheWire(t *testing.T) {
	in := platform.Message{ID: "slack/C1/1700000000.000200", UserID: "U1", UserName: "alice", Text: "hi",
		Target: platform.Target{Platform: "slack", Channel: "C1", Thread: "1700000000.000100", MessageID: "1700000000.000200"},
		IsDM:   false, Mentioned: true, Received: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		Seq: 1700000000000200}
	ev, err := NewMessage(Binding{Platform: "slack", Channel: "C1"}, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Message.PlatformMessage(nil); !reflect.DeepEqual(got, in) {
		t.Errorf("after the wire:\n got %+v\nwant %+v", got, in)
	}
}

// TestRunSurvivesTheWire: the owner journals the run a schedule or a
// webhook made on another host, under the same id (which dedupes it in the
// stream and in the owner's seen ids) and in the same conversation.
func TestRunSurvivesTheWire(t *testing.T) {
	in := trigger.Run{ID: "schedule:noon@2026-03-10T12:00Z", Kind: trigger.KindSchedule, Name: "noon",
		Platform: "slack", Channel: "C1", Thread: "1700000000.000100", Conversation: "schedule:noon",
		Header: "Scheduled: noon", Prompt: "Say the noon word.", UserID: "schedule:noon", UserName: "schedule noon",
		At: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	ev, err := NewRun(Binding{Platform: "slack", Channel: "*"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ev.MsgID(), "run:slack:schedule:noon@2026-03-10T12:00Z"; got != want {
		t.Errorf("MsgID = %q, want %q", got, want)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Run.TriggerRun(); !reflect.DeepEqual(got, in) {
		t.Errorf("after the wire:\n got %+v\nwant %+v", got, in)
	}
	for name, bad := range map[string]trigger.Run{
		"no id":           {Platform: "slack", Channel: "C1", Prompt: "p"},
		"another channel": {ID: "r", Platform: "slack", Channel: "C2", Prompt: "p"},
	} {
		b := Binding{Platform: "slack", Channel: "C1"}
		if _, err := NewRun(b, bad); err == nil {
			t.Errorf("%s: a run that cannot be routed was made an event", name)
		}
	}
}
