package ingress

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
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
