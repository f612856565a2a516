package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// fileAttachment is an attachment served from memory; opened counts how
// often it was downloaded.
func fileAttachment(name, mime string, data []byte, declared int64, opened *int) platform.Attachment {
	return platform.Attachment{Name: name, Size: declared, Mime: mime, Open: func(ctx context.Context) (io.ReadCloser, error) {
		if opened != nil {
			*opened++
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
}

// lastTurn returns the text Claude received in the thread's session.
func lastTurn(t *testing.T, h *harness) string {
	t.Helper()
	hist := h.fa.history(sess1)
	if len(hist) == 0 {
		t.Fatal("no turn reached the agent")
	}
	return hist[len(hist)-1]
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestLargeMessageBecomesArtifact(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.ArtifactThreshold = 1000 })
	small := strings.Repeat("s", 1000)
	h.say("alice", "T1", small)
	h.rec.waitSend(t, "echo: sss")
	if got := lastTurn(t, h); got != small {
		t.Errorf("a message at the threshold was changed: %d bytes", len(got))
	}

	big := "Please review this log.\n" + strings.Repeat("line of a long log é\n", 300)
	h.say("alice", "T1", big)
	h.rec.waitSend(t, "was saved whole as .cc-connect/artifacts/")
	h.waitIdle()
	prompt := lastTurn(t, h)
	rel := ".cc-connect/artifacts/" + sha(big) + ".md"
	for _, want := range []string{rel, "sha256: " + sha(big), "Read that file in full", "Please review this log."} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if len(prompt) >= len(big) || strings.Contains(prompt, h.ws) || strings.Contains(prompt, os.TempDir()) {
		t.Errorf("prompt is %d bytes or names a host path:\n%s", len(prompt), prompt)
	}
	ws := h.e.routes.pool.normalize(h.ws)
	stored, err := os.ReadFile(filepath.Join(ws, rel))
	if err != nil || string(stored) != big {
		t.Fatalf("artifact = %d bytes, %v; want the whole message", len(stored), err)
	}
	if m := modeOf(t, filepath.Join(ws, rel)); m != 0o600 {
		t.Errorf("artifact mode = %o", m)
	}
	if m := modeOf(t, filepath.Join(ws, ".cc-connect", "artifacts")); m != 0o700 {
		t.Errorf("artifacts folder mode = %o", m)
	}
	if data, err := os.ReadFile(filepath.Join(ws, ".cc-connect", ".gitignore")); err != nil || string(data) != "*\n" {
		t.Errorf(".gitignore = %q, %v", data, err)
	}

	// The same content again is stored once.
	h.say("bob", "T1", big)
	h.rec.waitFor(t, "the second artifact notice", func([]recorded) bool {
		return len(h.rec.sends("was saved whole as "+rel)) == 2
	})
	h.waitIdle()
	entries, _ := os.ReadDir(filepath.Join(ws, ".cc-connect", "artifacts"))
	if len(entries) != 1 {
		t.Errorf("artifacts folder holds %d files, want 1", len(entries))
	}
}

func TestArtifactQuotaRefusal(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.ArtifactThreshold = 100
		o.ArtifactQuota = 500
	})
	h.say("alice", "T1", strings.Repeat("q", 1000))
	got := h.rec.waitSend(t, "is full")
	h.waitIdle()
	if !strings.Contains(got.Text, ".cc-connect/artifacts") || !strings.Contains(got.Text, "Nothing was sent to Claude") ||
		strings.Contains(got.Text, h.ws) {
		t.Errorf("refusal = %q", got.Text)
	}
	if n := len(h.fa.spawnsSnapshot()); n != 0 {
		t.Errorf("%d agent processes started for a refused message", n)
	}
	for _, c := range h.rec.kinds("react") {
		if c.Text == "white_check_mark" {
			t.Error("the refused message was marked done")
		}
	}
}

