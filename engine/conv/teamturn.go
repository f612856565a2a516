package conv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/chatprompt"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/sendfile"
	"github.com/cc-connect/cc-connect/trigger"
)

// historyTimeout bounds reading a thread's earlier messages before a
// prompt: without them the turn goes on.
const historyTimeout = 15 * time.Second

// NotAllowedText stands for the text of an earlier message whose author
// may not use this binding.
const NotAllowedText = "(not shown: its author is not one of the people allowed to use cc-connect here)"

// errNoFiles is what send_file says where the chat cannot take files.
var errNoFiles = errors.New("this chat cannot take files from cc-connect")

// team is a conversation's team features on a turn's path: who wrote a
// prompt, what the thread said before, whom to ring, and the host tools
// (send_file) its processes get, posting into the conversation.
type team struct {
	host      Host
	cfg       *settings
	chat      *relay
	rb        *recordBook
	binding   func() binding.Binding // in force now
	ws        func() string          // the conversation's workspace now (its worktree)
	dm        bool                   // a direct message: no sender header by default
	agentUser *agentproc.User        // agent.user: send_file reads as that user
	bg        context.Context
	metrics   Metrics
	log       *slog.Logger
}

// teamPrompt adds what the team features put into a prompt, once per item:
// the thread's earlier messages when this is the first prompt of a
// conversation called into a thread (or, with thread_context_on_fresh, of a
// fresh session of one that had a session), and the line that says who
// wrote the message. text is the prompt prepare built.
func (tm *team) teamPrompt(it workItem, text string) string {
	b := tm.binding()
	if b.HeaderOn(tm.dm || it.msg.IsDM) {
		text = chatprompt.WithHeader(chatprompt.Sender{Name: it.msg.UserName, ID: it.msg.UserID, Platform: tm.platformType()}, text)
	}
	if it.threadContext != "" {
		text = it.threadContext + "\n" + text
	}
	return text
}

// platformType names the conversation's platform for the header: the
// adapter instance's name, which the admin chose (slack, slack-main).
func (tm *team) platformType() string { return tm.chat.to.Platform }

// threadContext is the block of the thread's earlier messages for it, or
// "" when none is due or the platform has none.
func (tm *team) threadContext(it workItem) string {
	bounds := tm.host.Team().ThreadContext
	rec := tm.rb.get()
	// Only before a session's first turn: once a session was chosen (its
	// id, or the one picked before the CLI confirmed it), the thread's
	// messages since are the conversation's own.
	if bounds.Messages <= 0 || rec.SessionID != "" || rec.NewSessionID != "" || it.recovered || it.afterCrash {
		return ""
	}
	if it.msg.Target.MessageID == "" {
		// Nothing to read before (the terminal names no message): the
		// messages after this one, queued behind it, would pass for
		// earlier ones.
		return ""
	}
	fresh := rec.HadSession
	if fresh && !tm.host.Team().ThreadContextOnFresh {
		return ""
	}
	hr, ok := tm.chat.chat().(platform.HistoryReader)
	if !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(tm.bg, historyTimeout)
	defer cancel()
	msgs, err := hr.History(ctx, tm.chat.to, platform.HistoryQuery{Before: it.msg.Target.MessageID, Limit: bounds.Messages + 1})
	if err != nil {
		tm.log.Warn("Reading the thread's earlier messages failed; the prompt goes without them", "error", err)
		return ""
	}
	b := tm.binding()
	kept := msgs[:0:0]
	for _, m := range msgs {
		if m.ID == it.msg.ID || m.MessageID == it.msg.Target.MessageID ||
			(!m.Time.IsZero() && !it.msg.Received.IsZero() && m.Time.After(it.msg.Received)) {
			continue // this message, or one posted after it
		}
		if !m.FromSelf && !b.Allowed(m.UserID) {
			// Only allowed users reach the agent: the others are named,
			// what they wrote is not passed on.
			m.Text, m.Files = NotAllowedText, nil
		}
		kept = append(kept, m)
	}
	block := chatprompt.ThreadContext(kept, bounds)
	if block != "" {
		tm.log.Info("Giving Claude the thread's earlier messages", "messages", len(kept), "bytes", len(block), "fresh_session", fresh)
	}
	return block
}

// hostTools are the tools of cc-connect's that a process of this
// conversation gets: send_file, posting into this conversation.
func (tm *team) hostTools(b binding.Binding) []agentproc.HostTool {
	to := tm.chat.to
	var limit int64
	if fs, ok := tm.chat.chat().(platform.FileSender); ok {
		limit = fs.MaxFileSize(to)
	}
	return []agentproc.HostTool{sendfile.Tool(sendfile.Config{
		Workspace: tm.ws(),
		MaxSize:   tm.cfg.sendFileMax(b),
		Limit:     limit,
		User:      tm.agentUser,
		Send: func(ctx context.Context, f platform.OutgoingFile) error {
			// The adapter registered now: a reload may have replaced it.
			fs, ok := tm.chat.chat().(platform.FileSender)
			if !ok {
				return errNoFiles
			}
			ctx, cancel := context.WithTimeout(ctx, sendFileTimeout)
			defer cancel()
			if _, err := fs.SendFile(ctx, to, f); err != nil {
				tm.log.Warn("Posting a file Claude sent failed", "file", f.Path, "size", len(f.Data), "error", err)
				return err
			}
			tm.log.Info("Posted a file Claude sent", "file", f.Path, "size", len(f.Data))
			return nil
		},
	})}
}

