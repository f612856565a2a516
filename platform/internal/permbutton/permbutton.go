// Package permbutton encodes the answer buttons of a permission prompt
// for platforms whose buttons carry a short string payload (Discord's
// custom_id, Telegram's callback_data): "ccp|<choice>|<ref>", where ref is
// the request id itself when it fits the platform's limit, or a short
// random reference remembered for a while. It knows nothing of how a
// platform draws its buttons or renders the prompt.
package permbutton

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
)

// Prefix starts the payload of every button this package encodes, so
// presses of anything else can be told apart.
const Prefix = "ccp|"

// refMark starts a generated reference; request ids that start with it
// get a reference of their own, so a reference is never mistaken for one.
const refMark = "~"

var codes = map[platform.Choice]string{
	platform.ChoiceAllow:       "a",
	platform.ChoiceAlwaysAllow: "A",
	platform.ChoiceDeny:        "d",
	// A plan's buttons (PermissionPrompt.Choices).
	platform.ChoicePlanDefault:     "p",
	platform.ChoicePlanAcceptEdits: "e",
	platform.ChoicePlanKeep:        "k",
	// A turn's summary (undo what it changed).
	platform.ChoiceRevert: "r",
}

// Data returns the payload of the button that answers choice c on the
// prompt whose reference (see Refs.Ref) is ref.
func Data(c platform.Choice, ref string) string {
	return Prefix + codes[c] + "|" + ref
}

// Decode reads a payload made by Data. ok is false for payloads that are
// not one of these buttons.
func Decode(data string) (c platform.Choice, ref string, ok bool) {
	rest, ok := strings.CutPrefix(data, Prefix)
	if !ok {
		return "", "", false
	}
	code, ref, ok := strings.Cut(rest, "|")
	if !ok {
		return "", "", false
	}
	for c, cc := range codes {
		if cc == code {
			return c, ref, true
		}
	}
	return "", "", false
}

// Refs hands out the references the buttons carry and finds the request
// ids behind them again. Generated references are remembered for the last
// max long ids; a press of an older prompt finds none (after a restart
// too), which the caller reports as an unknown prompt.
type Refs struct {
	limit int // longest payload the platform accepts, in bytes
	long  *recent.Map[string]
}

// NewRefs returns Refs for payloads of at most limit bytes that remember
// max generated references.
func NewRefs(limit, max int) *Refs {
	return &Refs{limit: limit, long: recent.New[string](max)}
}

// Ref returns the reference for the buttons of requestID: the id itself
// when every payload fits, else a new short reference.
func (r *Refs) Ref(requestID string) string {
	return r.ref(requestID, len(Prefix)+2)
}

// ref is Ref for payloads that add overhead bytes to the reference.
func (r *Refs) ref(requestID string, overhead int) string {
	if overhead+len(requestID) <= r.limit && !strings.HasPrefix(requestID, refMark) {
		return requestID
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	ref := refMark + hex.EncodeToString(b[:])
	r.long.Put(ref, requestID)
	return ref
}

// RequestID returns the request id behind ref, and false when ref is
// empty or a reference no longer remembered.
func (r *Refs) RequestID(ref string) (string, bool) {
	if !strings.HasPrefix(ref, refMark) {
		return ref, ref != ""
	}
	return r.long.Get(ref)
}

// Known reports whether c has a button payload (Data).
func Known(c platform.Choice) bool {
	_, ok := codes[c]
	return ok
}
