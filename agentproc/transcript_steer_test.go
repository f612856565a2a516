package agentproc_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
)

// TestTranscriptOfSteeredMessage reads the real CLI's transcripts of a
// message written while a turn ran (captures steer_transcript and
// steer_after_tool, recorded by TestRealCLICaptureSteerTranscript and
// TestRealCLICaptureSteerAfterTool) as cc-connect's recovery does: taken
// into the turn, the message is found by ContainsAbsorbed and not by
// ContainsUUID, and the turn's reply read back after its prompt answers it;
// run as a turn of its own, it is the other way round and its reply
// follows its own uuid.
func TestTranscriptOfSteeredMessage(t *testing.T) {
	for _, tc := range []struct {
		capture          string
		absorbed, ownRun bool
		turnReply        string // what the turn's reply read back holds
	}{
		{"steer_transcript", true, false, "tool said: started\nopened\nand you said: use the other file"},
		{"steer_after_tool", false, true, "slow reply  done"},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			path := filepath.Join("testdata", "captures", tc.capture, "transcript.jsonl")
			if has, err := agentproc.ContainsAbsorbed(path, steerMsgID); err != nil || has != tc.absorbed {
				t.Errorf("ContainsAbsorbed = %v, %v; want %v", has, err, tc.absorbed)
			}
			if has, err := agentproc.ContainsUUID(path, steerMsgID); err != nil || has != tc.ownRun {
				t.Errorf("ContainsUUID = %v, %v; want %v", has, err, tc.ownRun)
			}
			if has, err := agentproc.ContainsAbsorbed(path, steerTurnID); err != nil || has {
				t.Errorf("ContainsAbsorbed of the turn's own prompt = %v, %v; want false", has, err)
			}
			reply, found, err := agentproc.ReplyAfter(path, steerTurnID)
			if err != nil || !found || !strings.HasSuffix(reply, tc.turnReply) {
				t.Errorf("the turn's reply read back %q (%v, %v), want it to end with %q", reply, found, err, tc.turnReply)
			}
			if tc.ownRun {
				if reply, _, err := agentproc.ReplyAfter(path, steerMsgID); err != nil || reply != "echo: use the other file" {
					t.Errorf("the message's own reply read back %q (%v)", reply, err)
				}
			}
			if end, err := agentproc.ClassifyEnd(path); err != nil || end != agentproc.InterruptionNone {
				t.Errorf("ClassifyEnd = %q, %v; want none", end, err)
			}
			// Cut after the first block (text) of the message that calls
			// the tool, the transcript shows a turn that goes on: the line
			// carries the message's stop reason, tool_use.
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(data, []byte(`"type":"assistant"`))
			if i < 0 {
				t.Fatal("no assistant line in the capture")
			}
			end := i + bytes.IndexByte(data[i:], '\n') + 1
			if !bytes.Contains(data[:end], []byte(`"type":"text"`)) {
				t.Fatal("the capture's first assistant line is not the text block")
			}
			cut := filepath.Join(t.TempDir(), "cut.jsonl")
			if err := os.WriteFile(cut, data[:end], 0o600); err != nil {
				t.Fatal(err)
			}
			if end, err := agentproc.ClassifyEnd(cut); err != nil || end != agentproc.InterruptionTurn {
				t.Errorf("ClassifyEnd of the transcript cut after the text block = %q, %v; want interrupted_turn", end, err)
			}
		})
	}
}
