package fakeslack

import (
	"encoding/json"
	"regexp"
)

var (
	// controlRE is a control sequence in message text, which Slack acts on
	// wherever it stands: a special mention (<!here>, <!channel>,
	// <!everyone>, <!subteam^S1>, <!date…>), a user mention (<@U1>) or a
	// channel link (<#C1>).
	controlRE = regexp.MustCompile(`<[!@#][^<>]*>`)
	// nameRE is an "@name" Slack turns into a mention when it finds names
	// itself: with link_names, and in mrkdwn block text that is not
	// verbatim.
	nameRE = regexp.MustCompile(`(?:^|[^\w])@(channel|here|everyone|[a-z0-9][a-z0-9._-]*)`)
)

// pings lists what Slack would make into mentions or channel links in a
// chat.postMessage or chat.update, were it posted: the control sequences
// in the text and in the blocks' mrkdwn (section text and fields, context
// elements), and, where Slack finds names itself (link_names on, or a
// mrkdwn text object without verbatim), "@name" words. plain_text objects
// (headers, buttons) make none.
func pings(form map[string]string) []string {
	var out []string
	scan := func(text string, findNames bool) {
		out = append(out, controlRE.FindAllString(text, -1)...)
		if findNames {
			for _, m := range nameRE.FindAllStringSubmatch(text, -1) {
				out = append(out, "@"+m[1])
			}
		}
	}
	linkNames := form["link_names"] == "1" || form["link_names"] == "true"
	scan(form["text"], linkNames)
	type textObject struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Verbatim bool   `json:"verbatim"`
	}
	mrkdwn := func(o *textObject) {
		if o != nil && o.Type == "mrkdwn" {
			scan(o.Text, linkNames || !o.Verbatim)
		}
	}
	var blocks []struct {
		Text     *textObject       `json:"text"`
		Fields   []*textObject     `json:"fields"`
		Elements []json.RawMessage `json:"elements"` // text objects, images, buttons
	}
	// Blocks that are not JSON are refused (invalid_blocks); only the text
	// counts then.
	_ = json.Unmarshal([]byte(form["blocks"]), &blocks)
	for _, b := range blocks {
		mrkdwn(b.Text)
		for _, f := range b.Fields {
			mrkdwn(f)
		}
		for _, raw := range b.Elements {
			var e textObject
			if json.Unmarshal(raw, &e) == nil {
				mrkdwn(&e)
			}
		}
	}
	return out
}
