package console

import (
	"sync"

	"github.com/cc-connect/cc-connect/activity"
)

// hub keeps what each conversation shows live (the reply so far, the
// tool log, the todo list, what waits for an answer) from the activity
// events, and hands each event to the browsers watching it. record runs
// on the publisher's goroutine (a conversation's): it takes one short
// lock and never waits on a browser; a browser too slow for its buffer
// loses events and is told to load the page again.
type hub struct {
	mu    sync.Mutex // guards views and subs
	views map[string]*liveView
	subs  map[string]map[*watcher]struct{}
}

// liveView is a conversation's live state.
type liveView struct {
	Text    string
	Tools   []string
	Todos   []activity.Todo
	Asks    []Ask
	Outcome string // how the last turn ended
}

// Ask is a request waiting for an answer; Questions are a question's
// (AskUserQuestion).
type Ask struct {
	Request   string
	Tool      string
	Input     string
	Questions []activity.Question
}

// Plan says whether the request is a plan to approve.
func (a Ask) Plan() bool { return a.Tool == "ExitPlanMode" }

// Question says whether the request is Claude's questions.
func (a Ask) Question() bool { return a.Tool == "AskUserQuestion" }

// watcher is one browser's stream.
type watcher struct {
	ch   chan activity.Event
	lost bool // a send found the buffer full
}

const (
	maxTools   = 50   // tool log lines kept per conversation
	maxViews   = 2048 // conversations kept (others start empty)
	watchQueue = 256
)

func newHub() *hub {
	return &hub{views: map[string]*liveView{}, subs: map[string]map[*watcher]struct{}{}}
}

func (h *hub) record(e activity.Event) {
	if e.Conversation == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v := h.views[e.Conversation]
	if v == nil {
		if len(h.views) >= maxViews {
			for k := range h.views {
				delete(h.views, k)
				break
			}
		}
		v = &liveView{}
		h.views[e.Conversation] = v
	}
	v.apply(e)
	for w := range h.subs[e.Conversation] {
		select {
		case w.ch <- e:
		default:
			w.lost = true
		}
	}
}

func (v *liveView) apply(e activity.Event) {
	switch e.Kind {
	case activity.Started:
		v.Text, v.Tools, v.Todos, v.Outcome = "", nil, nil, ""
	case activity.Text:
		v.Text = e.Text
	case activity.Tool:
		v.Tools = append(v.Tools, e.Input)
		if len(v.Tools) > maxTools {
			v.Tools = v.Tools[len(v.Tools)-maxTools:]
		}
	case activity.Todos:
		v.Todos = e.Todos
	case activity.Asking:
		v.Asks = append(v.Asks, Ask{Request: e.Request, Tool: e.Tool, Input: e.Input, Questions: e.Questions})
	case activity.Answered:
		for i, a := range v.Asks {
			if a.Request == e.Request {
				v.Asks = append(v.Asks[:i:i], v.Asks[i+1:]...)
				break
			}
		}
	case activity.Finished:
		v.Outcome, v.Asks = e.Outcome, nil
		if e.Text != "" {
			v.Text = e.Text
		}
	}
}

// view is a copy of key's live state.
func (h *hub) view(key string) liveView {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := h.views[key]
	if v == nil {
		return liveView{}
	}
	c := *v
	c.Tools = append([]string(nil), v.Tools...)
	c.Todos = append([]activity.Todo(nil), v.Todos...)
	c.Asks = append([]Ask(nil), v.Asks...)
	return c
}

// asks is request waiting in key's conversation; false when it is not
// known to wait.
func (h *hub) asks(key, request string) (Ask, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v := h.views[key]; v != nil {
		for _, a := range v.Asks {
			if a.Request == request {
				return a, true
			}
		}
	}
	return Ask{}, false
}

// watch subscribes to key's events; cancel ends it.
func (h *hub) watch(key string) (w *watcher, cancel func()) {
	w = &watcher{ch: make(chan activity.Event, watchQueue)}
	h.mu.Lock()
	if h.subs[key] == nil {
		h.subs[key] = map[*watcher]struct{}{}
	}
	h.subs[key][w] = struct{}{}
	h.mu.Unlock()
	return w, func() {
		h.mu.Lock()
		delete(h.subs[key], w)
		if len(h.subs[key]) == 0 {
			delete(h.subs, key)
		}
		h.mu.Unlock()
	}
}

// overflowed says whether w lost events (read under the hub's lock).
func (h *hub) overflowed(w *watcher) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.lost
}
