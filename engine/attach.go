package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/artifact"
	"github.com/cc-connect/cc-connect/platform"
)

// DefaultAttachmentMaxBytes is the largest attachment passed on when
// Options.AttachmentMaxBytes is zero.
const DefaultAttachmentMaxBytes int64 = 10 << 20

// downloadTimeout bounds fetching one attachment from the platform.
const downloadTimeout = 2 * time.Minute

// errNotPassed means the message was not sent to Claude and the user was
// already told why (a store refusal, say); the turn just ends.
var errNotPassed = errors.New("message not passed to the agent")

func (e *Engine) attachmentMax() int64 {
	if e.opts.AttachmentMaxBytes > 0 {
		return e.opts.AttachmentMaxBytes
	}
	return DefaultAttachmentMaxBytes
}

func (e *Engine) artifactStore(workspace string) *artifact.Store {
	return artifact.NewStore(workspace, artifact.Options{Threshold: e.opts.ArtifactThreshold, Quota: e.opts.ArtifactQuota})
}

// prepareTurn turns a queued message into what Claude receives: the text
// with its attachments (downloaded into the workspace's private folder and
// named by their workspace-relative paths, text ones inlined), stored as
// an artifact when it is over the threshold, and preceded by the notes of
// the !sh commands run since the last turn. It returns the item with that
// prompt and the notes it took, so that they can be put back if the
// message never reaches Claude. A compaction request goes as it is.
func (s *session) prepareTurn(it workItem) (workItem, string, error) {
	if isCompaction(it.msg.Text) {
		return it, "", nil
	}
	store := s.e.artifactStore(s.ws.Path)
	text := s.withAttachments(store, it.msg)
	prompt, a, stored, err := store.Prepare(text)
	if err != nil {
		s.log.Error("Storing a large message failed; not sent", "error", err, "size", len(text))
		s.send(s.e.bg, artifact.UserMessage(err))
		return it, "", errNotPassed
	}
	if stored {
		s.log.Info("Stored a large message as an artifact", "artifact", a.RelPath, "size", a.Size, "sha256", a.SHA256)
		s.send(s.e.bg, fmt.Sprintf("Your message is long (%s), so it was saved whole as %s in the workspace and Claude was asked to read it there.",
			humanSize(a.Size), a.RelPath))
	}
	notes := s.takeShellNotes()
	if notes != "" {
		prompt = notes + "\n\n" + prompt
	}
	it.msg.Text = prompt
	return it, notes, nil
}

// keepUnsentNotes puts the shell notes back when the turn ended before the
// message reached Claude, so they go with the next one.
func (s *session) keepUnsentNotes(notes string, err error) {
	if errors.Is(err, errStoppedWaiting) || errors.Is(err, errStopped) {
		s.putBackShellNotes(notes)
	}
}

// attached is one attachment as the prompt describes it.
type attached struct {
	name    string
	a       artifact.Artifact
	mime    string
	text    string // the content, when it is text
	refusal string // why it was not passed on ("" when it was)
}

