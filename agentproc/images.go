package agentproc

import (
	"context"
	"encoding/base64"
	"fmt"
)

// Image is a picture sent with a user message as an image content block,
// so that the model sees it without a Read round trip (docs/claude-code.md
// §5: the CLI passes the block to the API, sniffs the real format, and
// resizes or re-encodes what is too large).
type Image struct {
	// MediaType is image/png, image/jpeg, image/gif or image/webp.
	MediaType string
	Data      []byte
}

// ImageTypes are the media types the Messages API takes as image blocks.
var ImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

type contentBlock struct {
	Type   string       `json:"type"`
	Text   string       `json:"text,omitempty"`
	Source *imageSource `json:"source,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// sendContent writes one user message carrying id: text alone as a string
// (as every message went before), or with images a text block followed
// by one image block each.
func (p *Process) sendContent(ctx context.Context, id, text string, images []Image) error {
	if len(images) == 0 {
		return p.sendUUID(ctx, id, text)
	}
	blocks := make([]contentBlock, 0, 1+len(images))
	blocks = append(blocks, contentBlock{Type: "text", Text: text})
	for _, im := range images {
		blocks = append(blocks, contentBlock{Type: "image", Source: &imageSource{
			Type: "base64", MediaType: im.MediaType, Data: base64.StdEncoding.EncodeToString(im.Data),
		}})
	}
	msg := map[string]any{"type": "user", "uuid": id, "message": map[string]any{"role": "user", "content": blocks}}
	if err := p.writeJSON(ctx, msg); err != nil {
		return fmt.Errorf("sending message: %w", err)
	}
	return nil
}
