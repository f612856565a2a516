package conv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/artifact"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// DefaultAttachmentMaxBytes is the largest attachment passed on when
// Options.AttachmentMaxBytes is zero.
const DefaultAttachmentMaxBytes int64 = 10 << 20

// fetchTimeout bounds fetching all the attachments of one message before
// its turn; Engine.fetchTimeout holds it (tests shorten it).
const fetchTimeout = 2 * time.Minute

// errNotPassed means the message was not sent to Claude and the user was
// already told why (a store refusal, say); the turn just ends.
var errNotPassed = errors.New("message not passed to the agent")

func (st *settings) attachmentMax() int64 {
	if st.opts.AttachmentMaxBytes > 0 {
		return st.opts.AttachmentMaxBytes
	}
	return DefaultAttachmentMaxBytes
}

func (st *settings) artifactStore(workspace string) *artifact.Store {
	return st.artifactStoreFor(workspace, binding.Binding{})
}

// artifactStoreFor is artifactStore with b's own files limits.
func (st *settings) artifactStoreFor(workspace string, b binding.Binding) *artifact.Store {
	opts := artifact.Options{Threshold: st.opts.ArtifactThreshold, Quota: st.opts.ArtifactQuota}
	if t := b.Setup.ArtifactThreshold; t != nil {
		opts.Threshold = *t
	}
	if q := b.Setup.ArtifactQuota; q != nil {
		opts.Quota = *q
	}
	if c := agentproc.Credential(st.opts.Agent); c != nil {
		// The agent runs as another user: let it read what it is
		// pointed at.
		opts.ReaderGID = int(c.Gid)
	}
	return artifact.NewStore(workspace, opts)
}

// journaledFile is one attachment of a queued message: as the platform
// handed it over in this run (open set), as the journal names it for a
// replay (Ref), or as an earlier version stored it at acceptance.
type journaledFile struct {
	inbox.Attachment
	open func(ctx context.Context) (io.ReadCloser, error)
}

// filesOf are a message's attachments as they are queued with it.
func filesOf(m platform.Message) []journaledFile {
	out := make([]journaledFile, 0, len(m.Attachments))
	for _, a := range m.Attachments {
		out = append(out, journaledFile{Attachment: inbox.Attachment{Name: a.Name, Mime: a.Mime, Ref: a.Ref, Declared: a.Size}, open: a.Open})
	}
	return out
}

// attacher readies a message's prompt before its turn: the shell notes
// waiting, the artifact a long text becomes, the attachments fetched now
// (bounded, through the adapter registered now) and stored in the
// workspace.
type attacher struct {
	cfg          *settings
	chat         *relay
	rb           *recordBook
	binding      func() binding.Binding // in force now
	ws           func() string          // the conversation's workspace now
	bg           context.Context
	stopping     <-chan struct{}
	fetchTimeout time.Duration
	log          *slog.Logger
}

// prepare turns a queued message into what Claude receives: the text with
// its attachments (fetched now, on the session goroutine, into the
// workspace's private folder, and named by their workspace-relative paths,
// text ones inlined), stored as an artifact when it is over the threshold,
// and preceded by the notes of the !sh commands run since the last turn.
// It returns the item with that prompt and the notes it took, so that they
// can be put back if the message never reaches Claude. A compaction
// request goes as it is. A message whose sender was taken off the allow
// list while it waited is not passed on; a run (a schedule's, a webhook's)
// is the config's and has no place in that list.
func (at *attacher) prepare(it workItem) (workItem, string, error) {
	if it.run == nil && !at.binding().Allowed(it.msg.UserID) { // a run needs no place in the list (trigger.go)
		at.log.Info("Dropped a queued message: its sender is no longer allowed", "user_id", it.msg.UserID, "user_name", it.msg.UserName)
		at.chat.send(fmt.Sprintf("A message from %s was not passed to Claude: they are no longer allowed here.",
			orDefault(it.msg.UserName, it.msg.UserID)))
		return it, "", errNotPassed
	}
	if IsCompaction(it.msg.Text) {
		return it, "", nil
	}
	store := at.cfg.artifactStoreFor(at.ws(), at.binding())
	files := at.fetchAttachments(it.files, store)
	if note := refusalNote(files); note != "" {
		at.chat.send(note)
	}
	text := withAttachments(at.ws(), it.msg.Text, files, at.log)
	it.images = imagesOf(at.ws(), files, at.log)
	prompt, a, stored, err := store.Prepare(text)
	if err != nil {
		at.log.Error("Storing a large message failed; not sent", "error", err, "size", len(text))
		at.chat.send(artifact.UserMessage(err))
		return it, "", errNotPassed
	}
	if stored {
		at.log.Info("Stored a large message as an artifact", "artifact", a.RelPath, "size", a.Size, "sha256", a.SHA256)
		at.chat.send(fmt.Sprintf("Your message is long (%s), so it was saved whole as %s in the workspace and Claude was asked to read it there.",
			humanSize(a.Size), a.RelPath))
	}
	notes := at.rb.takeShellNotes()
	if notes != "" {
		prompt = notes + "\n\n" + prompt
	}
	// The prompt holds the files now: a retry of this item must not add
	// them again.
	it.msg.Text, it.files = prompt, nil
	return it, notes, nil
}

