package telegram

import (
	"context"
	"testing"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
)

// TestRetries: flood control is waited out and a server error retried for
// a Bot API call; an upload waits out flood control too. (That an upload
// is not sent again after a server error cannot be seen here: the Bot API
// library reports no error_code for an upload, so its 500 reads as a
// refusal whatever the adapter asks.)
func TestRetries(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	ctx := context.Background()
	to := platform.Target{Channel: "42"}
	down := faketelegram.Answer{Status: 500, Body: `{"ok":false,"error_code":500,"description":"Internal Server Error"}`}

	f.FloodWait("sendMessage", 1)
	f.Override("sendMessage", down)
	if _, err := a.Send(ctx, to, "hello"); err != nil {
		t.Fatalf("Send through flood control and a 500 = %v", err)
	}
	if n := len(f.Calls("sendMessage")); n != 3 {
		t.Errorf("%d sendMessage calls, want 3 (429, 500, the post)", n)
	}

	f.FloodWait("sendDocument", 1)
	if _, err := a.SendFile(ctx, to, platform.OutgoingFile{Name: "a.txt", Data: []byte("x")}); err != nil {
		t.Fatalf("SendFile through flood control = %v", err)
	}
	if n := len(f.Calls("sendDocument")); n != 2 {
		t.Errorf("%d sendDocument calls, want 2 (429, the upload)", n)
	}
}
