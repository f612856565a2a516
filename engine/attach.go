package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/artifact"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// DefaultAttachmentMaxBytes is the largest attachment passed on when
// Options.AttachmentMaxBytes is zero.
const DefaultAttachmentMaxBytes int64 = 10 << 20

// fetchTimeout bounds fetching all the attachments of one message at
// acceptance; Engine.fetchTimeout holds it (tests shorten it).
const fetchTimeout = 2 * time.Minute

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
	opts := artifact.Options{Threshold: e.opts.ArtifactThreshold, Quota: e.opts.ArtifactQuota}
	if c := agentproc.Credential(e.opts.Agent); c != nil {
		// The agent runs as another user: let it read what it is
		// pointed at.
		opts.ReaderGID = int(c.Gid)
	}
	return artifact.NewStore(workspace, opts)
}

// prepareTurn turns a queued message into what Claude receives: the text
// with its attachments (stored at acceptance in the workspace's private
// folder and named by their workspace-relative paths, text ones inlined),
// stored as an artifact when it is over the threshold, and preceded by the
// notes of the !sh commands run since the last turn. It returns the item
// with that prompt and the notes it took, so that they can be put back if
// the message never reaches Claude. A compaction request goes as it is.
// A message whose sender was taken off the allow list while it waited is
// not passed on.
func (s *session) prepareTurn(it workItem) (workItem, string, error) {
	if !s.liveBinding().allowed(it.msg.UserID) {
		s.log.Info("Dropped a queued message: its sender is no longer allowed", "user_id", it.msg.UserID, "user_name", it.msg.UserName)
		s.send(s.e.bg, fmt.Sprintf("A message from %s was not passed to Claude: they are no longer allowed here.",
			orDefault(it.msg.UserName, it.msg.UserID)))
		return it, "", errNotPassed
	}
	if isCompaction(it.msg.Text) {
		return it, "", nil
	}
	store := s.e.artifactStore(s.ws.Path)
	text := s.withAttachments(it.msg.Text, it.files)
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
	// The prompt holds the files now: a retry of this item must not add
	// them again.
	it.msg.Text, it.files = prompt, nil
	return it, notes, nil
}

// keepUnsentNotes puts the shell notes back when the turn ended before the
// message reached Claude, so they go with the next one.
func (s *session) keepUnsentNotes(notes string, err error) {
	if errors.Is(err, errStoppedWaiting) || errors.Is(err, errStopped) {
		s.putBackShellNotes(notes)
	}
}

// fetchAttachments downloads a message's attachments and stores them in
// the workspace's .cc-connect/attachments/, before the message is
// journaled: the journal keeps what this returns, so that a replay after a
// restart sends the same prompt without the platform. An attachment that
// cannot be passed on comes back with the reason (refusalNote tells the
// user).
//
// It runs on the adapter's goroutine, before HandleMessage returns, so it
// is bounded: by ctx (the adapter's, which ends when the adapter stops) and
// by fetchTimeout for all the attachments of the message together. That is
// the longest the platform's next message can wait on it: Slack
// acknowledges its events before handling them, but Telegram and Discord
// hand messages to the engine one at a time.
func (s *session) fetchAttachments(ctx context.Context, m platform.Message) []inbox.Attachment {
	ctx, cancel := context.WithTimeout(ctx, s.e.fetchTimeout)
	defer cancel()
	store := s.e.artifactStore(s.ws.Path)
	out := make([]inbox.Attachment, 0, len(m.Attachments))
	for _, at := range m.Attachments {
		out = append(out, s.fetchAttachment(ctx, store, at))
	}
	return out
}

// refusalNote tells the user which attachments were not passed on, and
// why; "" when all were.
func refusalNote(files []inbox.Attachment) string {
	var refusals []string
	for _, f := range files {
		if f.Refusal != "" {
			refusals = append(refusals, fmt.Sprintf("%s: %s", displayName(f.Name), f.Refusal))
		}
	}
	if len(refusals) == 0 {
		return ""
	}
	return "Not passed to Claude:\n- " + strings.Join(refusals, "\n- ")
}

