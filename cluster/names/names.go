// Package names spells the NATS names cc-connect's cluster uses: subject
// tokens escaped from platform ids, the ingress stream and its subjects,
// the durable consumer of a binding, the key-value bucket and its keys.
// Every host computes them from the same config, so they must be pure
// functions of their inputs; this package owns that spelling and nothing
// else.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrBadToken: the text is not an escaped token (Unescape). Callers treat
// the subject or key it came from as foreign.
var ErrBadToken = errors.New("not an escaped token")

// MaxTokenLen bounds one escaped token. Platform ids are far shorter; an
// id that escapes longer than this is refused rather than sent as a
// subject that a server's control line limit could cut.
const MaxTokenLen = 256

// Escape turns any text into one token that is valid both in a NATS
// subject and in a key-value key: ASCII letters, digits and '-' stay, every
// other byte becomes "=XX" (upper-case hex). '_' is escaped too, so that
// callers may join escaped parts with '_' and split them back. The empty
// string escapes to "=" alone (a subject token may not be empty).
func Escape(s string) string {
	if s == "" {
		return "="
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "=%02X", c)
	}
	return b.String()
}

func plain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// Unescape reverses Escape.
func Unescape(tok string) (string, error) {
	switch tok {
	case "=":
		return "", nil
	case "":
		return "", fmt.Errorf("%w: empty", ErrBadToken)
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case plain(c):
			b.WriteByte(c)
		case c == '=' && i+2 < len(tok):
			hi, ok1 := unhex(tok[i+1])
			lo, ok2 := unhex(tok[i+2])
			if !ok1 || !ok2 {
				return "", fmt.Errorf("%w: %q", ErrBadToken, tok)
			}
			v := hi<<4 | lo
			if plain(v) {
				// Escape never writes a plain byte escaped: one text, one token.
				return "", fmt.Errorf("%w: %q", ErrBadToken, tok)
			}
			b.WriteByte(v)
			i += 2
		default:
			return "", fmt.Errorf("%w: %q", ErrBadToken, tok)
		}
	}
	return b.String(), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Binding is one [[bindings]] entry as the cluster names it: the platform
// instance and the channel pattern as written in the config ("*" too).
// Every host reads the same config, so every host names a binding alike.
type Binding struct {
	Platform string
	Channel  string
}

// Token is the binding's one subject token: the escaped platform and
// channel joined by '_'.
func (b Binding) Token() string { return Escape(b.Platform) + "_" + Escape(b.Channel) }

// String is the binding as people read it: "slack-main/C0123".
func (b Binding) String() string { return b.Platform + "/" + b.Channel }

// ParseBinding reverses Binding.Token.
func ParseBinding(tok string) (Binding, error) {
	p, c, ok := strings.Cut(tok, "_")
	if !ok {
		return Binding{}, fmt.Errorf("%w: %q has no '_'", ErrBadToken, tok)
	}
	plat, err := Unescape(p)
	if err != nil {
		return Binding{}, err
	}
	ch, err := Unescape(c)
	if err != nil {
		return Binding{}, err
	}
	return Binding{Platform: plat, Channel: ch}, nil
}

// Conversation is the token of one conversation within a binding: its
// channel and thread, as the engine keys a session.
func Conversation(channel, thread string) string { return Escape(channel) + "_" + Escape(thread) }

// Names are the NATS names under one prefix (cluster.prefix), so that
// several cc-connect clusters can share one NATS account.
type Names struct {
	Prefix string
}

// Stream is the ingress stream.
func (n Names) Stream() string { return n.Prefix + "-in" }

// Bucket is the key-value bucket of leases, host heartbeats and poller
// offsets.
func (n Names) Bucket() string { return n.Prefix + "-cluster" }

// KVStream is the stream that holds the bucket.
func (n Names) KVStream() string { return "KV_" + n.Bucket() }

// KVKey is the subject a write of key in the bucket is published on.
func (n Names) KVKey(key string) string { return "$KV." + n.Bucket() + "." + key }

// Inbox is the prefix of host's reply subjects (nats.CustomInboxPrefix):
// its own, so that its user may subscribe to its replies and nobody
// else's.
func Inbox(host string) string { return "_INBOX." + Escape(host) }

// StreamSubjects is the ingress stream's subject filter.
func (n Names) StreamSubjects() string { return n.Prefix + ".in.>" }

// In is the subject of one conversation's events as host origin
// publishes them: <prefix>.in.<binding>.<conversation>.<origin>. The
// publisher's name is the last token so that a NATS server can tie it to
// the publisher's user (each host may publish only on subjects ending in
// its own name, Publish), and the owner knows who sent each event.
func (n Names) In(b Binding, conversation, origin string) string {
	return n.Prefix + ".in." + b.Token() + "." + conversation + "." + Escape(origin)
}

// Publish is the subject filter of what host origin may publish for
// binding b: any conversation, its own name last.
func (n Names) Publish(b Binding, origin string) string {
	return n.Prefix + ".in." + b.Token() + ".*." + Escape(origin)
}

// BindingFilter matches every conversation of a binding.
func (n Names) BindingFilter(b Binding) string { return n.Prefix + ".in." + b.Token() + ".>" }

