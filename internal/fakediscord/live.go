package fakediscord

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakekit"
)

// What a reply streamed into a channel and a question prompt need of the
// fake: a standing limit on edits per channel, deletes, and select menus.

// Discord's limits for a string select menu.
const (
	maxMenuOptions   = 25
	maxOptionLabel   = 100
	maxOptionValue   = 100
	maxPlaceholder   = 150
	componentButton  = 2
	componentSelect  = 3
	componentActions = 1
)

// SetEditLimit holds message edits to n per period in each channel, as
// Discord's per-channel bucket does (about 5 per 5 s): an edit past it is
// answered HTTP 429 {"message":"You are being rate limited.",
// "retry_after":…,"global":false} with the X-RateLimit headers, and does
// nothing. n 0 lifts the limit.
func (s *Server) SetEditLimit(n int, per time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.editLimit, s.editPer = n, per
	s.editBuckets = map[string]*fakekit.Bucket{}
}

// RateLimitedEdits returns how many edits the standing limit refused.
func (s *Server) RateLimitedEdits() int {
	return s.calls.Count(func(c Call) bool { return c.Method == http.MethodPatch && c.Status == http.StatusTooManyRequests })
}

// editLimitLocked spends an edit of channel, or gives Discord's refusal.
func (s *Server) editLimitLocked(channel string) (Answer, bool) {
	if s.editLimit <= 0 {
		return Answer{}, false
	}
	now := time.Now()
	b := s.editBuckets[channel]
	if b == nil {
		b = fakekit.NewBucket(float64(s.editLimit)/s.editPer.Seconds(), float64(s.editLimit), now)
		s.editBuckets[channel] = b
	}
	wait, ok := b.Take(now)
	if ok {
		return Answer{}, false
	}
	retry := wait.Seconds()
	return Answer{
		Status: http.StatusTooManyRequests,
		Body:   fmt.Sprintf(`{"message":"You are being rate limited.","retry_after":%.3f,"global":false}`, retry),
		Header: map[string]string{
			"Retry-After":             fmt.Sprint(int(math.Ceil(retry))),
			"X-RateLimit-Limit":       fmt.Sprint(s.editLimit),
			"X-RateLimit-Remaining":   "0",
			"X-RateLimit-Reset-After": fmt.Sprintf("%.3f", retry),
			"X-RateLimit-Reset":       fmt.Sprintf("%.3f", float64(now.UnixMilli())/1000+retry),
			"X-RateLimit-Bucket":      "fake-edit-" + channel,
			"X-RateLimit-Scope":       "user",
		},
	}, true
}

// deleteLocked is DELETE /channels/{channel}/messages/{id}: the bot may
// delete its own messages.
func (s *Server) deleteLocked(channel, id string) Answer {
	if _, ok := s.channels[channel]; !ok {
		return Answer{Status: 404, Body: unknownChannel}
	}
	m, ok := s.msgs.LookupLocked(id)
	if !ok || m.ChannelID != channel || m.Deleted {
		return Answer{Status: 404, Body: unknownMessage}
	}
	if m.AuthorID != BotID {
		return Answer{Status: 403, Body: `{"message":"Missing Permissions","code":50013}`}
	}
	m.Deleted = true
	s.msgs.ChangedLocked(id)
	return Answer{Status: 204}
}

// checkRow applies Discord's rules to one action row's components.
func checkRow(i int, comps []any) string {
	hasSelect := false
	for _, c := range comps {
		co, _ := c.(map[string]any)
		hasSelect = hasSelect || co["type"] == float64(componentSelect)
	}
	if hasSelect && len(comps) != 1 {
		return invalidForm(fmt.Sprintf("components.%d.components", i), "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "The specified component exceeds the maximum width")
	}
	for j, c := range comps {
		co, _ := c.(map[string]any)
		at := fmt.Sprintf("components.%d.components.%d", i, j)
		if id, _ := co["custom_id"].(string); len([]rune(id)) > maxCustomID {
			return invalidForm(at+".custom_id", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxCustomID))
		}
		switch co["type"] {
		case float64(componentButton):
			if l, _ := co["label"].(string); len([]rune(l)) > maxButtonLabel {
				return invalidForm(at+".label", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxButtonLabel))
			}
		case float64(componentSelect):
			if bad := checkSelect(at, co); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// checkSelect applies the rules of a string select menu.
func checkSelect(at string, m map[string]any) string {
	opts, _ := m["options"].([]any)
	if len(opts) == 0 || len(opts) > maxMenuOptions {
		return invalidForm(at+".options", "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxMenuOptions))
	}
	if p, _ := m["placeholder"].(string); len([]rune(p)) > maxPlaceholder {
		return invalidForm(at+".placeholder", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxPlaceholder))
	}
	values := map[string]bool{}
	for k, o := range opts {
		oo, _ := o.(map[string]any)
		l, _ := oo["label"].(string)
		v, _ := oo["value"].(string)
		if n := len([]rune(l)); n == 0 || n > maxOptionLabel {
			return invalidForm(fmt.Sprintf("%s.options.%d.label", at, k), "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxOptionLabel))
		}
		if n := len([]rune(v)); n == 0 || n > maxOptionValue {
			return invalidForm(fmt.Sprintf("%s.options.%d.value", at, k), "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxOptionValue))
		}
		if values[v] {
			return invalidForm(fmt.Sprintf("%s.options.%d.value", at, k), "SELECT_COMPONENT_OPTION_VALUE_DUPLICATED", "Option value is duplicated")
		}
		values[v] = true
	}
	minV, maxV := 1.0, 1.0
	if v, ok := m["min_values"].(float64); ok {
		minV = v
	}
	if v, ok := m["max_values"].(float64); ok {
		maxV = v
	}
	if minV < 0 || maxV < 1 || minV > maxV || maxV > float64(len(opts)) {
		return invalidForm(at+".max_values", "BASE_TYPE_BAD_VALUE", "max_values must be between min_values and the number of options")
	}
	return ""
}

// Menu is a string select menu of a message's components.
type Menu struct {
	CustomID    string
	Placeholder string
	MinValues   int
	MaxValues   int
	Options     []MenuOption
}

// MenuOption is one option of a Menu.
type MenuOption struct {
	Label, Value string
}

// Menus lists the select menus in the message's current components.
func (m Message) Menus() []Menu {
	var rows []struct {
		Components []struct {
			Type        int          `json:"type"`
			CustomID    string       `json:"custom_id"`
			Placeholder string       `json:"placeholder"`
			MinValues   *int         `json:"min_values"`
			MaxValues   *int         `json:"max_values"`
			Options     []MenuOption `json:"options"`
		} `json:"components"`
	}
	_ = json.Unmarshal([]byte(m.Components), &rows)
	var out []Menu
	for _, r := range rows {
		for _, c := range r.Components {
			if c.Type != componentSelect {
				continue
			}
			menu := Menu{CustomID: c.CustomID, Placeholder: c.Placeholder, MinValues: 1, MaxValues: 1, Options: c.Options}
			if c.MinValues != nil {
				menu.MinValues = *c.MinValues
			}
			if c.MaxValues != nil {
				menu.MaxValues = *c.MaxValues
			}
			out = append(out, menu)
		}
	}
	return out
}
