package permbutton

import (
	"strconv"
	"strings"

	"github.com/cc-connect/cc-connect/platform"
)

// The buttons of a question prompt (platform.QuestionAsker) carry
// "ccq|<kind>|<question>|<option>|<ref>": the kind of press, the question's
// and the option's index (one digit each: AskUserQuestion asks at most four
// questions of at most four options), and the prompt's reference, last, so
// that a request id holding "|" stays whole.

// QuestionPrefix starts the payload of every question button.
const QuestionPrefix = "ccq|"

// questionOverhead is the payload's length without its reference.
const questionOverhead = len(QuestionPrefix) + len("a|0|0|")

var questionCodes = map[platform.Choice]string{
	platform.ChoiceAnswer:  "a",
	platform.ChoiceToggle:  "t",
	platform.ChoiceSubmit:  "s",
	platform.ChoiceDismiss: "x",
}

// QuestionRef is Ref for the buttons of a question prompt, whose payloads
// are longer.
func (r *Refs) QuestionRef(requestID string) string {
	return r.ref(requestID, questionOverhead)
}

// QuestionData returns the payload of a question button: c on option o of
// question q (0 for the presses that name no option or question).
func QuestionData(c platform.Choice, q, o int, ref string) string {
	return QuestionPrefix + questionCodes[c] + "|" + digit(q) + "|" + digit(o) + "|" + ref
}

func digit(n int) string {
	if n < 0 || n > 9 {
		n = 0
	}
	return strconv.Itoa(n)
}

// DecodeQuestion reads a payload made by QuestionData.
func DecodeQuestion(data string) (c platform.Choice, q, o int, ref string, ok bool) {
	rest, ok := strings.CutPrefix(data, QuestionPrefix)
	if !ok {
		return "", 0, 0, "", false
	}
	f := strings.SplitN(rest, "|", 4)
	if len(f) != 4 || len(f[1]) != 1 || len(f[2]) != 1 || f[3] == "" {
		return "", 0, 0, "", false
	}
	q, err1 := strconv.Atoi(f[1])
	o, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return "", 0, 0, "", false
	}
	for c, code := range questionCodes {
		if code == f[0] {
			return c, q, o, f[3], true
		}
	}
	return "", 0, 0, "", false
}
