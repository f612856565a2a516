package conv

import (
	"github.com/cc-connect/cc-connect/binding"
)

// liveBinding is the conversation's binding in the config in force now. A
// reload swaps the bindings while sessions run, and who may do what (the
// allow list, approvers, admins, allow_shell) is read from it at every use,
// so a right taken away applies to the very next command. A conversation
// whose binding was removed keeps the one it started with: its channel
// takes no new messages, and what is running may still be answered.
func (s *Conversation) liveBinding() binding.Binding {
	if b, ok := s.e.resolve(s.to.Platform, s.to.Channel); ok {
		return b
	}
	return s.binding
}
