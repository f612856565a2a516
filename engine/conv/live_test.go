package conv

import (
	"testing"
)

func TestPendingQuestionIsNamedForARestart(t *testing.T) {
	qs := mustQuestions(t, twoQuestions)
	ps := &permissions{pending: []*pendingPerm{{qs: qs}}}
	if got := ps.first(); got != "Claude's question “Which database?”" {
		t.Errorf("first = %q", got)
	}
	ps.pending[0] = &pendingPerm{plan: true}
	if got := ps.first(); got != "Claude's plan" {
		t.Errorf("first = %q", got)
	}
}
