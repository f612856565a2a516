package agentproc

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Transcript read benchmarks. Lite reads must stay flat as transcripts
// grow; the full parse is the baseline they avoid. The 1 GB cases need
// disk and minutes, so they run only when the -bench pattern names "1GB"
// or CC_BENCH_BIG=1, which keeps `-bench . -benchtime=1x` smoke runs short.
// Results are with a warm page cache (the files were just written).

var benchSizes = []struct {
	name string
	size int64
	big  bool
}{
	{"1MB", 1 << 20, false},
	{"100MB", 100 << 20, false},
	{"1GB", 1 << 30, true},
}

// benchUUID is the uuid of the last prompt of every generated transcript.
const benchUUID = "11111111-2222-4333-8444-555555555555"

// bigBenchSelected reports whether the 1 GB cases may run.
func bigBenchSelected() bool {
	if os.Getenv("CC_BENCH_BIG") == "1" {
		return true
	}
	f := flag.Lookup("test.bench")
	return f != nil && strings.Contains(f.Value.String(), "1GB")
}

// writeBenchTranscript writes a transcript of at least size bytes made of
// whole turns in the CLI's shape, with tool outputs of varied length, and
// ends it like the CLI does on exit (title and last prompt re-appended).
func writeBenchTranscript(tb testing.TB, path, sid string, size int64) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	b := newTranscript(sid, "/home/dev/work/bench")
	outputs := []string{
		strings.Repeat("ok\n", 10),
		strings.Repeat("line of tool output with some code { x := 1 }\n", 40),
		strings.Repeat("a longer file dump, as Read returns it\n", 250),
	}
	var written int64
	for i := 0; written < size; i++ {
		prompt := fmt.Sprintf("step %d: change the handler and run the tests", i)
		if i == 0 {
			prompt = "first: explain this repository"
		}
		b.turn(prompt, outputs[i%len(outputs)], fmt.Sprintf("done with step %d", i))
		if i == 0 {
			b.shape(43 << 10) // the first request's shape, as the CLI writes it
		}
		n, err := w.Write(b.buf.Bytes())
		if err != nil {
			tb.Fatal(err)
		}
		written += int64(n)
		b.buf.Reset()
	}
	b.userUUID("last: wrap up", benchUUID).text("wrapped up", "end_turn")
	b.customTitle("benchmark session").lastPrompt("last: wrap up")
	if _, err := w.Write(b.buf.Bytes()); err != nil {
		tb.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	// Write back now, so the timed loop does not compete with the
	// kernel flushing a gigabyte of dirty pages.
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// benchTranscripts generates each size's transcript once per parent
// benchmark, on first use, so that unselected sizes cost nothing.
type benchTranscripts struct {
	dir   string
	paths map[string]string
}

func (bt *benchTranscripts) get(b *testing.B, name string, size int64) string {
	if p, ok := bt.paths[name]; ok {
		return p
	}
	p := filepath.Join(bt.dir, "bench-"+name+".jsonl")
	writeBenchTranscript(b, p, "bench-"+name, size)
	bt.paths[name] = p
	return p
}

func runSizes(b *testing.B, fn func(b *testing.B, path string, size int64)) {
	bt := &benchTranscripts{dir: b.TempDir(), paths: map[string]string{}}
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			if s.big && !bigBenchSelected() {
				b.Skip("1 GB case: select it with -bench '.*/1GB' or set CC_BENCH_BIG=1")
			}
			p := bt.get(b, s.name, s.size)
			b.ResetTimer()
			fn(b, p, s.size)
		})
	}
}

