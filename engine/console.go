package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
)

// ConsoleView is the engine as the console in the browser reads it and
// acts on it: the conversations a person may see, with the rights the
// gate gives them in the bindings in force now (read at every call, so a
// reload that takes a right away applies to the next request), and the
// chat's own paths for an answer (a button press) and a stop (!stop).
// It is a type of its own so that the console reaches nothing else.
type ConsoleView struct {
	e       *Engine
	records *conv.RecordCache // the conversations page lists them at every request
}

// Console is the engine's view for the console.
func (e *Engine) Console() ConsoleView { return ConsoleView{e: e, records: &conv.RecordCache{}} }

// Rights are what a person may do in a binding's conversations.
type Rights = conv.Rights

// ConsoleConversation is one conversation as the console lists it.
type ConsoleConversation struct {
	RecordInfo
	Binding string // the binding's key, "platform/channel"
	Host    string // the cluster host that serves it; "" alone
	State   string // idle, running, requires_action
	Queued  int
	Rights  Rights
}

// ErrNotAllowed is returned when the person may not do what they asked:
// the console answers 403.
var ErrNotAllowed = errors.New("not allowed")

// Conversations lists the conversations on plat that user may see (their
// binding's allow list has them), newest first.
func (v ConsoleView) Conversations(plat, user string) ([]ConsoleConversation, error) {
	recs, err := v.records.Read(v.e.opts.StateDir)
	if err != nil {
		return nil, err
	}
	var out []ConsoleConversation
	for _, r := range recs {
		if r.Err != nil || r.Platform != plat {
			continue
		}
		if c, ok := v.row(r, user); ok {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastActivity.After(out[j].LastActivity) })
	return out, nil
}

// Conversation is the conversation of key if user (on its platform) may
// see it.
func (v ConsoleView) Conversation(key, user string) (ConsoleConversation, bool) {
	to, ok := targetOf(key)
	if !ok {
		return ConsoleConversation{}, false
	}
	return v.row(RecordInfo{Key: key, Platform: to.Platform, Channel: to.Channel, Thread: to.Thread}, user)
}

func (v ConsoleView) row(r RecordInfo, user string) (ConsoleConversation, bool) {
	b, ok := v.e.routes.resolve(r.Platform, r.Channel)
	if !ok {
		return ConsoleConversation{}, false
	}
	rights := conv.RightsOf(b, user)
	if !rights.Use {
		return ConsoleConversation{}, false
	}
	c := ConsoleConversation{RecordInfo: r, Binding: b.Key().String(), Host: b.Host, State: "idle", Rights: rights}
	if st, n, ok := conv.Activity(v.e.convs, r.Key); ok {
		c.State, c.Queued = st, n
	}
	return c, true
}

// Bindings are the bindings in force on plat that allow user, with their
// rights there.
func (v ConsoleView) Bindings(plat, user string) []ConsoleBinding {
	var out []ConsoleBinding
	for _, b := range v.e.routes.all() {
		if b.Platform != plat {
			continue
		}
		if r := conv.RightsOf(b, user); r.Use {
			out = append(out, ConsoleBinding{Key: b.Key().String(), Rights: r, Binding: b})
		}
	}
	return out
}

// ConsoleBinding is a binding as the console shows it.
type ConsoleBinding struct {
	Key    string
	Rights Rights
	binding.Binding
}

// ConsoleAnswer is a press on the console's page: a permission request's
// Allow or Deny, a plan's Approve or Reject, a question's options
// (ChoiceAnswer, Question and Options as a button of the chat's prompt
// carries them) or its Dismiss.
type ConsoleAnswer struct {
	RequestID string
	Choice    platform.Choice
	Question  int
	Options   platform.OptionSet
}

// Answer answers a pending permission request, question or plan of the
// conversation of key as a press of its button would: the same gate,
// the same journaling (HandleAction).
func (v ConsoleView) Answer(ctx context.Context, key, userID, userName string, a ConsoleAnswer) error {
	to, ok := targetOf(key)
	if !ok {
		return ErrNotAllowed
	}
	return v.e.HandleAction(ctx, platform.Action{ID: "console-" + nonce(), Target: to, UserID: userID, UserName: userName,
		RequestID: a.RequestID, Choice: a.Choice, Question: a.Question, Options: a.Options})
}

// Stop stops the running turn of the conversation of key as a !stop sent
// there would: through the accept path (allow list, gate, journal).
func (v ConsoleView) Stop(ctx context.Context, key, userID, userName string) error {
	to, ok := targetOf(key)
	if !ok {
		return ErrNotAllowed
	}
	res, err := v.e.HandleMessage(ctx, platform.Message{ID: "console-" + nonce(), Target: to, UserID: userID, UserName: userName,
		Text: "!stop", Mentioned: true})
	if err != nil {
		return err
	}
	if res.Status == platform.Refused || res.Status == platform.Ignored {
		return fmt.Errorf("%w: %s", ErrNotAllowed, res.Reason)
	}
	return nil
}

// Changes is what the last turn of the conversation of key changed, as
// !status reads it (the files, the lines, the kept diff, and why !revert
// would be refused now), if user (on its platform) may see it; false too
// when its last turn changed no files.
func (v ConsoleView) Changes(key, user string) (conv.Changes, bool) {
	if _, ok := v.Conversation(key, user); !ok {
		return conv.Changes{}, false
	}
	return conv.LastChanges(v.e.convs, key)
}

// Revert presses the Revert button of turn (its user message uuid) in the
// conversation of key, as the turn summary's button in the chat would:
// through HandleAction, which takes it as its presser's "!revert" (the
// allow list, the approvers' right in the binding in force, the same
// refusals, told in the thread). It returns the Request the reverted
// event of this press carries (activity.Reverted: reverted, failed or
// refused with the reason).
func (v ConsoleView) Revert(ctx context.Context, key, userID, userName, turn string) (string, error) {
	to, ok := targetOf(key)
	if !ok || turn == "" {
		return "", ErrNotAllowed
	}
	id := "console-" + nonce()
	err := v.e.HandleAction(ctx, platform.Action{ID: id, Target: to, UserID: userID, UserName: userName,
		RequestID: conv.RevertRequestID(turn), Choice: platform.ChoiceRevert})
	return conv.RevertPressID(id), err
}

// targetOf reads a conversation key back into where it is.
func targetOf(key string) (platform.Target, bool) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return platform.Target{}, false
	}
	return platform.Target{Platform: parts[0], Channel: parts[1], Thread: parts[2]}, true
}

// nonce names a press or a message made in the console, unique, so that
// the journal's duplicate check never takes it for another.
func nonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// RightsIn is user's rights in the binding plat's channel is routed to,
// and that binding's key; ok is false when no binding takes the channel.
func (v ConsoleView) RightsIn(plat, channel, user string) (r Rights, bindingKey string, ok bool) {
	b, ok := v.e.routes.resolve(plat, channel)
	if !ok {
		return Rights{}, "", false
	}
	return conv.RightsOf(b, user), b.Key().String(), true
}
