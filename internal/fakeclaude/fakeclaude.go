// Package fakeclaude builds a fake `claude` CLI for unit tests
// (cmd/fakeclaude). The fake imitates Claude Code 2.1.332 in `-p` mode as
// PROTOCOL.md §11 describes, offline and in milliseconds, so the driver
// (agentproc) and the engine can be tested without the real CLI. The real
// CLI is tested separately (agentproc/integration_test.go).
//
// What it imitates: the flags the driver passes and their errors (exit 1
// with the CLI's stderr text); no output before the first user line; per
// turn system/init, assistant events with one block each (stop_reason null,
// usage with input and cache fields), exactly one result whose keys are not
// type-first, with cumulative total_cost_usd and modelUsage (contextWindow),
// result_index counting from 0; the control protocol (can_use_tool
// permission prompts with suggestions and blocked_path, interrupt with
// control_cancel_request for a pending prompt, set_model,
// set_permission_mode, initialize, get_context_usage, rewind_files (with
// CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=true: the files [[WRITE]]
// wrote since the message go back; without it the CLI's refusal),
// get_workspace_diff (always "no-repository"), and an error answer
// for unknown subtypes); malformed input lines (exit 1); stdin EOF (finish
// the turn, exit 1 if the last result was an error); SIGTERM (exit 143, no
// result). Sessions persist as transcripts in the real format at
// $CLAUDE_CONFIG_DIR (else $HOME/.claude) + /projects/<slug>/<id>.jsonl, so
// --continue, --resume (unknown id: stderr "No conversation found with session ID: <id>",
// a result with errors and exit 1 without reading stdin), --fork-session (a
// new id; the original file is left byte-identical), --session-id, the
// transcript helpers and crash classification work against it.
//
// Markers in the prompt choose a scenario (default: reply "echo: <prompt>"):
//
//	[[TOOL:cmd]]  a Bash tool_use for cmd. Read-only commands (echo, pwd, ls,
//	              cat) and `sleep N` run without asking (`sleep N` takes N
//	              seconds, a fraction allowed, to report its result, which an
//	              interrupt cuts short); others send can_use_tool and wait:
//	              allow -> tool_result "(fake) ran: <cmd>" (updatedInput's
//	              command wins; updatedPermissions addRules skip later prompts
//	              for that command), deny -> is_error tool_result with the
//	              message, the turn goes on and permission_denials lists it,
//	              deny+interrupt -> error_during_execution/aborted_tools, an
//	              interrupt -> control_cancel_request then aborted_tools, a
//	              control_response error -> deny with "Tool permission request
//	              failed: Error: <text>", stdin EOF -> deny "AbortError: Stream
//	              closed". The command is never executed. [[TOOL]] alone means
//	              `echo hi`. User lines arriving from the turn's start until its
//	              last tool's result are folded into the same turn (one
//	              result; the reply names them); later ones, and those of a
//	              turn that ended before it read them (an interrupt), run next
//	              as turns of their own, as the CLI's queue runs them.
//	              Permission modes acceptEdits and bypassPermissions allow,
//	              dontAsk denies, without asking. Several [[TOOL:…]] markers
//	              run one after the other in the same turn (each asking as
//	              above); the reply has one "tool said: …" line per tool.
//	              Without Bash in the session's tools (--tools,
//	              --disallowedTools, which init's tools list reflects) the
//	              tool_use gets the CLI's "No such tool available" error.
//	              A folded message gets command_lifecycle queued (as it
//	              arrives), started (and a user line of its uuid in the
//	              transcript) and completed (with the reply).
//	[[WRITE:path:text]] write text to path (relative to the working
//	              directory) before the reply, reported as the real CLI's
//	              Write is on stdout (the tool_use, then the tool_result with
//	              its tool_use_result: create with the content, or update
//	              with one hunk replacing every line, where the real CLI's
//	              hunk is a minimal diff), not in the
//	              transcript; with checkpointing on, keep what the file held
//	              for rewind_files.
//	[[BG]]        a Bash call with run_in_background: background_tasks_changed,
//	[[BG:path]]   task_started (is_backgrounded), the tool_result and the
//	              turn's result while the task runs. When path exists (at
//	              once without one) the task ends: task_updated,
//	              task_notification, background_tasks_changed [], then a
//	              turn of the CLI's own (init, "background task: <summary>",
//	              a result of origin task-notification).
//	[[TOOLONG]]   prompt too long: a synthetic assistant and a result
//	              success/is_error/prompt_too_long/400 (with the compacting and
//	              failed status pair when the session has earlier prompts). The
//	              session stays poisoned: later turns, also after --resume, fail
//	              the same way unless FAKECLAUDE_TOOLONG_STICKY=0.
//	[[CRASH]]     one assistant event (streamed but, as an unfinished message,
//	              not in the transcript, which ends on the prompt), a stderr
//	              line, then exit 2 mid-turn without a result. With
//	              [[TOOL:cmd]] the crash comes right after the tool_use, so the
//	              transcript ends on a tool call without its result.
//	[[ORPHAN]]    start a background child (sleeping 60 s) that inherits
//	              stdout and stderr, then crash (exit 2): the pipes stay open
//	              after the fake is gone. The child is in the fake's process
//	              group; kill the group to clean up.
//	[[HANG]]      no output after init until an interrupt (aborted_streaming
//	              result) or a signal; stdin EOF does not end it.
//	[[DEAF]]      like [[HANG]], and stdin is no longer read at all (not
//	              even control requests): writes to the fake block once the
//	              pipe is full.
//	[[SLOW]]      stream chunks every 10 ms (not shown until the end, as
//	              without --include-partial-messages) until an interrupt
//	              (partial assistant, aborted_streaming), or until the file named
//	              by FAKECLAUDE_RELEASE exists; [[SLOW:N]] ends after N chunks.
//	[[DRIP:N]]    the echo reply in N text deltas 100 ms apart (stream_event
//	              lines with --include-partial-messages; nothing until the end
//	              without), then the whole assistant message; an interrupt
//	              meanwhile aborts it.
//	[[MALFORMED]] write a non-JSON stdout line, then reply normally.
//	[[SELF:NN]]   the echo reply ends with the model's self-report line
//	              "[ctx: ~NN%]".
//	[[BIG]]       the call reports input_tokens 120000.
//	[[HUGE:N]]    the reply text is N bytes long (one stdout line of N+ bytes).
//	[[EXEC:cmd]]  really run cmd with /bin/sh -c in the working directory,
//	              as the fake's user and with its environment, and reply
//	              "exec exit <code>:\n<stdout and stderr>" (for tests of
//	              what the agent's tools can reach; no permission prompt).
//	[[LIMIT:path]] while path exists, the request is refused for a usage
//	              limit: a synthetic assistant ("error":"rate_limit", "API
//	              Error: Request rejected (429) · …"), a result with is_error
//	              and api_error_status 429, and exit 1. A Unix time in the
//	              file is the window's reset, reported first in a
//	              rate_limit_event (status rejected, resetsAt).
//	[[LIMITWARN:unix]] a rate_limit_event allowed_warning resetting then,
//	              before the turn's usual answer.
//	[[ASKHOST]]   send the host a control_request of a subtype agentproc does
//	              not handle ("elicitation") and wait for its answer; reply
//	              "host refused: <error>" or "host answered: <response>".
//
// Environment:
//
//	FAKECLAUDE_CONTEXT_WINDOW=N     modelUsage contextWindow (default 1000000;
//	                                200000 for *-sonnet-4-5 and *-haiku-4-5)
//	FAKECLAUDE_INPUT_TOKENS=N       input_tokens of every call (default 7)
//	FAKECLAUDE_RECORD=<file>        append every received user line as JSON
//	                                {pid, session_id, uuid, text}, for
//	                                exactly-once checks
//	FAKECLAUDE_TOOLONG_ON_RESUME=1  every turn of a resumed process fails as
//	                                prompt too long
//	FAKECLAUDE_TOOLONG_STICKY=0     a too-long failure does not poison later turns
//	FAKECLAUDE_RELEASE=<file>       ends [[SLOW]] turns once the file exists
//	FAKECLAUDE_BLOCK_GATE=<file>    a turn calling a tool holds between the text
//	                                and the tool_use block of that message (both
//	                                in the transcript with stop_reason tool_use,
//	                                as the CLI writes them; writing <file>.held)
//	                                until the file exists; stdin closed there
//	                                ends the process (exit 137), as a kill would
//	FAKECLAUDE_OWN_GATE=<file>      the CLI's own turn after a [[BG]] task ends
//	                                holds after its init, before its answer
//	                                reaches the transcript (writing <file>.held),
//	                                until the file exists; stdin closed there
//	                                ends the process (exit 137)
//	FAKECLAUDE_IGNORE_SIGTERM=1     ignore SIGTERM (to test SIGKILL escalation)
//	FAKECLAUDE_VERSION=<v>          what --version prints (default the pinned release)
//	FAKECLAUDE_INITIALIZE=refuse    answer initialize with an error; =ignore: never
//	                                answer it
//
// Usage per call: input_tokens as above, cache_creation 1500, cache_read
// 2500 + 100 per earlier call of the session, so the context grows.
package fakeclaude

import (
	"testing"

	"github.com/cc-connect/cc-connect/internal/testbin"
)

// Build compiles the fake claude once per test process and returns the
// binary's path (see testbin.Build).
func Build(t testing.TB) string {
	t.Helper()
	return testbin.Build(t, "./internal/fakeclaude/cmd/fakeclaude", "claude")
}