// Consumer is the durable consumer of a binding. One name per binding,
// whichever host holds it: the next holder continues where the last one
// stopped, with what it had not acknowledged.
func (n Names) Consumer(b Binding) string { return "in_" + b.Token() }

// ParseIn returns the conversation token and the publisher of an ingress
// subject. A subject of a cc-connect older than the publisher's name in
// the subject has no origin: "" (its publisher is not known).
func (n Names) ParseIn(subject string) (conversation, origin string, err error) {
	rest, ok := strings.CutPrefix(subject, n.Prefix+".in.")
	if !ok {
		return "", "", fmt.Errorf("%w: %q is not an ingress subject", ErrBadToken, subject)
	}
	toks := strings.Split(rest, ".")
	switch {
	case len(toks) == 2 && toks[1] != "":
		return toks[1], "", nil
	case len(toks) == 3 && toks[1] != "":
		host, err := Unescape(toks[2])
		if err != nil || host == "" {
			return "", "", fmt.Errorf("%w: %q names no publisher", ErrBadToken, subject)
		}
		return toks[1], host, nil
	}
	return "", "", fmt.Errorf("%w: %q is not an ingress subject", ErrBadToken, subject)
}

// Keys of the bucket. Lease keys start with "lease.", so one watcher sees
// them all; host heartbeats with "member.", poller offsets with "offset.".

// BindingLease is the key of a binding's ownership lease.
func BindingLease(b Binding) string { return "lease.binding." + b.Token() }

// PollerLease is the key of the lease that elects a platform's only poller
// (Telegram's getUpdates allows one at a time per token).
func PollerLease(platform string) string { return "lease.poller." + Escape(platform) }

// ShardLease is the key of the lease of one gateway shard (Discord).
func ShardLease(platform string, shard int) string {
	return fmt.Sprintf("lease.shard.%s.%d", Escape(platform), shard)
}

// LeasePrefix matches every lease key.
const LeasePrefix = "lease."

// Member is the key of a host's heartbeat record.
func Member(host string) string { return "member." + Escape(host) }

// Drain is the key that asks a host to hand its bindings over (`cc-connect
// cluster drain`); only that host's user may write it.
func Drain(host string) string { return "drain." + Escape(host) }

// MemberPrefix matches every heartbeat key.
const MemberPrefix = "member."

// Offset is the key of a poller's stored offset.
func Offset(platform string) string { return "offset." + Escape(platform) }

// SchedulePause is the key of a paused schedule's pause (absent: it runs).
func SchedulePause(schedule string) string { return "pause.schedule." + Escape(schedule) }

// Answered is the key of the record that a host answered message id of
// binding b (cluster.Node.Answer): a digest of the id, which may be longer
// than a key's token and hold any byte.
func Answered(b Binding, id string) string {
	sum := sha256.Sum256([]byte(id))
	return AnsweredPrefix + b.Token() + "." + hex.EncodeToString(sum[:16])
}

// AnsweredPrefix matches every answered record.
const AnsweredPrefix = "answered."

// Served is the key of the record of which host last answered in a
// conversation of binding b (its token: Conversation).
func Served(b Binding, conversation string) string {
	return ServedPrefix + b.Token() + "." + conversation
}

// ServedPrefix matches every conversation's record.
const ServedPrefix = "served."

// ContextBucket is the key-value bucket of the conversations' replicated
// context (Claude's session id and transcript), apart from Bucket so that
// a host may read only the context of the bindings it serves.
func (n Names) ContextBucket() string { return n.Prefix + "-context" }

// ContextStream is the stream that holds the context bucket.
func (n Names) ContextStream() string { return "KV_" + n.ContextBucket() }

// ContextKVKey is the subject a write of key in the context bucket is
// published on.
func (n Names) ContextKVKey(key string) string { return "$KV." + n.ContextBucket() + "." + key }

// ContextHead is the key of a conversation's replicated context record
// (its session id, its transcript's size and parts).
func ContextHead(b Binding, conversation string) string {
	return b.Token() + "." + conversation + ".head"
}

// ContextPart is the key of part i of a conversation's replicated
// transcript.
func ContextPart(b Binding, conversation string, i int) string {
	return fmt.Sprintf("%s.%s.%d", b.Token(), conversation, i)
}

// ContextOf matches every context key of binding b.
func ContextOf(b Binding) string { return b.Token() + ".>" }

// ContextReply is the key of a conversation's reply that its host
// settled and is posting (cluster.Node.PutReply): one per conversation,
// since a conversation runs one turn at a time.
func ContextReply(b Binding, conversation string) string {
	return b.Token() + "." + conversation + ".reply"
}

// ContextReplies matches the replies being posted of every conversation
// of binding b.
func ContextReplies(b Binding) string { return b.Token() + ".*.reply" }

// ContextApprovals is the key of the requests a conversation's turn waits
// on (cluster.ApprovalStore): one per conversation, since a conversation
// runs one turn at a time.
func ContextApprovals(b Binding, conversation string) string {
	return b.Token() + "." + conversation + ".approvals"
}
