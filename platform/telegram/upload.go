package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // pictures sendPhoto may take
	_ "image/jpeg"
	_ "image/png"
	"net/http"
	"path"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
)

var _ platform.FileSender = (*Adapter)(nil)

// The Bot API's limits on what a bot uploads: a document up to 50 MB, a
// photo up to 10 MB with width and height adding up to 10,000 at most and
// a ratio of at most 20, a caption of 1,024 characters.
const (
	DocumentLimit = 50 << 20
	photoLimit    = 10 << 20
	photoSides    = 10000
	photoRatio    = 20
	captionLimit  = 1024
)

// MaxFileSize is the Bot API's limit on a document.
func (a *Adapter) MaxFileSize(platform.Target) int64 { return DocumentLimit }

// SendFile sends f with sendPhoto when it is a PNG, JPEG or GIF picture
// Telegram shows as a photo, else with sendDocument, in the chat's topic
// when set; the comment is the caption when it fits (1,024 characters),
// else it goes first as a message of its own. A photo Telegram refuses is
// sent again as a document.
func (a *Adapter) SendFile(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	name := path.Base(strings.ReplaceAll(f.Name, "\\", "/"))
	if name == "" || name == "." || name == "/" {
		return platform.Target{}, errors.New("telegram send file: the file has no name")
	}
	if len(f.Data) > DocumentLimit {
		return platform.Target{}, fmt.Errorf("telegram send file %s: %w", name, &platform.FileTooLargeError{Size: int64(len(f.Data)), Limit: DocumentLimit})
	}
	caption := ""
	if c := strings.TrimSpace(f.Comment); c != "" {
		if htmlTextLen(toHTML(c)) <= captionLimit {
			caption = c
		} else if _, err := a.Send(ctx, to, f.Comment); err != nil {
			return platform.Target{}, fmt.Errorf("posting the comment of %s: %w", name, err)
		}
	}
	method, field := "sendDocument", "document"
	if isPhoto(f.Data) {
		method, field = "sendPhoto", "photo"
	}
	id, err := a.sendFile(ctx, to, method, field, name, f.Data, caption)
	if method == "sendPhoto" && isBadRequest(err) && !isParseError(err) {
		a.log.Info("Telegram refused the picture as a photo; sending it as a document", "channel", to.Channel, "error", err)
		id, err = a.sendFile(ctx, to, "sendDocument", "document", name, f.Data, caption)
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == http.StatusRequestEntityTooLarge {
		return platform.Target{}, fmt.Errorf("telegram send file %s: %w (%w)", name, &platform.FileTooLargeError{Size: int64(len(f.Data)), Limit: DocumentLimit}, err)
	}
	if err != nil {
		return platform.Target{}, fmt.Errorf("telegram send file %s to %s: %w", name, to.Channel, err)
	}
	a.noteSent(to, id, caption, name)
	a.log.Info("Telegram file sent", "channel", to.Channel, "thread", to.Thread, "file", name, "size", len(f.Data), "method", method)
	return platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: strconv.Itoa(id)}, nil
}

// sendFile uploads one file, its caption as HTML and, when Telegram
// refuses that markup, as plain text.
func (a *Adapter) sendFile(ctx context.Context, to platform.Target, method, field, name string, data []byte, caption string) (int, error) {
	params := a.messageParams(to)
	if caption != "" {
		params["caption"] = toHTML(caption)
		params["parse_mode"] = "HTML"
	}
	raw, err := a.upload(ctx, method, params, field, name, data)
	if isParseError(err) {
		delete(params, "parse_mode")
		params["caption"] = noMentions(caption)
		raw, err = a.upload(ctx, method, params, field, name, data)
	}
	if err != nil {
		return 0, err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("telegram %s: decoding: %w", method, err)
	}
	return m.MessageID, nil
}

// upload makes one multipart Bot API request, waiting out flood control as
// call does. Nothing else is retried: the file may have been sent.
func (a *Adapter) upload(ctx context.Context, method string, params tgbotapi.Params, field, name string, data []byte) (json.RawMessage, error) {
	var result json.RawMessage
	err := a.retryPolicy().Do(ctx, method, false, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, a.requestTimeout)
		defer cancel()
		resp, err := a.bot(rctx).UploadFiles(method, params, []tgbotapi.RequestFile{{Name: field, Data: tgbotapi.FileBytes{Name: name, Bytes: data}}})
		if err != nil {
			return err
		}
		result = resp.Result
		return nil
	})
	if err != nil {
		return nil, a.apiError(method, err)
	}
	return result, nil
}

// isPhoto reports whether data is a picture Telegram takes as a photo.
func isPhoto(data []byte) bool {
	if len(data) > photoLimit {
		return false
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return false
	}
	w, h := cfg.Width, cfg.Height
	return w > 0 && h > 0 && w+h <= photoSides && w <= photoRatio*h && h <= photoRatio*w
}

func isBadRequest(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == http.StatusBadRequest
}