func TestAttachmentsDownloadedAndNamed(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.AttachmentMaxBytes = 4000 })
	var bigOpened, streamOpened int
	notes := "first note\nsecond note\n"
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	m := h.message("alice", "T1", "see the files")
	m.Attachments = []platform.Attachment{
		fileAttachment("../notes.txt", "text/plain", []byte(notes), int64(len(notes)), nil),
		fileAttachment("shot.png", "image/png", png, int64(len(png)), nil),
		fileAttachment("huge.bin", "application/octet-stream", nil, 20<<20, &bigOpened),
		fileAttachment("unsized.log", "text/plain", bytes.Repeat([]byte("z"), 5000), -1, &streamOpened),
		{Name: "broken.txt", Size: 3, Open: func(context.Context) (io.ReadCloser, error) {
			return nil, errors.New("GET https://files.example/secret-token/broken.txt: 500")
		}},
	}
	h.deliver(m)
	h.rec.waitSend(t, "echo: see the files")
	h.waitIdle()
	prompt := lastTurn(t, h)
	ws := h.e.routes.pool.normalize(h.ws)
	notesRel := ".cc-connect/attachments/" + sha(notes)[:16] + "-notes.txt"
	pngRel := ".cc-connect/attachments/" + sha(string(png))[:16] + "-shot.png"
	for _, want := range []string{
		"see the files", notesRel, pngRel, "first note\nsecond note", "not text",
		"huge.bin: not passed on (20.0 MB is over the 4 KB limit", "unsized.log: not passed on (it is over the",
		"broken.txt: not passed on (downloading it failed",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, ws) || strings.Contains(prompt, "secret-token") {
		t.Errorf("prompt names a host path or the download URL:\n%s", prompt)
	}
	if bigOpened != 0 || streamOpened != 1 {
		t.Errorf("huge.bin opened %d times (want 0: its size was known), unsized.log %d (want 1)", bigOpened, streamOpened)
	}
	refusal := h.rec.waitSend(t, "Not passed to Claude:")
	for _, want := range []string{"huge.bin", "unsized.log", "broken.txt"} {
		if !strings.Contains(refusal.Text, want) {
			t.Errorf("refusal lacks %s: %q", want, refusal.Text)
		}
	}
	if strings.Contains(refusal.Text, "secret-token") {
		t.Errorf("refusal shows the download error: %q", refusal.Text)
	}
	for rel, want := range map[string]string{notesRel: notes, pngRel: string(png)} {
		p := filepath.Join(ws, filepath.FromSlash(rel))
		data, err := os.ReadFile(p)
		if err != nil || string(data) != want {
			t.Errorf("%s = %q, %v", rel, data, err)
			continue
		}
		if m := modeOf(t, p); m != 0o600 {
			t.Errorf("%s mode = %o", rel, m)
		}
	}
	if m := modeOf(t, filepath.Join(ws, ".cc-connect", "attachments")); m != 0o700 {
		t.Errorf("attachments folder mode = %o", m)
	}
	entries, _ := os.ReadDir(filepath.Join(ws, ".cc-connect", "attachments"))
	if len(entries) != 2 {
		t.Errorf("attachments folder holds %d files, want the 2 passed on", len(entries))
	}
}

func TestTextAttachmentsCountTowardArtifact(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.ArtifactThreshold = 1000 })
	content := strings.Repeat("attached text line\n", 200)
	m := h.message("alice", "T1", "summarize")
	m.Attachments = []platform.Attachment{fileAttachment("a.md", "text/markdown", []byte(content), int64(len(content)), nil)}
	h.deliver(m)
	h.rec.waitSend(t, "was saved whole as .cc-connect/artifacts/")
	h.waitIdle()
	prompt := lastTurn(t, h)
	rel := regexp.MustCompile(`\.cc-connect/artifacts/[0-9a-f]{64}\.md`).FindString(prompt)
	if rel == "" || len(prompt) > 4000 {
		t.Fatalf("prompt (%d bytes) does not point to an artifact:\n%s", len(prompt), prompt)
	}
	stored, err := os.ReadFile(filepath.Join(h.e.routes.pool.normalize(h.ws), rel))
	if err != nil || !strings.Contains(string(stored), "summarize") || !strings.Contains(string(stored), content[:len(content)-1]) ||
		!strings.Contains(string(stored), ".cc-connect/attachments/") {
		t.Errorf("artifact = %d bytes, %v; want the message, the attachment's path and its text", len(stored), err)
	}
}

