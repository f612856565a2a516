// Package seenlog is the history an adapter keeps itself where the platform
// offers none to read (Telegram's Bot API, the terminal): the latest
// messages of each conversation it saw or posted since it started, in
// memory and bounded. It knows no wire format; it forgets on restart.
package seenlog

import (
	"slices"
	"sync"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
)

// Log remembers the latest PerConversation messages of at most
// Conversations conversations, forgetting the conversation seen first
// once full. Safe for concurrent use; call New.
type Log struct {
	per int

	mu    sync.Mutex // guards the slices held in convs
	convs *recent.Map[*[]platform.HistoryMessage]
}

// New returns a Log of at most conversations conversations of at most per
// messages each.
func New(conversations, per int) *Log {
	return &Log{per: per, convs: recent.New[*[]platform.HistoryMessage](conversations)}
}

// Key names a conversation in the log: its channel and thread.
func Key(conv platform.Target) string { return conv.Channel + "\x00" + conv.Thread }

// Add appends m, the newest message of conv.
func (l *Log) Add(conv platform.Target, m platform.HistoryMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(conv, m, false)
}

// AddOnce is Add, unless conv already holds a message with m's ID.
func (l *Log) AddOnce(conv platform.Target, m platform.HistoryMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(conv, m, m.ID != "")
}

func (l *Log) addLocked(conv platform.Target, m platform.HistoryMessage, once bool) {
	key := Key(conv)
	p, ok := l.convs.Get(key)
	if !ok {
		p = &[]platform.HistoryMessage{}
		l.convs.Put(key, p)
	}
	if once && slices.ContainsFunc(*p, func(h platform.HistoryMessage) bool { return h.ID == m.ID }) {
		return
	}
	*p = append(*p, m)
	if over := len(*p) - l.per; over > 0 {
		*p = slices.Delete(*p, 0, over)
	}
}

// History is what q selects of conv's messages, oldest first: those seen
// before the message q.Before (all of them when it is not among them, or
// empty), at most q.Limit, the latest.
func (l *Log) History(conv platform.Target, q platform.HistoryQuery) []platform.HistoryMessage {
	if q.Limit <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.convs.Get(Key(conv))
	if !ok {
		return nil
	}
	msgs := *p
	if q.Before != "" {
		if i := slices.IndexFunc(msgs, func(m platform.HistoryMessage) bool { return m.MessageID == q.Before }); i >= 0 {
			msgs = msgs[:i]
		}
	}
	return slices.Clone(msgs[max(0, len(msgs)-q.Limit):])
}

// Edit replaces the text of conv's message messageID, when it is still
// remembered: the history shows a message as it stands.
func (l *Log) Edit(conv platform.Target, messageID, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.convs.Get(Key(conv))
	if !ok {
		return
	}
	for i := range *p {
		if (*p)[i].MessageID == messageID {
			(*p)[i].Text = text
		}
	}
}
