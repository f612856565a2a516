package main

import (
	"os"
	"time"

	"github.com/google/uuid"
)

// A user message written while a turn runs, as Claude Code 2.1.332 keeps
// it in the session's transcript (agentproc's captures steer_transcript and
// steer_after_tool): a queue-operation enqueue when it arrives; taken into
// the running turn, a queue-operation remove (absorbed_mid_turn) and a
// queued_command attachment carrying its uuid as source_uuid, never a user
// line of its own; left for a turn of its own, a dequeue and then its user
// line, under its uuid, as any prompt.

// enqueueLine is the transcript's note of a message that arrived while a
// turn ran.
func enqueueLine(m userMsg) map[string]any {
	return map[string]any{"type": "queue-operation", "operation": "enqueue", "timestamp": now(), "content": m.text}
}

// dequeueLine is the transcript's note that a queued message runs now, as
// a turn of its own.
func dequeueLine() map[string]any {
	return map[string]any{"type": "queue-operation", "operation": "dequeue", "timestamp": now()}
}

// absorbedLines are the transcript lines of a message taken into the
// running turn: the queue's remove, then the attachment the model reads.
func (f *fake) absorbedLines(m userMsg) []map[string]any {
	delivery := uuid.NewString()
	return []map[string]any{
		{"type": "queue-operation", "operation": "remove", "timestamp": now(), "content": m.text,
			"reason": "absorbed_mid_turn", "commandUuid": m.uuid, "deliveryId": delivery},
		{"isSidechain": false, "type": "attachment", "uuid": uuid.NewString(), "timestamp": now(),
			"attachment": map[string]any{"type": "queued_command", "prompt": m.text, "source_uuid": m.uuid,
				"delivery_id": delivery, "commandMode": "prompt", "rowSource": "local", "timestamp": now(),
				"hostsOwnTurn": true},
			"rendered": []any{map[string]any{"content": "<system-reminder>\nThe user sent a new message while you were working:\n" +
				m.text + "\n</system-reminder>"}},
			"renderedRole": "system", "userType": "external", "entrypoint": "sdk-cli", "cwd": f.cwd,
			"version": version, "gitBranch": "HEAD"},
	}
}

// foldGate holds the turn after the messages taken into it are in the
// transcript and before the CLI says so on stdout (command_lifecycle
// started), while the file FAKECLAUDE_FOLD_GATE does not exist: the window
// a kill of the host can fall in. The host gone (stdin closed), the
// process ends there, as killed with it.
func (f *fake) foldGate() { f.holdAt("FAKECLAUDE_FOLD_GATE") }

// holdAt holds the turn while the file named by the environment variable
// env does not exist (it writes <file>.held once there, so a test knows
// the turn reached the gate); the host gone (stdin closed), the process
// ends there, as killed with it. Without the variable it returns at once.
func (f *fake) holdAt(env string) {
	gate := os.Getenv(env)
	if gate == "" {
		return
	}
	if err := os.WriteFile(gate+".held", nil, 0o600); err != nil {
		fail("fakeclaude: " + err.Error())
	}
	for {
		if _, err := os.Stat(gate); err == nil {
			return
		}
		select {
		case <-f.stdinEOF:
			f.out.flush()
			os.Exit(137)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// answerPending adds to reply what the model says of the messages the
// resumed session took into its last turn without answering them (the
// turn was cut off after the request that carried them): it reads them in
// the history and answers them now, as the reply of the turn they were
// taken into does.
func (f *fake) answerPending(reply string) string {
	for _, p := range f.unanswered {
		reply += "\n(also read while working: " + p + ")"
	}
	f.unanswered = nil
	return reply
}
