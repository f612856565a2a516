package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
)

// topicFields are the forum-topic fields the library (v5.5.1) predates;
// they are read from the raw update.
type topicFields struct {
	MessageThreadID int  `json:"message_thread_id"`
	IsTopicMessage  bool `json:"is_topic_message"`
}

type rawUpdate struct {
	UpdateID      int          `json:"update_id"`
	Message       *topicFields `json:"message"`
	CallbackQuery *struct {
		Message *topicFields `json:"message"`
	} `json:"callback_query"`
}

// handUpdate reads one update and hands what it carries to h: a message
// (HandleMessage), a button press (HandleAction, its answer to Telegram
// sent on a goroutine counted in answers, so that the poll loop does no
// platform call of its own). It returns false only when h did not take a
// message (it is to be handed over again); an update that is not for the
// engine, or cannot be read, is done with.
func (a *Adapter) handUpdate(ctx context.Context, h platform.Handler, answers *sync.WaitGroup, raw json.RawMessage) bool {
	var ru rawUpdate
	if err := json.Unmarshal(raw, &ru); err != nil {
		a.log.Warn("Telegram update not understood", "error", err)
		return true
	}
	var u tgbotapi.Update
	if err := json.Unmarshal(raw, &u); err != nil {
		a.log.Warn("Telegram update not understood", "update_id", ru.UpdateID, "error", err)
		return true
	}
	switch {
	case u.Message != nil:
		var tf topicFields
		if ru.Message != nil {
			tf = *ru.Message
		}
		m, ok := a.toMessage(u.Message, tf)
		if !ok {
			return true
		}
		a.noteSeen(m)
		a.log.Debug("Telegram message received", "channel", m.Target.Channel, "thread", m.Target.Thread, "user_id", m.UserID, "user_name", m.UserName, "mentioned", m.Mentioned)
		// getUpdates's offset keeps updates from coming twice within a
		// run; after a restart one not confirmed comes again, with the
		// same message id, which the engine's duplicate check catches.
		if _, err := h.HandleMessage(ctx, m); err != nil {
			if ctx.Err() == nil {
				a.log.Warn("Engine did not accept Telegram message", "channel", m.Target.Channel, "thread", m.Target.Thread, "error", err)
			}
			return false
		}
	case u.CallbackQuery != nil:
		var tf topicFields
		if ru.CallbackQuery != nil && ru.CallbackQuery.Message != nil {
			tf = *ru.CallbackQuery.Message
		}
		// Telegram shows a spinner on the button until the press is
		// answered: at once, beside the hand-over.
		answers.Go(func() {
			if _, err := a.call(ctx, "answerCallbackQuery", tgbotapi.Params{"callback_query_id": u.CallbackQuery.ID}); err != nil {
				a.log.Warn("Answering Telegram button press failed", "error", err)
			}
		})
		a.handleCallback(ctx, h, u.CallbackQuery, tf)
	}
	return true
}

// topicOf is a forum topic's thread ("" outside a topic), as Target.Thread
// names it.
func topicOf(tf topicFields) string {
	if tf.IsTopicMessage && tf.MessageThreadID != 0 {
		return strconv.Itoa(tf.MessageThreadID)
	}
	return ""
}