// transcriptCPUTime is the CPU time (user and system, all threads) this process has
// used. On a shared machine wall time per op swings with other load; CPU
// time per op much less, so the benchmarks report both.
func transcriptCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportTranscriptCPU adds a cpu-ns/op metric for the loop that started at start.
func reportTranscriptCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(transcriptCPUTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkReadLite(b *testing.B) {
	runSizes(b, func(b *testing.B, path string, _ int64) {
		b.ReportAllocs()
		defer reportTranscriptCPU(b, transcriptCPUTime())
		for b.Loop() {
			l, err := ReadLite(path)
			if err != nil {
				b.Fatal(err)
			}
			if l.LastPrompt != "last: wrap up" || l.Title != "benchmark session" || l.FirstPrompt == "" {
				b.Fatalf("unexpected lite read: %+v", l)
			}
		}
	})
}

func BenchmarkFullParse(b *testing.B) {
	runSizes(b, func(b *testing.B, path string, size int64) {
		b.SetBytes(size)
		b.ReportAllocs()
		defer reportTranscriptCPU(b, transcriptCPUTime())
		for b.Loop() {
			l, err := fullParseLite(path)
			if err != nil {
				b.Fatal(err)
			}
			if l.LastPrompt != "last: wrap up" || l.Title != "benchmark session" {
				b.Fatalf("unexpected full parse: %+v", l)
			}
		}
	})
}

// fullParseLite is the naive way to get a Lite: decode every line of the
// file. It is the baseline the lite read is measured against.
func fullParseLite(path string) (Lite, error) {
	f, err := os.Open(path)
	if err != nil {
		return Lite{}, err
	}
	defer f.Close()
	var l Lite
	var custom string
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if t, ok := decodeTranscriptLine(line); ok {
				switch t.Type {
				case "user":
					if kind, text := classifyUser(&t); kind == userPrompt {
						if l.FirstPrompt == "" {
							l.FirstPrompt = text
						}
						l.LastPrompt = text
					}
				case "last-prompt":
					l.LastPrompt = t.LastPrompt
				case "custom-title":
					custom = t.CustomTitle
				}
				if l.Cwd == "" && t.Cwd != "" {
					l.Cwd, l.GitBranch = t.Cwd, t.GitBranch
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return l, err
		}
	}
	l.Title = custom
	return l, nil
}

func BenchmarkClassifyEnd(b *testing.B) {
	runSizes(b, func(b *testing.B, path string, _ int64) {
		b.ReportAllocs()
		defer reportTranscriptCPU(b, transcriptCPUTime())
		for b.Loop() {
			got, err := ClassifyEnd(path)
			if err != nil || got != InterruptionNone {
				b.Fatalf("ClassifyEnd = %s, %v", got, err)
			}
		}
	})
}

// BenchmarkContainsUUID measures the crash-recovery lookup on 100 MB: a
// message near the end is found at once, an absent one costs a full pass.
func BenchmarkContainsUUID(b *testing.B) {
	p := filepath.Join(b.TempDir(), "t.jsonl")
	writeBenchTranscript(b, p, "bench-uuid", 100<<20)
	for _, c := range []struct {
		name, uuid string
		want       bool
	}{
		{"recent", benchUUID, true},
		{"absent", "99999999-2222-4333-8444-555555555555", false},
	} {
		b.Run(c.name, func(b *testing.B) {
			defer reportTranscriptCPU(b, transcriptCPUTime())
			for b.Loop() {
				got, err := ContainsUUID(p, c.uuid)
				if err != nil || got != c.want {
					b.Fatalf("ContainsUUID = %v, %v", got, err)
				}
			}
		})
	}
}

func BenchmarkListSessions1000(b *testing.B) {
	cfg := b.TempDir()
	cwd := "/home/dev/work/bench"
	dir := ProjectDir(cfg, cwd)
	// Sizes cycle from a few KB (head and tail overlap) to 300 KB (they
	// do not); about 120 MB in all.
	sizes := []int64{8 << 10, 60 << 10, 120 << 10, 300 << 10}
	base := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		sid := fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)
		p := filepath.Join(dir, sid+".jsonl")
		writeBenchTranscript(b, p, sid, sizes[i%len(sizes)])
		mt := base.Add(time.Duration(i*7919%1000) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportTranscriptCPU(b, transcriptCPUTime())
	for b.Loop() {
		ls, err := ListSessions(cfg, cwd)
		if err != nil {
			b.Fatal(err)
		}
		if len(ls) != 1000 || !ls[0].ModTime.After(ls[999].ModTime) {
			b.Fatalf("listed %d sessions, not newest first", len(ls))
		}
	}
}
