package agentproc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
)

// TestFakeMatchesRecordedStreams replays the script of each recorded
// real-CLI stream (testdata/full, TestRealCLIRecordFixtures) against the fake
// claude and compares what agentproc makes of the two, event type by event
// type: the fake is only a fair stand-in where the driver sees the same
// sequence from it as from the real CLI. (The shared captures cut lines at
// 700 characters, so the comparison uses the uncut recordings of the same
// scenarios.)
func TestFakeMatchesRecordedStreams(t *testing.T) {
	bin := fakeclaude.Build(t)
	for _, sc := range recordScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			if sc.fakeSkip != "" {
				t.Skip(sc.fakeSkip)
			}
			t.Parallel()
			real, err := os.ReadFile(filepath.Join("testdata", "full", sc.name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			r := startRecorder(t, bin, fakeapi.Start(t), sc.args)
			sc.run(r)
			fake := r.finish()
			want, got := eventKinds(t, real), eventKinds(t, fake)
			if len(want) == 0 {
				t.Fatalf("the recording gave the driver only %q", want)
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("the fake's events differ from the real CLI's:\nreal %s\nfake %s\nfake stdout:\n%s",
					strings.Join(want, " "), strings.Join(got, " "), fake)
			}
		})
	}
}

// eventKinds decodes a stream as the reader does and names what each line
// gave the driver: its events' types, or control_response. Lines that give
// nothing (kinds the driver ignores) are left out.
func eventKinds(t *testing.T, stream []byte) []string {
	t.Helper()
	var dec decoder
	var out []string
	for _, line := range bytes.Split(stream, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		d := dec.decodeLine(line)
		for _, ev := range d.events {
			k := strings.TrimPrefix(fmt.Sprintf("%T", ev), "*")
			k = strings.TrimPrefix(k, "agentproc.")
			if res, ok := ev.(*Result); ok {
				k += "(" + res.Subtype + ")"
			}
			out = append(out, k)
		}
		if d.replyID != "" {
			out = append(out, "control_response")
		}
		if d.unsupported != "" {
			out = append(out, "unsupported:"+d.unsupportedType)
		}
	}
	return out
}
