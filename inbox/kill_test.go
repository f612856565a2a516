package inbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestInboxKilledMidAppendLosesNothingAccepted runs a child that appends and
// acknowledges in a loop, reporting each accepted id on stdout once Append
// returned and each acknowledged one once Ack returned (or, for
// AckUnsynced, once its record was written, before the fsync), and
// SIGKILLs it at several points. Every id the child reported
// as accepted and not acknowledged must be pending after reopening, in
// order, and the journal must open cleanly.
func TestInboxKilledMidAppendLosesNothingAccepted(t *testing.T) {
	if path := os.Getenv("INBOX_KILL_CHILD"); path != "" {
		in, err := Open(path, Limits{MaxPending: 1 << 20, MaxBytes: 1 << 30}, nil)
		if err != nil {
			fmt.Println("open error:", err)
			os.Exit(3)
		}
		for i := 0; ; i++ {
			id := fmt.Sprintf("m%06d", i)
			if err := in.Append(entry(id)); err != nil {
				os.Exit(4)
			}
			fmt.Println("add", id)
			switch i % 6 {
			case 0:
				if err := in.Ack(id, AckResult); err != nil {
					os.Exit(5)
				}
				fmt.Println("ack", id)
			case 3:
				// Reported before its fsync: a kill of the process
				// after the write must not bring it back.
				sync, err := in.AckUnsynced(id, AckResult)
				if err != nil {
					os.Exit(5)
				}
				fmt.Println("ack", id)
				if err := sync(); err != nil {
					os.Exit(6)
				}
			}
		}
	}
	for _, killAfter := range []int{1, 7, 40, 150} {
		t.Run(fmt.Sprint("after_", killAfter), func(t *testing.T) {
			path := journalPath(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestInboxKilledMidAppendLosesNothingAccepted$")
			cmd.Env = append(os.Environ(), "INBOX_KILL_CHILD="+path)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			var accepted []string
			acked := map[string]bool{}
			for sc.Scan() {
				var op, id string
				fmt.Sscan(sc.Text(), &op, &id)
				switch op {
				case "add":
					accepted = append(accepted, id)
				case "ack":
					acked[id] = true
				}
				if len(accepted) == killAfter {
					cmd.Process.Kill()
					break
				}
			}
			cmd.Wait()
			in, err := Open(path, Limits{MaxPending: 1 << 20, MaxBytes: 1 << 30}, nil)
			if err != nil {
				t.Fatalf("reopen after kill: %v", err)
			}
			defer in.Close()
			pending := map[string]bool{}
			for _, e := range in.Pending() {
				pending[e.ID] = true
			}
			for i, id := range accepted {
				// Every third message is acknowledged right after it is
				// accepted, possibly after we stopped reading: it may be
				// gone. Every other accepted message must still be there.
				if i%3 != 0 && !pending[id] {
					t.Errorf("accepted message %s lost", id)
				}
				if acked[id] && pending[id] {
					t.Errorf("acknowledged message %s came back", id)
				}
			}
			prev := ""
			for _, e := range in.Pending() {
				if e.ID <= prev {
					t.Errorf("order broken: %s after %s", e.ID, prev)
				}
				prev = e.ID
			}
		})
	}
}