// toMessage normalizes a user message; ok is false for what the engine
// must not see (bots, the bot itself, service messages, empty messages).
func (a *Adapter) toMessage(msg *tgbotapi.Message, tf topicFields) (platform.Message, bool) {
	if msg.From == nil || msg.Chat == nil {
		return platform.Message{}, false // channel posts and anonymous senders
	}
	chat := strconv.FormatInt(msg.Chat.ID, 10)
	if msg.MigrateToChatID != 0 {
		a.log.Warn("Telegram group became a supergroup; bind the new chat id", "channel", chat, "new_channel", msg.MigrateToChatID)
		return platform.Message{}, false
	}
	self := a.botUser()
	if msg.From.IsBot || msg.From.ID == self.ID {
		return platform.Message{}, false
	}
	text, entities := msg.Text, msg.Entities
	if text == "" {
		text, entities = msg.Caption, msg.CaptionEntities
	}
	atts := a.attachments(msg)
	if strings.TrimSpace(text) == "" && len(atts) == 0 {
		return platform.Message{}, false // joins, pins, stickers and other service messages
	}

	thread := topicOf(tf)
	clean, mentioned, forOther := stripMention(text, entities, self.UserName)
	if forOther {
		return platform.Message{}, false // a /command@otherbot
	}
	// In a forum topic every message "replies" to the topic's first
	// message; only a reply to a real bot message counts as addressing it.
	if r := msg.ReplyToMessage; r != nil && r.From != nil && r.From.ID == self.ID && r.MessageID != tf.MessageThreadID {
		mentioned = true
	}
	isDM := msg.Chat.Type == "private"
	return platform.Message{
		ID: chat + ":" + strconv.Itoa(msg.MessageID),
		Target: platform.Target{
			Platform:  a.cfg.Name,
			Channel:   chat,
			Thread:    thread,
			MessageID: strconv.Itoa(msg.MessageID),
		},
		UserID:      strconv.FormatInt(msg.From.ID, 10),
		UserName:    displayName(msg.From),
		Text:        clean,
		IsDM:        isDM,
		Mentioned:   mentioned,
		IsBot:       msg.From.IsBot,
		Attachments: atts,
		Received:    time.Unix(int64(msg.Date), 0),
		// Message ids count up within a chat (its topics included).
		Seq: uint64(max(msg.MessageID, 0)),
	}, true
}

func displayName(u *tgbotapi.User) string {
	if u.UserName != "" {
		return u.UserName
	}
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}

// stripMention removes "@bot" mentions and the "@bot" suffix of a command
// from text. It reports whether the bot was addressed (a mention or any
// command for it) and whether the message is a command for another bot.
// Entity offsets are in UTF-16 code units, as Telegram sends them.
func stripMention(text string, entities []tgbotapi.MessageEntity, bot string) (clean string, mentioned, forOther bool) {
	units := utf16.Encode([]rune(text))
	at := "@" + strings.ToLower(bot)
	type cut struct {
		from, to int
		tidy     bool // also drop one space next to the cut
	}
	var cuts []cut
	for _, e := range entities {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > len(units) {
			continue
		}
		s := string(utf16.Decode(units[e.Offset : e.Offset+e.Length]))
		switch e.Type {
		case "mention":
			if bot != "" && strings.ToLower(s) == at {
				mentioned = true
				cuts = append(cuts, cut{e.Offset, e.Offset + e.Length, true})
			}
		case "bot_command":
			if e.Offset != 0 {
				continue
			}
			i := strings.IndexByte(s, '@')
			if i < 0 {
				mentioned = true
				continue
			}
			if bot != "" && strings.ToLower(s[i:]) == at {
				mentioned = true
				n := len(utf16.Encode([]rune(s[:i])))
				cuts = append(cuts, cut{e.Offset + n, e.Offset + e.Length, false})
				continue
			}
			forOther = true
		}
	}
	if entities == nil && bot != "" {
		// No entities (some clients and forwarded text): fall back to a
		// whole-word search.
		lower := strings.ToLower(text)
		for i := strings.Index(lower, at); i >= 0; {
			end := i + len(at)
			if end == len(lower) || !isNameChar(lower[end]) {
				mentioned = true
				from := len(utf16.Encode([]rune(text[:i])))
				cuts = append(cuts, cut{from, from + len(at), true})
			}
			next := strings.Index(lower[end:], at)
			if next < 0 {
				break
			}
			i = end + next
		}
	}
	if len(cuts) == 0 {
		return strings.TrimSpace(text), mentioned, forOther
	}
	slices.SortFunc(cuts, func(x, y cut) int { return x.from - y.from })
	var out []uint16
	prev := 0
	for _, c := range cuts {
		if c.from < prev {
			continue
		}
		// Only the space next to a mention goes; indentation and code
		// elsewhere in the message stay as written.
		if c.tidy {
			if c.to < len(units) && units[c.to] == ' ' {
				c.to++
			} else if c.from > prev && units[c.from-1] == ' ' {
				c.from--
			}
		}
		out = append(out, units[prev:c.from]...)
		prev = c.to
	}
	out = append(out, units[prev:]...)
	return strings.TrimSpace(string(utf16.Decode(out))), mentioned, forOther
}