// fetchAttachments downloads the message's attachments and stores them in
// the workspace's .cc-connect/attachments/. It runs after the message was
// journaled (the journal names the files, so a replay after a restart
// fetches them again) and before its turn, on the session goroutine, so it
// holds up this conversation only; it is bounded by fetchTimeout for all
// the files of the message together, and by shutdown. An attachment that
// cannot be passed on comes back with the reason (refusalNote tells the
// user); one stored at acceptance by an earlier version is taken as it is.
func (at *attacher) fetchAttachments(files []journaledFile, store *artifact.Store) []inbox.Attachment {
	if len(files) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(at.bg, at.fetchTimeout)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-at.stopping:
			cancel()
		case <-stop:
		}
	}()
	opener := at.chat.opener()
	out := make([]inbox.Attachment, 0, len(files))
	for _, f := range files {
		if f.Stored() {
			out = append(out, f.Attachment)
			continue
		}
		open := f.open
		if open == nil && opener != nil && f.Ref != "" {
			at := platform.Attachment{Name: f.Name, Size: f.Declared, Mime: f.Mime, Ref: f.Ref}
			open = func(ctx context.Context) (io.ReadCloser, error) { return opener(ctx, at) }
		}
		out = append(out, fetchAttachment(ctx, store, f.Attachment, open, at.cfg.attachmentMaxFor(at.binding()), at.log))
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
// each listed by its path in the workspace ws, the text ones also inlined
// (so they count toward the artifact threshold), the refused ones with the
// reason.
func withAttachments(ws, text string, files []inbox.Attachment, log *slog.Logger) string {
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
			c, err := readStored(ws, f)
			if err != nil {
				log.Warn("Reading a stored attachment back failed; it is listed, not included", "attachment", f.Path, "error", err)
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
func readStored(ws string, f inbox.Attachment) (string, error) {
	root, err := os.OpenRoot(ws)
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

// fetchAttachment downloads one attachment (at, through open) within the
// size limit and stores it. Errors become a refusal that names no host
// path.
func fetchAttachment(ctx context.Context, store *artifact.Store, at inbox.Attachment,
	open func(context.Context) (io.ReadCloser, error), limit int64, log *slog.Logger) inbox.Attachment {
	got := inbox.Attachment{Name: at.Name, Mime: at.Mime}
	tooBig := func(size int64) string {
		return fmt.Sprintf("%s is over the %s limit for attachments", humanSize(size), humanSize(limit))
	}
	if at.Declared > limit {
		log.Info("Refused an attachment over the size limit", "attachment", displayName(at.Name), "size", at.Declared, "limit", limit)
		got.Refusal = tooBig(at.Declared)
		return got
	}
	if open == nil {
		got.Refusal = "the platform gave no way to download it"
		return got
	}
	data, err := readLimited(ctx, open, limit)
	switch {
	case errors.Is(err, errTooBig):
		log.Info("Refused an attachment over the size limit", "attachment", displayName(at.Name), "limit", limit)
		got.Refusal = fmt.Sprintf("it is over the %s limit for attachments", humanSize(limit))
		return got
	case err != nil && ctx.Err() != nil:
		log.Warn("Downloading an attachment took too long", "attachment", displayName(at.Name), "error", err)
		got.Refusal = "downloading it took too long"
		return got
	case err != nil:
		log.Warn("Downloading an attachment failed", "attachment", displayName(at.Name), "error", err)
		got.Refusal = "downloading it failed (the cc-connect log has the details)"
		return got
	}
	a, err := store.PutAttachment(at.Name, data)
	if err != nil {
		log.Error("Storing an attachment failed", "attachment", displayName(at.Name), "error", err)
		got.Refusal = storeRefusal(err)
		return got
	}
	log.Info("Stored an attachment", "attachment", a.RelPath, "size", a.Size)
	got.Path, got.Size, got.SHA256, got.Text = a.RelPath, a.Size, a.SHA256, isText(data)
	return got
}

var errTooBig = errors.New("attachment over the size limit")

func readLimited(ctx context.Context, open func(context.Context) (io.ReadCloser, error), limit int64) ([]byte, error) {
	r, err := open(ctx)
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
	return orDefault(Quote(strings.Join(strings.Fields(name), " "), 80), "(unnamed)")
}