func TestAttachmentOnlyMessage(t *testing.T) {
	h := newHarness(t, nil)
	m := h.message("alice", "T1", "")
	m.Attachments = []platform.Attachment{fileAttachment("data.csv", "text/csv", []byte("a,b\n1,2\n"), 8, nil)}
	h.deliver(m)
	h.rec.waitSend(t, "echo: ")
	h.waitIdle()
	prompt := lastTurn(t, h)
	if !strings.Contains(prompt, "without a message") || !strings.Contains(prompt, "-data.csv") || !strings.Contains(prompt, "a,b\n1,2") {
		t.Errorf("prompt = %q", prompt)
	}
	if got := h.rec.sends("not passed to the agent"); len(got) != 0 {
		t.Errorf("old refusal still posted: %q", got)
	}
}

// refAttachment is a file the platform can serve again by ref, with its
// Open for the run it arrives in.
func refAttachment(h *harness, ref, name, mime string, data []byte, declared int64, opened *int) platform.Attachment {
	h.cfg.files.put(ref, data)
	a := fileAttachment(name, mime, data, declared, opened)
	a.Ref = ref
	return a
}

// TestAttachmentsSurviveRestart: a message queued with attachments when
// cc-connect stops is replayed from the journal with the same prompt. The
// files were not downloaded at acceptance (the turn had not come); the
// journal names them, and the restarted engine fetches them through the
// adapter's AttachmentOpener before the turn, once each.
func TestAttachmentsSurviveRestart(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		o.AttachmentMaxBytes = 4000
		o.ShutdownGrace = 50 * time.Millisecond
	})
	h.say("alice", "T1", "long [[WAIT]]")
	h.fa.waitFor(t, "the turn to wait", func(fa *fakeAgents) bool { return fa.waiting == 1 })

	var opened int
	notes := "first note\nsecond note\n"
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	m := h.message("alice", "T1", "see the files")
	m.Attachments = []platform.Attachment{
		refAttachment(h, "F-notes", "notes.txt", "text/plain", []byte(notes), int64(len(notes)), &opened),
		refAttachment(h, "F-shot", "shot.png", "image/png", png, int64(len(png)), &opened),
		refAttachment(h, "F-huge", "huge.bin", "application/octet-stream", nil, 20<<20, &opened),
	}
	h.deliver(m)
	h.rec.waitSend(t, "Queued (position 1)")

	h = h.restart()
	h.rec.waitSend(t, "echo: see the files")
	h.waitIdle()
	prompt := lastTurn(t, h)
	notesRel := ".cc-connect/attachments/" + sha(notes)[:16] + "-notes.txt"
	pngRel := ".cc-connect/attachments/" + sha(string(png))[:16] + "-shot.png"
	for _, want := range []string{
		"see the files", notesRel, "first note\nsecond note", pngRel, "not text",
		"huge.bin: not passed on (20.0 MB is over the 4 KB limit",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("replayed prompt lacks %q:\n%s", want, prompt)
		}
	}
	if opened != 0 {
		t.Errorf("attachments downloaded %d times before their turn", opened)
	}
	if a, b, c := h.cfg.files.openedCount("F-notes"), h.cfg.files.openedCount("F-shot"), h.cfg.files.openedCount("F-huge"); a != 1 || b != 1 || c != 0 {
		t.Errorf("fetched again %d, %d and %d times, want once each within the limit and never the one over it", a, b, c)
	}
	if got := h.rec.sends("Not passed to Claude:"); len(got) != 1 || !strings.Contains(got[0], "huge.bin: 20.0 MB is over the 4 KB limit") {
		t.Errorf("refusals = %q, want one, before the turn", got)
	}
}