// withAttachments returns the message text followed by its attachments:
// each listed by its path in the workspace, the text ones also inlined (so
// they count toward the artifact threshold), the refused ones with the
// reason.
func (s *session) withAttachments(text string, files []inbox.Attachment) string {
	if len(files) == 0 {
		return text
	}
	var b strings.Builder
	if strings.TrimSpace(text) != "" {
		b.WriteString(text)
		b.WriteString("\n\n")
	} else {
		b.WriteString("(The user sent files without a message.)\n\n")
	}
	b.WriteString("Files the user attached to this message, saved in the workspace (paths relative to it):\n")
	contents := make([]string, len(files))
	for i, f := range files {
		if f.Refusal != "" {
			fmt.Fprintf(&b, "- %s: not passed on (%s)\n", displayName(f.Name), f.Refusal)
			continue
		}
		kind := "not text: open it with your tools if you need it"
		if f.Text {
			kind = "text, included below"
			c, err := s.readStored(f)
			if err != nil {
				s.log.Warn("Reading a stored attachment back failed; it is listed, not included", "attachment", f.Path, "error", err)
				kind = "text, but it changed in the workspace since it was received, so it is not included"
			}
			contents[i] = c
		} else if f.Size == 0 {
			kind = "text, included below" // an empty file: nothing to open
		}
		fmt.Fprintf(&b, "- %s (sent as %q, %s, %s; %s)\n", f.Path, displayName(f.Name), humanSize(f.Size), orDefault(f.Mime, "unknown type"), kind)
	}
	for i, f := range files {
		if contents[i] != "" {
			fmt.Fprintf(&b, "\n<attachment path=%q>\n%s\n</attachment>\n", f.Path, strings.TrimRight(contents[i], "\n"))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// readStored reads a text attachment back from the workspace for the
// prompt. Only the bytes whose SHA-256 was recorded when the message was
// accepted are used: the prompt is the one the message was accepted with,
// and a file replaced since (by a link elsewhere, say) is never inlined.
func (s *session) readStored(f inbox.Attachment) (string, error) {
	root, err := os.OpenRoot(s.ws.Path)
	if err != nil {
		return "", fmt.Errorf("opening the workspace: %w", err)
	}
	defer root.Close()
	fh, err := root.Open(filepath.FromSlash(f.Path))
	if err != nil {
		return "", fmt.Errorf("opening %s: %w", f.Path, err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, f.Size+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", f.Path, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != f.SHA256 {
		return "", fmt.Errorf("%s: %w", f.Path, errChanged)
	}
	return string(data), nil
}

// errChanged means a stored attachment no longer holds what was received.
var errChanged = errors.New("content differs from the one received")

// fetchAttachment downloads one attachment within the size limit and
// stores it. Errors become a refusal that names no host path.
func (s *session) fetchAttachment(ctx context.Context, store *artifact.Store, at platform.Attachment) inbox.Attachment {
	limit := s.e.attachmentMax()
	got := inbox.Attachment{Name: at.Name, Mime: at.Mime}
	tooBig := func(size int64) string {
		return fmt.Sprintf("%s is over the %s limit for attachments", humanSize(size), humanSize(limit))
	}
	if at.Size > limit {
		s.log.Info("Refused an attachment over the size limit", "attachment", displayName(at.Name), "size", at.Size, "limit", limit)
		got.Refusal = tooBig(at.Size)
		return got
	}
	if at.Open == nil {
		got.Refusal = "the platform gave no way to download it"
		return got
	}
	data, err := readLimited(ctx, at, limit)
	switch {
	case errors.Is(err, errTooBig):
		s.log.Info("Refused an attachment over the size limit", "attachment", displayName(at.Name), "limit", limit)
		got.Refusal = fmt.Sprintf("it is over the %s limit for attachments", humanSize(limit))
		return got
	case err != nil && ctx.Err() != nil:
		s.log.Warn("Downloading an attachment took too long", "attachment", displayName(at.Name), "error", err)
		got.Refusal = "downloading it took too long"
		return got
	case err != nil:
		s.log.Warn("Downloading an attachment failed", "attachment", displayName(at.Name), "error", err)
		got.Refusal = "downloading it failed (the cc-connect log has the details)"
		return got
	}
	a, err := store.PutAttachment(at.Name, data)
	if err != nil {
		s.log.Error("Storing an attachment failed", "attachment", displayName(at.Name), "error", err)
		got.Refusal = storeRefusal(err)
		return got
	}
	s.log.Info("Stored an attachment", "attachment", a.RelPath, "size", a.Size)
	got.Path, got.Size, got.SHA256, got.Text = a.RelPath, a.Size, a.SHA256, isText(data)
	return got
}

var errTooBig = errors.New("attachment over the size limit")

func readLimited(ctx context.Context, at platform.Attachment, limit int64) ([]byte, error) {
	r, err := at.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening attachment: %w", err)
	}
	defer r.Close()
	// One byte past the limit tells a file over it; the limit itself may
	// be the largest int64 (limit+1 would wrap and read nothing).
	data, err := io.ReadAll(io.LimitReader(r, min(limit, math.MaxInt64-1)+1))
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
