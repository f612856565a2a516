package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/outfile"
	"github.com/cc-connect/cc-connect/platform/internal/retry"
)

// files are the files of a conversation: those shared with a message
// (downloaded with the bot token, only from Slack's hosts) and those
// cc-connect posts (uploaded in Slack's three steps).
type files struct {
	name    string
	token   string // the bot token, sent only to trusted hosts
	apiBase *url.URL
	http    *http.Client
	wire    *wire
	log     *slog.Logger
}

// MaxUploadBytes is the largest file Slack takes (1 GB); a workspace may
// restrict uploads further, which Slack then refuses.
const MaxUploadBytes = 1 << 30

// send uploads f into the conversation to names (its thread when set)
// in Slack's three steps: files.getUploadURLExternal, the bytes to the
// upload URL it gives, files.completeUploadExternal sharing the file into
// the channel and thread. The app needs the files:write scope.
//
// The comment is posted first as a message of its own, through Send, and
// not as the upload's initial_comment: Slack parses that text by rules a
// bot cannot switch off, so it is no place for text that must mention
// nobody.
func (fs *files) send(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	name, err := outfile.Check(f, MaxUploadBytes)
	switch {
	case err != nil:
		return platform.Target{}, fmt.Errorf("uploading to slack channel %s: %w", to.Channel, err)
	case len(f.Data) == 0:
		// Slack refuses a length of 0 (missing_argument).
		return platform.Target{}, fmt.Errorf("uploading %s to slack channel %s: the file is empty", name, to.Channel)
	}
	posted := platform.Target{Platform: fs.name, Channel: to.Channel, Thread: to.Thread}
	if strings.TrimSpace(f.Comment) != "" {
		t, err := fs.wire.send(ctx, to, "", f.Comment)
		if err != nil {
			return platform.Target{}, fmt.Errorf("posting the comment of %s: %w", name, err)
		}
		posted = t
	}
	var up *slack.GetUploadURLExternalResponse
	err = fs.wire.call(ctx, "files.getUploadURLExternal", true, func(ctx context.Context) error {
		var err error
		up, err = fs.wire.api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: name, FileSize: len(f.Data)})
		return err
	})
	if isSlackError(err, "file_upload_size_restricted") {
		return platform.Target{}, fmt.Errorf("uploading %s to slack channel %s: the workspace restricts uploads of this size: %w (%w)",
			name, to.Channel, platform.ErrFileTooLarge, err)
	}
	if err != nil {
		return platform.Target{}, fmt.Errorf("uploading %s to slack channel %s: %w", name, to.Channel, err)
	}
	err = fs.wire.call(ctx, "upload", true, func(ctx context.Context) error {
		return fs.wire.api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: up.UploadURL, Filename: name, Reader: bytes.NewReader(f.Data)})
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("uploading %s to slack channel %s: %w", name, to.Channel, err)
	}
	// Not retried on a server error: the share may have happened.
	err = fs.wire.call(ctx, "files.completeUploadExternal", false, func(ctx context.Context) error {
		_, err := fs.wire.api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{
			Files: []slack.FileSummary{{ID: up.FileID, Title: name}}, Channel: to.Channel, ThreadTimestamp: to.Thread,
		})
		return err
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("sharing %s in slack channel %s: %w", name, to.Channel, err)
	}
	fs.log.Info("Slack file uploaded", "channel", to.Channel, "thread", to.Thread, "file", name, "size", len(f.Data))
	return posted, nil
}

func (fs *files) attachment(f inFile) (platform.Attachment, bool) {
	u := f.URLPrivateDownload
	if u == "" {
		u = f.URLPrivate
	}
	if u == "" || f.Mode == "tombstone" || f.Mode == "hidden_by_limit" || f.Mode == "external" {
		return platform.Attachment{}, false
	}
	name := f.Name
	if name == "" {
		name = f.Title
	}
	if name == "" {
		name = f.ID
	}
	size := f.Size
	if size <= 0 {
		size = -1
	}
	mime := f.Mimetype
	return platform.Attachment{
		Name: name,
		Size: size,
		Mime: mime,
		Ref:  u, // the file's own URL: no token in it
		Open: func(ctx context.Context) (io.ReadCloser, error) { return fs.open(ctx, u, mime) },
	}, true
}

// open downloads a shared file with the bot token. The token goes only
// to Slack's own hosts (or the configured API host), never to whatever URL
// an event names.
func (fs *files) open(ctx context.Context, rawURL, mime string) (io.ReadCloser, error) {
	u, err := url.Parse(rawURL)
	if err != nil || !fs.trustedHost(u) {
		return nil, fmt.Errorf("downloading slack file: %w", ErrUntrustedFileURL)
	}
	var body io.ReadCloser
	err = fs.wire.retryPolicy().Do(ctx, "file download", true, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+fs.token)
		resp, err := fs.http.Do(req)
		if err != nil {
			return err
		}
		if err := retry.CheckStatus(resp); err != nil {
			resp.Body.Close()
			return err
		}
		// Without files:read Slack answers 200 with its sign-in page.
		if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/html") && !strings.HasPrefix(mime, "text/html") {
			resp.Body.Close()
			return errors.New("got a web page instead of the file (does the app have the files:read scope?)")
		}
		body = resp.Body
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("downloading slack file: %w", err)
	}
	return body, nil
}

// trustedHost says whether the bot token may go to u: Slack's own hosts
// over https, or the configured API host.
func (fs *files) trustedHost(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	if strings.EqualFold(u.Host, fs.apiBase.Host) && u.Scheme == fs.apiBase.Scheme {
		return true
	}
	if u.Scheme != "https" {
		return false
	}
	for _, d := range []string{"slack.com", "slack-gov.com", "slack-edge.com"} {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}