// sendFileTimeout bounds one upload of send_file.
const sendFileTimeout = 5 * time.Minute

// ringAsker mentions the person who asked for it, so that their phone
// rings: after a turn that ran at least notify_after, and when a
// permission prompt or a question waits for an answer. Not in direct
// messages (the platform notifies them anyway), not where the binding
// says not, not for a message without a user, and only where the platform
// can mention.
func (tm *team) ringAsker(m platform.Message, text string) {
	if tm.dm || m.IsDM || m.UserID == "" || !tm.binding().NotifyOn() {
		return
	}
	who := []platform.Mention{{UserID: m.UserID, UserName: m.UserName}}
	if trigger.IsRunUser(m.UserID) { // a schedule or a webhook asks nobody: its approvers answer
		if who = tm.approvers(); len(who) == 0 {
			return
		}
	}
	ms, ok := tm.chat.chat().(platform.MentionSender)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(tm.bg, sendTimeout)
	defer cancel()
	if _, err := ms.SendMentioning(ctx, tm.chat.to, who, text); err != nil {
		tm.metrics.PlatformError(tm.chat.to.Platform)
		tm.log.Warn("Mentioning the person who asked failed", "user_id", m.UserID, "error", err)
	}
}

// approvers are the binding's approvers by name (none when any allowed
// user may approve).
func (tm *team) approvers() []platform.Mention {
	var who []platform.Mention
	for _, id := range tm.binding().Approvers {
		if id != "*" && id != "" {
			who = append(who, platform.Mention{UserID: id})
		}
	}
	return who
}

// ringApprovers mentions the binding's approvers (the asker when any
// allowed user may approve) with text, for a request that waited long:
// once per request (permissions.remind). Where nobody can be mentioned
// (a direct message, a platform without mentions) the text is posted.
func (tm *team) ringApprovers(m platform.Message, text string) {
	who := tm.approvers()
	if len(who) == 0 && m.UserID != "" && !trigger.IsRunUser(m.UserID) {
		who = []platform.Mention{{UserID: m.UserID, UserName: m.UserName}}
	}
	ms, ok := tm.chat.chat().(platform.MentionSender)
	if tm.dm || m.IsDM || len(who) == 0 || !ok {
		tm.chat.send(text)
		return
	}
	ctx, cancel := context.WithTimeout(tm.bg, sendTimeout)
	defer cancel()
	if _, err := ms.SendMentioning(ctx, tm.chat.to, who, text); err != nil {
		tm.metrics.PlatformError(tm.chat.to.Platform)
		tm.log.Warn("Mentioning the approvers failed", "error", err)
	}
}

// ringIfLong rings the asker when a turn ran at least notify_after.
func (tm *team) ringIfLong(m platform.Message, took time.Duration, ok bool) {
	after := tm.host.Team().NotifyAfter
	if after < 0 || took < after || trigger.IsRunUser(m.UserID) { // nobody asked for a run's turn
		return
	}
	word := "done"
	if !ok {
		word = "over, but it did not succeed"
	}
	tm.ringAsker(m, fmt.Sprintf("the turn you asked for is %s (it took %s).", word, took.Round(time.Second)))
}

// maxImageBytes bounds one picture passed as an image block: the API takes
// at most 5 MB of base64 (the CLI re-encodes a larger one, but the line
// and the request stay large), so a bigger one is left to Claude's Read.
const maxImageBytes = 3 << 20

// maxImages bounds the pictures of one message passed as image blocks.
const maxImages = 8

// imagesOf reads back the stored attachments that are pictures, to go with
// the prompt as image blocks, so that Claude sees them without a Read; each
// is still named by its path in the prompt. The bytes are the ones
// received (readStored checks their SHA-256); the media type is sniffed,
// not taken from the platform.
func imagesOf(ws string, files []inbox.Attachment, log *slog.Logger) []agentproc.Image {
	var out []agentproc.Image
	for _, f := range files {
		if f.Refusal != "" || f.Text || f.Path == "" || f.Size <= 0 || f.Size > maxImageBytes || len(out) == maxImages {
			continue
		}
		data, err := readStored(ws, f)
		if err != nil {
			log.Warn("Reading a stored picture back failed; it is named, not shown", "attachment", f.Path, "error", err)
			continue
		}
		mt := http.DetectContentType([]byte(data))
		if !slices.Contains(agentproc.ImageTypes, mt) {
			continue
		}
		out = append(out, agentproc.Image{MediaType: mt, Data: []byte(data)})
	}
	return out
}
