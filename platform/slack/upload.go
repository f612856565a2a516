package slack

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
)

var _ platform.FileSender = (*Adapter)(nil)

// MaxUploadBytes is the largest file Slack takes (1 GB); a workspace may
// restrict uploads further, which Slack then refuses.
const MaxUploadBytes = 1 << 30

// MaxFileSize is Slack's limit on one file.
func (a *Adapter) MaxFileSize(platform.Target) int64 { return MaxUploadBytes }

// SendFile uploads f into the conversation to names (its thread when set)
// in Slack's three steps: files.getUploadURLExternal, the bytes to the
// upload URL it gives, files.completeUploadExternal sharing the file into
// the channel and thread. The app needs the files:write scope.
//
// The comment is posted first as a message of its own, through Send, and
// not as the upload's initial_comment: Slack parses that text by rules a
// bot cannot switch off, so it is no place for text that must mention
// nobody.
func (a *Adapter) SendFile(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	name := path.Base(strings.ReplaceAll(f.Name, "\\", "/"))
	switch {
	case name == "" || name == "." || name == "/":
		return platform.Target{}, fmt.Errorf("uploading to slack channel %s: the file has no name", to.Channel)
	case len(f.Data) == 0:
		// Slack refuses a length of 0 (missing_argument).
		return platform.Target{}, fmt.Errorf("uploading %s to slack channel %s: the file is empty", name, to.Channel)
	case int64(len(f.Data)) > MaxUploadBytes:
		return platform.Target{}, fmt.Errorf("uploading %s to slack channel %s: %w", name, to.Channel,
			&platform.FileTooLargeError{Size: int64(len(f.Data)), Limit: MaxUploadBytes})
	}
	posted := platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread}
	if strings.TrimSpace(f.Comment) != "" {
		t, err := a.Send(ctx, to, f.Comment)
		if err != nil {
			return platform.Target{}, fmt.Errorf("posting the comment of %s: %w", name, err)
		}
		posted = t
	}
	var up *slack.GetUploadURLExternalResponse
	err := a.call(ctx, "files.getUploadURLExternal", true, func(ctx context.Context) error {
		var err error
		up, err = a.api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: name, FileSize: len(f.Data)})
		return err
	})
	if isSlackError(err, "file_upload_size_restricted") {
		return platform.Target{}, fmt.Errorf("uploading %s to slack channel %s: the workspace restricts uploads of this size: %w (%w)",
			name, to.Channel, platform.ErrFileTooLarge, err)
	}
	if err != nil {
		return platform.Target{}, fmt.Errorf("uploading %s to slack channel %s: %w", name, to.Channel, err)
	}
	err = a.call(ctx, "upload", true, func(ctx context.Context) error {
		return a.api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: up.UploadURL, Filename: name, Reader: bytes.NewReader(f.Data)})
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("uploading %s to slack channel %s: %w", name, to.Channel, err)
	}
	// Not retried on a server error: the share may have happened.
	err = a.call(ctx, "files.completeUploadExternal", false, func(ctx context.Context) error {
		_, err := a.api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{
			Files: []slack.FileSummary{{ID: up.FileID, Title: name}}, Channel: to.Channel, ThreadTimestamp: to.Thread,
		})
		return err
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("sharing %s in slack channel %s: %w", name, to.Channel, err)
	}
	a.log.Info("Slack file uploaded", "channel", to.Channel, "thread", to.Thread, "file", name, "size", len(f.Data))
	return posted, nil
}