// TestAttachmentStoredByLandedVersion: a message the version before
// journaled with its files already stored (their paths, sizes and SHA-256)
// replays from those files, without a download; a text file changed since
// it was stored is listed but not inlined, so the prompt never carries
// content other than what the user sent.
func TestAttachmentStoredByLandedVersion(t *testing.T) {
	h := newHarness(t, nil)
	h.stop()
	ws := h.e.routes.pool.normalize(h.ws)
	store := func(name, content string) inbox.Attachment {
		rel := ".cc-connect/attachments/" + sha(content)[:16] + "-" + name
		if err := os.MkdirAll(filepath.Join(ws, ".cc-connect", "attachments"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, filepath.FromSlash(rel)), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return inbox.Attachment{Name: name, Mime: "text/plain", Path: rel, Size: int64(len(content)), SHA256: sha(content), Text: true}
	}
	kept, changed := store("kept.txt", "kept as sent\n"), store("a.txt", "original\n")
	if err := os.WriteFile(filepath.Join(ws, filepath.FromSlash(changed.Path)), []byte("swapped\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := inbox.Open(conv.InboxPath(h.opts.StateDir, t1Key), inbox.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := h.message("alice", "T1", "read these")
	if err := in.Append(inbox.Entry{ID: m.ID, Platform: "fake", Channel: "C1", Thread: "T1", UserID: "alice", Text: m.Text,
		Attachments: []inbox.Attachment{kept, changed}}); err != nil {
		t.Fatal(err)
	}
	in.Close()

	h = h.restart()
	h.rec.waitSend(t, "echo: read these")
	h.waitIdle()
	prompt := lastTurn(t, h)
	if !strings.Contains(prompt, "kept as sent") || !strings.Contains(prompt, kept.Path) {
		t.Errorf("prompt lacks the stored file:\n%s", prompt)
	}
	if strings.Contains(prompt, "swapped") || strings.Contains(prompt, "original") || !strings.Contains(prompt, changed.Path) ||
		!strings.Contains(prompt, "changed in the workspace") {
		t.Errorf("prompt = %q, want the changed file listed, not inlined", prompt)
	}
}

// TestAttachmentFetchIsNotOnTheAcceptPath: HandleMessage returns (and the
// adapter acks) while the file is still downloading: the download runs on
// the session goroutine, before the turn. There it is bounded: a download
// that does not end is given up after fetchTimeout, and the message runs
// with that attachment refused.
func TestAttachmentFetchIsNotOnTheAcceptPath(t *testing.T) {
	h := newHarness(t, nil)
	h.e.convs.SetTestHooks(conv.TestHooks{FetchTimeout: 50 * time.Millisecond})
	// The download waits for HandleMessage to return: were it on the
	// accept path, HandleMessage would never return.
	returned := make(chan struct{})
	m := h.message("alice", "T1", "with a slow file")
	m.Attachments = []platform.Attachment{{Name: "slow.txt", Size: 10, Open: func(ctx context.Context) (io.ReadCloser, error) {
		select {
		case <-returned:
		case <-time.After(waitLimit):
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}}}
	type result struct {
		res platform.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := h.e.HandleMessage(context.Background(), m)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.res.Status != platform.Queued {
			t.Fatalf("HandleMessage = %+v, %v", r.res, r.err)
		}
	case <-time.After(waitLimit):
		t.Fatal("HandleMessage did not return: the download is on the accept path")
	}
	close(returned)
	refusal := h.rec.waitSend(t, "Not passed to Claude:")
	if !strings.Contains(refusal.Text, "slow.txt: downloading it took too long") {
		t.Errorf("refusal = %q", refusal.Text)
	}
	h.rec.waitSend(t, "echo: with a slow file")
	h.waitIdle()
	if prompt := lastTurn(t, h); !strings.Contains(prompt, "slow.txt: not passed on (downloading it took too long)") {
		t.Errorf("prompt = %q", prompt)
	}
}

// TestAttachmentLimitAtInt64Max: the largest limit an engine can be given
// (the config refuses one that large) still stores the file, not an empty
// one: the read bound used to wrap to a negative number.
func TestAttachmentLimitAtInt64Max(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.AttachmentMaxBytes = math.MaxInt64 })
	m := h.message("alice", "T1", "see the file")
	m.Attachments = []platform.Attachment{fileAttachment("notes.txt", "text/plain", []byte("the notes"), 9, nil)}
	h.deliver(m)
	h.rec.waitSend(t, "echo: ")
	h.waitIdle()
	if got := lastTurn(t, h); !strings.Contains(got, "the notes") {
		t.Errorf("Claude got %q, want the file's content inlined", got)
	}
}
