// Package artifact keeps large user prompts whole. A chat message (with its
// text attachments) over a size threshold is stored in the workspace as a
// content-addressed file, and Claude gets a bounded prompt that points to
// it, instead of a truncated message.
//
// Files live in <workspace>/.cc-connect/artifacts/ (folders 0700, files
// 0600, a .gitignore of "*" in .cc-connect/ so they are never committed;
// 0750 and 0640 of the agent's group when the agent runs as another user).
// The package refuses symbolic links and entries of another owner on that
// path, and never deletes a user's files: past the quota it refuses with
// ErrQuotaExceeded. It must not let a host path outside the workspace reach
// the model or the chat: prompts name files relative to the workspace, and
// errors carry a UserMessage without host paths.
package artifact

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Defaults used when Options leaves a field at zero.
const (
	DefaultThreshold       = 16 << 10 // bytes of message text
	DefaultQuota     int64 = 64 << 20 // bytes in the artifacts folder
	DefaultHeadBytes       = 2 << 10  // bytes of the message shown inline
)

// Names of the folders inside the workspace.
const (
	StateDirName     = ".cc-connect"
	ArtifactsDirName = "artifacts"
)

// relArtifactsDir is the artifacts folder relative to the workspace, with
// forward slashes as it is shown to Claude and users.
const relArtifactsDir = StateDirName + "/" + ArtifactsDirName

// Options configure a Store; zero values take the defaults.
type Options struct {
	// Threshold is the size in bytes above which a message is stored as an
	// artifact. Zero means DefaultThreshold.
	Threshold int
	// Quota bounds the bytes of the artifacts folder. Zero means
	// DefaultQuota.
	Quota int64
	// HeadBytes is how much of the message Prepare shows inline. Zero means
	// DefaultHeadBytes; negative shows none.
	HeadBytes int
	// ReaderGID, when above zero, is the group of the agent's OS user when
	// it runs as another user than cc-connect (agent.user): folders become
	// 0750 and files 0640 of that group, so the agent can read what it is
	// pointed at but change none of it. Zero keeps them private (0700,
	// 0600).
	ReaderGID int
}

// Artifact is one stored message.
type Artifact struct {
	// RelPath is the file's path relative to the workspace, with forward
	// slashes: .cc-connect/artifacts/<sha256>.md
	RelPath string
	Size    int64
	SHA256  string // hex
}

// Store writes artifacts into one workspace. It is safe for concurrent
// use, and Puts into the same workspace path are serialized across Stores
// of this process so that two writes cannot both pass the quota.
type Store struct {
	workspace string
	opts      Options
}

// NewStore returns a Store for the workspace folder (already normalized by
// the caller). It touches nothing on disk until Put.
func NewStore(workspace string, opts Options) *Store {
	if opts.Threshold <= 0 {
		opts.Threshold = DefaultThreshold
	}
	if opts.Quota <= 0 {
		opts.Quota = DefaultQuota
	}
	if opts.HeadBytes == 0 {
		opts.HeadBytes = DefaultHeadBytes
	}
	return &Store{workspace: workspace, opts: opts}
}

// Exceeds reports whether a message of n bytes is over the threshold and so
// must be stored rather than sent inline.
func (s *Store) Exceeds(n int) bool { return n > s.opts.Threshold }

// Prepare returns text as it is when it is within the threshold. Otherwise
// it stores text with Put and returns BoundedPrompt for it, with stored
// true. On error nothing should be sent to Claude; UserMessage(err) is what
// to tell the user.
func (s *Store) Prepare(text string) (prompt string, a Artifact, stored bool, err error) {
	if !s.Exceeds(len(text)) {
		return text, Artifact{}, false, nil
	}
	a, err = s.Put([]byte(text))
	if err != nil {
		return "", Artifact{}, false, err
	}
	return BoundedPrompt(text, a, s.opts.HeadBytes), a, true, nil
}

// BoundedPrompt is what Claude receives in place of a large message: where
// the whole message is (relative to the workspace, which is Claude's working
// directory), its size and hash, the instruction to read it whole, and the
// first headBytes of text (cut on a UTF-8 boundary; none when headBytes <=
// 0) so that Claude knows what it is about before reading.
func BoundedPrompt(text string, a Artifact, headBytes int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The user's message is too long to include here (%s), so cc-connect saved it whole in the workspace:\n\n", humanBytes(a.Size))
	fmt.Fprintf(&b, "  path: %s\n  size: %d bytes\n  sha256: %s\n\n", a.RelPath, a.Size, a.SHA256)
	b.WriteString("Read that file in full before you answer: it is the user's actual message, including any attached text files. " +
		"If it is long, read it in several parts until you reach the end.")
	head := cutUTF8(text, headBytes)
	if head == "" {
		b.WriteString("\n")
		return b.String()
	}
	fmt.Fprintf(&b, " Do not answer from the excerpt below alone.\n\nIts first %d bytes, for orientation:\n\n<excerpt>\n%s\n</excerpt>\n", len(head), head)
	return b.String()
}

// cutUTF8 returns at most n bytes of s, never splitting a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
