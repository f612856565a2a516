package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// BenchmarkSlackAckWhileAConversationHangs is the head-of-line promise as
// a figure: `cc-connect run`'s code in this process with the Slack adapter
// against the fake Slack and the fake claude, while Slack holds every
// chat.postMessage to channel CA (a reply being posted there never
// returns) and the download of a file shared in channel CD. Each op is a
// new thread in channel CB: its message written to the socket, its ack,
// its reply. held=none is the same without CA's and CD's messages,
// nothing held: the two differ by what the hung conversations cost the
// others. TestSlackSlowConversationHoldsUpOnlyItself asserts the case's
// outcome (every message answered once, CA and CD once let go).
//
// Metrics (ms): ack-p50-ms and ack-max-ms, from the event written to the
// socket to its ack read back; reply-p50-ms, to CB's reply posted.
func BenchmarkSlackAckWhileAConversationHangs(b *testing.B) {
	for _, held := range []bool{false, true} {
		name := "held=none"
		if held {
			name = "held=posts+download"
		}
		b.Run(name, func(b *testing.B) { benchSlackAckWhileHung(b, held) })
	}
}

func benchSlackAckWhileHung(b *testing.B, held bool) {
	r := startSlackRun(b, fakeclaude.Build(b), fakeapi.Start(b).URL(), filepath.Join(b.TempDir(), "run"), 0)
	f := r.slack
	if held {
		releasePosts := f.HoldWhere("chat.postMessage", func(form map[string]string) bool { return form["channel"] == "CA" })
		defer releasePosts()
		releaseDownload := f.HoldWhere(fakeslack.Download, nil)
		defer releaseDownload() // before the run stops, so that its conversations end

		f.Deliver(b, fakeslack.MsgEvent("CA", "1700000001.000100", "U1", "a1", nil))
		f.WaitHeld(b, "chat.postMessage", 1)
		file := f.AddFile("F1", "big.log", "text/plain", "log lines\n")
		f.Deliver(b, fakeslack.MsgEvent("CD", "1700000002.000100", "U1", "d1",
			map[string]any{"subtype": "file_share", "files": []any{file.Object()}}))
		f.WaitHeld(b, fakeslack.Download, 1)
	}

	var acks, replies []time.Duration
	i := 0
	for b.Loop() {
		i++
		ts := fmt.Sprintf("%d.000100", 1700000100+i)
		text := fmt.Sprintf("b%d", i)
		sent := time.Now()
		env := f.Deliver(b, fakeslack.MsgEvent("CB", ts, "U1", text, nil))
		f.WaitPost(b, "the answer in CB", func(m fakeslack.Message) bool {
			return m.Channel == "CB" && m.ThreadTS == ts && strings.Contains(m.Text, "echo: "+text)
		})
		replies = append(replies, time.Since(sent))
		f.WaitAck(b, env)
		r.mu.Lock()
		acks = append(acks, r.acked[env].Sub(sent))
		r.mu.Unlock()
	}
	b.StopTimer()
	for _, m := range f.Posts() {
		if m.Channel == "CA" || m.Channel == "CD" && strings.Contains(m.Text, "echo:") {
			b.Fatalf("%s was answered while Slack held it: %q", m.Channel, m.Text)
		}
	}
	b.ReportMetric(p50ms(acks), "ack-p50-ms")
	b.ReportMetric(float64(slices.Max(acks))/float64(time.Millisecond), "ack-max-ms")
	b.ReportMetric(p50ms(replies), "reply-p50-ms")
}