// withAttachments returns the message text followed by its attachments:
// each stored in .cc-connect/attachments/ and listed by its path, the text
// ones also inlined (so they count toward the artifact threshold). An
// attachment that cannot be passed on is listed with the reason, and the
// user is told in the thread.
func (s *session) withAttachments(store *artifact.Store, m platform.Message) string {
	if len(m.Attachments) == 0 {
		return m.Text
	}
	list := make([]attached, 0, len(m.Attachments))
	var refusals []string
	for _, at := range m.Attachments {
		got := s.fetchAttachment(store, at)
		if got.refusal != "" {
			refusals = append(refusals, fmt.Sprintf("%s: %s", displayName(at.Name), got.refusal))
		}
		list = append(list, got)
	}
	if len(refusals) > 0 {
		s.send(s.e.bg, "Not passed to Claude:\n- "+strings.Join(refusals, "\n- "))
	}
	var b strings.Builder
	if strings.TrimSpace(m.Text) != "" {
		b.WriteString(m.Text)
		b.WriteString("\n\n")
	} else {
		b.WriteString("(The user sent files without a message.)\n\n")
	}
	b.WriteString("Files the user attached to this message, saved in the workspace (paths relative to it):\n")
	for _, f := range list {
		if f.refusal != "" {
			fmt.Fprintf(&b, "- %s: not passed on (%s)\n", displayName(f.name), f.refusal)
			continue
		}
		kind := "text, included below"
		if f.text == "" && f.a.Size > 0 {
			kind = "not text: open it with your tools if you need it"
		}
		fmt.Fprintf(&b, "- %s (sent as %q, %s, %s; %s)\n", f.a.RelPath, displayName(f.name), humanSize(f.a.Size), orDefault(f.mime, "unknown type"), kind)
	}
	for _, f := range list {
		if f.refusal == "" && f.text != "" {
			fmt.Fprintf(&b, "\n<attachment path=%q>\n%s\n</attachment>\n", f.a.RelPath, strings.TrimRight(f.text, "\n"))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// fetchAttachment downloads one attachment within the size limit and
// stores it. Errors become a refusal that names no host path.
func (s *session) fetchAttachment(store *artifact.Store, at platform.Attachment) attached {
	limit := s.e.attachmentMax()
	got := attached{name: at.Name, mime: at.Mime}
	tooBig := func(size int64) string {
		return fmt.Sprintf("%s is over the %s limit for attachments", humanSize(size), humanSize(limit))
	}
	if at.Size > limit {
		s.log.Info("Refused an attachment over the size limit", "attachment", displayName(at.Name), "size", at.Size, "limit", limit)
		got.refusal = tooBig(at.Size)
		return got
	}
	if at.Open == nil {
		got.refusal = "the platform gave no way to download it"
		return got
	}
	ctx, cancel := context.WithTimeout(s.e.bg, downloadTimeout)
	defer cancel()
	data, err := readLimited(ctx, at, limit)
	switch {
	case errors.Is(err, errTooBig):
		s.log.Info("Refused an attachment over the size limit", "attachment", displayName(at.Name), "limit", limit)
		got.refusal = fmt.Sprintf("it is over the %s limit for attachments", humanSize(limit))
		return got
	case err != nil:
		s.log.Warn("Downloading an attachment failed", "attachment", displayName(at.Name), "error", err)
		got.refusal = "downloading it failed (the cc-connect log has the details)"
		return got
	}
	a, err := store.PutAttachment(at.Name, data)
	if err != nil {
		s.log.Error("Storing an attachment failed", "attachment", displayName(at.Name), "error", err)
		got.refusal = storeRefusal(err)
		return got
	}
	s.log.Info("Stored an attachment", "attachment", a.RelPath, "size", a.Size)
	got.a = a
	if isText(data) {
		got.text = string(data)
	}
	return got
}

var errTooBig = errors.New("attachment over the size limit")

func readLimited(ctx context.Context, at platform.Attachment, limit int64) ([]byte, error) {
	r, err := at.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening attachment: %w", err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading attachment: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, errTooBig
	}
	return data, nil
}

// storeRefusal explains an artifact store error without host paths.
func storeRefusal(err error) string {
	var ae *artifact.Error
	if !errors.As(err, &ae) {
		return "storing it in the workspace failed (the cc-connect log has the details)"
	}
	switch {
	case errors.Is(err, artifact.ErrQuotaExceeded):
		return fmt.Sprintf("the workspace's attachments folder (%s) is full: %s used of %s, and this file needs %s; an admin can clear old files there or raise the quota",
			ae.RelPath, humanSize(ae.Used), humanSize(ae.Quota), humanSize(ae.Need))
	case errors.Is(err, artifact.ErrUnsafePath):
		return fmt.Sprintf("cc-connect refused to store it: %s %s; an admin should check that path in the workspace", ae.RelPath, ae.Reason)
	}
	return "storing it in the workspace failed (the cc-connect log has the details)"
}

// isText says whether data reads as text: UTF-8 without NUL bytes.
func isText(data []byte) bool {
	return len(data) > 0 && utf8.Valid(data) && !bytes.ContainsRune(data, 0)
}

// displayName is a user-sent file name fit for one line of chat or prompt.
func displayName(name string) string {
	return orDefault(quote(strings.Join(strings.Fields(name), " "), 80), "(unnamed)")
}
