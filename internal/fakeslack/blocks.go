package fakeslack

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// blockProblems checks Block Kit JSON the way Slack does for the block
// types cc-connect posts (section, actions, context, header, divider), and
// returns Slack's messages for what is wrong ("must be less than 3001
// characters [json-pointer:/blocks/0/text/text]"), or none.
func blockProblems(raw string) []string {
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return []string{"invalid additional property: blocks must be an array of objects [json-pointer:/blocks]"}
	}
	var p problems
	if len(blocks) > maxBlocks {
		p.add("/blocks", "no more than %d items allowed", maxBlocks)
	}
	blockIDs := map[string]bool{}
	for i, b := range blocks {
		at := fmt.Sprintf("/blocks/%d", i)
		if id, ok := b["block_id"].(string); ok && utf8.RuneCountInString(id) > maxBlockID {
			p.add(at+"/block_id", "must be less than %d characters", maxBlockID+1)
		}
		if id, ok := b["block_id"].(string); ok && id != "" {
			if blockIDs[id] {
				p.add(at+"/block_id", "must be unique within the message; %q is used twice", id)
			}
			blockIDs[id] = true
		}
		switch b["type"] {
		case "section":
			text, hasText := b["text"].(map[string]any)
			fields, hasFields := b["fields"].([]any)
			switch {
			case hasText:
				p.textObject(at+"/text", text, maxSectionChars, false)
			case hasFields && len(fields) > 0:
				for j, f := range fields {
					fo, _ := f.(map[string]any)
					p.textObject(fmt.Sprintf("%s/fields/%d", at, j), fo, 2000, false)
				}
			default:
				p.add(at, "failed to match all allowed schemas")
			}
		case "header":
			text, _ := b["text"].(map[string]any)
			p.textObject(at+"/text", text, maxHeaderChars, true)
		case "context":
			elems, _ := b["elements"].([]any)
			if len(elems) == 0 || len(elems) > maxContextElems {
				p.add(at+"/elements", "must provide between 1 and %d items", maxContextElems)
			}
			for j, e := range elems {
				eo, _ := e.(map[string]any)
				if eo["type"] == "image" {
					continue
				}
				p.textObject(fmt.Sprintf("%s/elements/%d", at, j), eo, maxSectionChars, false)
			}
		case "actions":
			elems, _ := b["elements"].([]any)
			if len(elems) == 0 || len(elems) > 25 {
				p.add(at+"/elements", "must provide between 1 and 25 items")
			}
			actionIDs := map[string]bool{}
			for j, e := range elems {
				eo, _ := e.(map[string]any)
				if id, _ := eo["action_id"].(string); id != "" {
					if actionIDs[id] {
						p.add(fmt.Sprintf("%s/elements/%d/action_id", at, j), "must be unique within the block; %q is used twice", id)
					}
					actionIDs[id] = true
				}
				p.button(fmt.Sprintf("%s/elements/%d", at, j), e)
				p.multiSelect(fmt.Sprintf("%s/elements/%d", at, j), e)
			}
		case "divider":
		default:
			p.add(at+"/type", "unsupported block type %v", b["type"])
		}
	}
	return p.msgs
}

type problems struct{ msgs []string }

func (p *problems) add(pointer, format string, args ...any) {
	p.msgs = append(p.msgs, fmt.Sprintf(format, args...)+" [json-pointer:"+pointer+"]")
}

// textObject checks a text composition object of at most limit characters.
func (p *problems) textObject(at string, o map[string]any, limit int, plainOnly bool) {
	typ, _ := o["type"].(string)
	text, ok := o["text"].(string)
	switch {
	case o == nil || !ok:
		p.add(at, "failed to match all allowed schemas")
		return
	case typ != "plain_text" && (plainOnly || typ != "mrkdwn"):
		p.add(at+"/type", "must be a valid enum value")
	}
	n := utf8.RuneCountInString(text)
	if n == 0 {
		p.add(at+"/text", "must be more than 0 characters")
	}
	if n > limit {
		p.add(at+"/text", "must be less than %d characters", limit+1)
	}
}

func (p *problems) button(at string, e any) {
	b, _ := e.(map[string]any)
	if b["type"] != "button" {
		return // other interactive elements are not checked
	}
	text, _ := b["text"].(map[string]any)
	p.textObject(at+"/text", text, maxButtonText, true)
	if id, _ := b["action_id"].(string); utf8.RuneCountInString(id) > maxActionID {
		p.add(at+"/action_id", "must be less than %d characters", maxActionID+1)
	}
	if v, _ := b["value"].(string); utf8.RuneCountInString(v) > maxButtonValue {
		p.add(at+"/value", "must be less than %d characters", maxButtonValue+1)
	}
	if st, ok := b["style"].(string); ok && st != "primary" && st != "danger" {
		p.add(at+"/style", "must be a valid enum value")
	}
}

// Block Kit's limits for a static multi-select menu.
const (
	maxMenuOptions    = 100
	maxOptionText     = 75
	maxOptionValue    = 150
	maxPlaceholder    = 150
	multiStaticSelect = "multi_static_select"
)

// multiSelect checks a multi_static_select element.
func (p *problems) multiSelect(at string, e any) {
	m, _ := e.(map[string]any)
	if m["type"] != multiStaticSelect {
		return
	}
	if id, _ := m["action_id"].(string); utf8.RuneCountInString(id) > maxActionID {
		p.add(at+"/action_id", "must be less than %d characters", maxActionID+1)
	}
	if ph, ok := m["placeholder"].(map[string]any); ok {
		p.textObject(at+"/placeholder", ph, maxPlaceholder, true)
	}
	opts, _ := m["options"].([]any)
	if len(opts) == 0 || len(opts) > maxMenuOptions {
		p.add(at+"/options", "must provide between 1 and %d items", maxMenuOptions)
	}
	values := map[string]bool{}
	for j, o := range opts {
		oo, _ := o.(map[string]any)
		text, _ := oo["text"].(map[string]any)
		p.textObject(fmt.Sprintf("%s/options/%d/text", at, j), text, maxOptionText, true)
		v, _ := oo["value"].(string)
		if v == "" || utf8.RuneCountInString(v) > maxOptionValue {
			p.add(fmt.Sprintf("%s/options/%d/value", at, j), "must be between 1 and %d characters", maxOptionValue)
		}
		values[v] = true
	}
	init, _ := m["initial_options"].([]any)
	for j, o := range init {
		oo, _ := o.(map[string]any)
		if v, _ := oo["value"].(string); !values[v] {
			p.add(fmt.Sprintf("%s/initial_options/%d", at, j), "must match one of the options")
		}
	}
}