func isNameChar(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

// attachments lists the files of a message; Open fetches each through
// getFile and the file endpoint when the engine asks for it.
func (a *Adapter) attachments(msg *tgbotapi.Message) []platform.Attachment {
	var out []platform.Attachment
	add := func(fileID, name, mime string, size int) {
		sz := int64(size)
		if size <= 0 {
			sz = -1
		}
		out = append(out, platform.Attachment{
			Name: name,
			Size: sz,
			Mime: mime,
			Ref:  fileID, // not the download URL, which holds the bot token
			Open: func(ctx context.Context) (io.ReadCloser, error) { return a.openFile(ctx, fileID) },
		})
	}
	if d := msg.Document; d != nil {
		add(d.FileID, nonEmpty(d.FileName, "document_"+d.FileUniqueID), d.MimeType, d.FileSize)
	}
	if len(msg.Photo) > 0 {
		p := msg.Photo[len(msg.Photo)-1] // sizes ascend; the last is the original
		add(p.FileID, "photo_"+p.FileUniqueID+".jpg", "image/jpeg", p.FileSize)
	}
	if v := msg.Video; v != nil {
		add(v.FileID, nonEmpty(v.FileName, "video_"+v.FileUniqueID+".mp4"), v.MimeType, v.FileSize)
	}
	if au := msg.Audio; au != nil {
		add(au.FileID, nonEmpty(au.FileName, "audio_"+au.FileUniqueID), au.MimeType, au.FileSize)
	}
	if vo := msg.Voice; vo != nil {
		add(vo.FileID, "voice_"+vo.FileUniqueID+".ogg", nonEmpty(vo.MimeType, "audio/ogg"), vo.FileSize)
	}
	return out
}

var _ platform.AttachmentOpener = (*Adapter)(nil)

// OpenAttachment downloads a file again from its Ref (its file_id), for a
// message replayed after a restart.
func (a *Adapter) OpenAttachment(ctx context.Context, at platform.Attachment) (io.ReadCloser, error) {
	return a.openFile(ctx, at.Ref)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// openFile resolves fileID with getFile and streams the file. A local Bot
// API server (--local) answers with an absolute path on its own disk, which
// is read directly.
func (a *Adapter) openFile(ctx context.Context, fileID string) (io.ReadCloser, error) {
	raw, err := a.call(ctx, "getFile", tgbotapi.Params{"file_id": fileID})
	if err != nil {
		return nil, fmt.Errorf("resolving telegram file: %w", err)
	}
	var f tgbotapi.File
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("resolving telegram file: decoding: %w", err)
	}
	if f.FilePath == "" {
		return nil, fmt.Errorf("resolving telegram file: no file_path (file too big for the Bot API?)")
	}
	if filepath.IsAbs(f.FilePath) && a.apiURL != DefaultAPIURL {
		fh, err := os.Open(f.FilePath)
		if err == nil {
			return fh, nil
		}
	}
	u := a.apiURL + "/file/bot" + a.cfg.Token + "/" + strings.TrimLeft(path.Clean("/"+f.FilePath), "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("downloading telegram file: %w", redactErr(err, a.cfg.Token))
	}
	resp, err := a.httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading telegram file: %w", redactErr(err, a.cfg.Token))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("downloading telegram file: HTTP %d", resp.StatusCode)
	}
	return resp.Body, nil
}
