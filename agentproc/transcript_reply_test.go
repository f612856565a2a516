package agentproc

import (
	"testing"

	"github.com/google/uuid"
)

// TestReplyAfter: the reply to a message is read back from the transcript
// by the message's uuid, with the replies to its continuations but not to
// a later prompt; an unknown uuid is not found.
func TestReplyAfter(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	first, second := uuid.NewString(), uuid.NewString()
	for _, turn := range []struct{ id, text string }{
		{first, "one"}, {uuid.NewString(), ContinuePrompt}, {second, "two"},
	} {
		if _, err := runTurnUUID(ctx, p, turn.id, turn.text, nil); err != nil {
			t.Fatal(err)
		}
	}
	res, err := runTurnUUID(ctx, p, uuid.NewString(), "three", nil)
	if err != nil {
		t.Fatal(err)
	}
	path := e.transcript(res.SessionID)
	tests := []struct {
		uuid  string
		text  string
		found bool
	}{
		{second, "echo: two", true},
		{first, "echo: one\n\necho: " + ContinuePrompt, true},
		{uuid.NewString(), "", false},
	}
	for _, tt := range tests {
		text, found, err := ReplyAfter(path, tt.uuid)
		if err != nil {
			t.Fatal(err)
		}
		if text != tt.text || found != tt.found {
			t.Errorf("ReplyAfter(%s) = %q, %v; want %q, %v", tt.uuid, text, found, tt.text, tt.found)
		}
	}
	if _, _, err := ReplyAfter(path, `bad"uuid`); err == nil {
		t.Error("a uuid with a quote was accepted")
	}
}
