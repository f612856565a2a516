package agentproc

import (
	"testing"

	"github.com/google/uuid"
)

// TestTurnWithUUIDLandsInTranscript: the uuid a caller picks is the one
// the CLI stores, so ContainsUUID finds it after the turn, and a uuid that
// was never sent is not found.
func TestTurnWithUUIDLandsInTranscript(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	id := uuid.NewString()
	res, err := runTurnUUID(ctx, p, id, "tracked turn", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "echo: tracked turn" {
		t.Errorf("result = %q", res.Text)
	}
	path := e.transcript(res.SessionID)
	for _, tt := range []struct {
		uuid string
		want bool
	}{{id, true}, {uuid.NewString(), false}} {
		got, err := ContainsUUID(path, tt.uuid)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("ContainsUUID(%s) = %v, want %v", tt.uuid, got, tt.want)
		}
	}
}
