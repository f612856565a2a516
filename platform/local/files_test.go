package local

import (
	"context"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

func TestHistoryAndFiles(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	h := start(t, out, nil)
	h.write(t, "first question\n")
	first := h.rec.next(t)
	conv := platform.Target{Platform: "tty", Channel: Channel}
	if _, err := h.a.Send(context.Background(), conv, "an answer"); err != nil {
		t.Fatal(err)
	}
	h.write(t, "second\n")
	second := h.rec.next(t)
	ms, err := h.a.History(context.Background(), conv, platform.HistoryQuery{Before: second.ID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.UserName+":"+m.Text)
	}
	if strings.Join(got, "|") != "alice:first question|cc-connect:an answer" || ms[0].MessageID != first.ID || !ms[1].FromSelf {
		t.Errorf("history before the second message: %v", got)
	}

	posted, err := h.a.SendFile(context.Background(), conv, platform.OutgoingFile{Name: "r.txt", Path: "out/r.txt", Data: []byte("12345"), Comment: "the report"})
	if err != nil || posted.MessageID == "" {
		t.Fatalf("SendFile: %+v, %v", posted, err)
	}
	if !strings.Contains(out.String(), "the report\nFile: out/r.txt (5 bytes, in the workspace)\n\n") {
		t.Errorf("printed %q", out.String())
	}
	all, _ := h.a.History(context.Background(), conv, platform.HistoryQuery{Limit: 10})
	if last := all[len(all)-1]; !last.FromSelf || !strings.Contains(last.Text, "out/r.txt") {
		t.Errorf("last remembered %+v", last)
	}
}
