package agentproc_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// TestRealCLIImageBlocks: a user message with images goes as a text block
// and image blocks, and the model gets each picture as an image block (the
// CLI adds its own note naming the copy it saved).
func TestRealCLIImageBlocks(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	pic := pngBytes(t, 8, 8)
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	tn, err := p.StartTurn(ctx, agentproc.UserMessage{Text: "what is in this picture?",
		Images: []agentproc.Image{{MediaType: "image/png", Data: pic}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tn.Wait(nil)
	if err != nil || res.IsError {
		t.Fatalf("turn: %v %+v\nstderr: %s", err, res, p.StderrTail())
	}
	req := r.api.Requests()[0]
	var imgs []fakeapi.Image
	for _, m := range req.Messages {
		if m.Role == "user" {
			imgs = append(imgs, m.Images()...)
		}
	}
	if len(imgs) != 1 || imgs[0].MediaType != "image/png" || imgs[0].SourceType != "base64" {
		t.Fatalf("images in the API request %+v, want one base64 PNG", imgs)
	}
	got, err := base64.StdEncoding.DecodeString(imgs[0].Data)
	if err != nil || !bytes.Equal(got, pic) {
		t.Errorf("the model got other bytes than were sent (%v)", err)
	}
	if !strings.Contains(req.Prompt, "what is in this picture?") {
		t.Errorf("prompt %q lacks the text", req.Prompt)
	}
	// A message without images is still a plain string, as before.
	mustTurn(t, p, "plain", "echo: plain")
}
