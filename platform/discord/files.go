package discord

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/outfile"
)

// UploadLimit is what Discord takes in files per message in a server
// without boosts (10 MiB); boosted servers take more, which this adapter
// does not ask about.
const UploadLimit = 10 << 20

// files are the files of a conversation: attachments of a message,
// downloaded from Discord's CDN, and files cc-connect posts as a message's
// attachment.
type files struct {
	name string
	http *http.Client // downloads, bounded by their ctx only
	wire *wire
	log  *slog.Logger
}

// attachments lists a message's files; Open downloads from Discord's CDN
// through the adapter's HTTP client.
func (fs *files) attachments(in []*discordgo.MessageAttachment) []platform.Attachment {
	var out []platform.Attachment
	for _, at := range in {
		if at == nil || at.URL == "" {
			continue
		}
		u := at.URL
		size := int64(at.Size)
		if at.Size <= 0 {
			size = -1
		}
		out = append(out, platform.Attachment{
			Name: at.Filename,
			Size: size,
			Mime: at.ContentType,
			Ref:  u,
			Open: func(ctx context.Context) (io.ReadCloser, error) { return fs.download(ctx, u) },
		})
	}
	return out
}

// download fetches a file from Discord's CDN; its links expire after a
// while, and then the download fails.
func (fs *files) download(ctx context.Context, u string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("downloading discord attachment: %w", err)
	}
	resp, err := fs.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading discord attachment: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("downloading discord attachment: HTTP %d", resp.StatusCode)
	}
	return resp.Body, nil
}

// send posts f as a message with an attachment, in the conversation's
// thread (opening a planned one), the comment as its content when it fits
// in one message, else the comment's parts first. Nobody is mentioned.
func (fs *files) send(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	name, err := outfile.Check(f, UploadLimit)
	if err != nil {
		return platform.Target{}, fmt.Errorf("discord send file: %w", err)
	}
	ch, err := fs.wire.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	content := ""
	if strings.TrimSpace(f.Comment) != "" {
		parts := splitForDiscord(discordMarkdown(f.Comment))
		if len(parts) == 1 {
			content = parts[0]
		} else if _, err := fs.wire.send(ctx, to, nil, f.Comment); err != nil {
			return platform.Target{}, fmt.Errorf("posting the comment of %s: %w", name, err)
		}
	}
	var m *discordgo.Message
	err = fs.wire.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		m, err = fs.wire.session.ChannelMessageSendComplex(ch, &discordgo.MessageSend{
			Content:         content,
			Files:           []*discordgo.File{{Name: name, ContentType: f.Mime, Reader: bytes.NewReader(f.Data)}},
			AllowedMentions: noMentions(),
		}, opts...)
		return err
	})
	if isStatus(err, http.StatusRequestEntityTooLarge) {
		return platform.Target{}, fmt.Errorf("discord send file %s to %s: %w (%w)", name, ch,
			outfile.TooLarge(f, UploadLimit), err)
	}
	if err != nil {
		return platform.Target{}, fmt.Errorf("discord send file %s to %s: %w", name, ch, err)
	}
	fs.log.Info("Discord file sent", "channel", to.Channel, "thread", to.Thread, "file", name, "size", len(f.Data))
	return platform.Target{Platform: fs.name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}, nil
}
