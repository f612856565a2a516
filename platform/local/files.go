package local

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cc-connect/cc-connect/platform"
)

// historyLines is how many messages of the terminal History remembers.
const historyLines = 200

// History returns what was typed and printed before q.Before, since
// cc-connect started: the terminal keeps no history of its own.
func (a *Adapter) History(_ context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	return a.history.History(platform.Target{Channel: conv.Channel}, q), nil
}

func (a *Adapter) noteTyped(m platform.Message) {
	a.history.Add(platform.Target{Channel: Channel}, platform.HistoryMessage{ID: m.ID, MessageID: m.ID,
		UserID: m.UserID, UserName: m.UserName, Text: m.Text, Time: m.Received, Mentioned: true})
}

func (a *Adapter) notePrinted(posted platform.Target, text string) {
	a.history.Add(platform.Target{Channel: Channel}, platform.HistoryMessage{ID: posted.MessageID, MessageID: posted.MessageID,
		UserName: "cc-connect", Text: text, Time: a.cfg.Now(), IsBot: true, FromSelf: true})
}

// MaxFileSize: nothing is copied, so any size is fine.
func (a *Adapter) MaxFileSize(platform.Target) int64 { return 1 << 62 }

// SendFile prints where the file is in the workspace, and the comment:
// the terminal runs on the machine the workspace is on, so the file is
// already there to open.
func (a *Adapter) SendFile(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	where := f.Path
	if where == "" {
		where = f.Name
	}
	text := fmt.Sprintf("File: %s (%d bytes, in the workspace)", where, len(f.Data))
	if c := strings.TrimSpace(f.Comment); c != "" {
		text = c + "\n" + text
	}
	if err := ctx.Err(); err != nil {
		return platform.Target{}, err
	}
	a.outMu.Lock()
	_, err := io.WriteString(a.cfg.Out, text+"\n\n")
	a.outMu.Unlock()
	if err != nil {
		return platform.Target{}, fmt.Errorf("writing a file's path to the terminal: %w", err)
	}
	posted := to
	posted.Platform = a.cfg.Name
	posted.MessageID = fmt.Sprintf("%s-out-%d", a.runID, a.outSeq.Add(1))
	a.notePrinted(posted, text)
	return posted, nil
}
