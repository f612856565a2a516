package testlog

import (
	"log/slog"
	"testing"
	"time"
)

func TestWaitSeesALaterRecord(t *testing.T) {
	var buf Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("Other")
	done := make(chan struct{})
	go func() {
		defer close(done)
		log.Info("Ready", "port", "1")
		log.Info("Ready", "port", "2")
	}()
	buf.WaitRecord(t, time.Minute, "Ready", "port", "2")
	if recs := buf.WaitRecords(t, time.Minute, "Ready", 2); len(recs) != 2 || recs[0]["port"] != "1" {
		t.Errorf("records = %v, want both Ready records in order", recs)
	}
	<-done
	if got := len(buf.Records("Other")); got != 1 {
		t.Errorf("Records(Other) = %d records, want 1", got)
	}
}

// failRecorder stands in for testing.TB to see a wait fail.
type failRecorder struct {
	testing.TB
	failed bool
}

func (f *failRecorder) Helper()               {}
func (f *failRecorder) Fatalf(string, ...any) { f.failed = true }

func TestWaitFailsAtTheLimit(t *testing.T) {
	var buf Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("Ready", "port", "1")
	f := &failRecorder{TB: t}
	buf.WaitRecord(f, time.Millisecond, "Ready", "port", "2")
	if !f.failed {
		t.Error("WaitRecord of a record never logged did not fail")
	}
	f.failed = false
	buf.WaitRecords(f, time.Millisecond, "Ready", 2)
	if !f.failed {
		t.Error("WaitRecords of more records than logged did not fail")
	}
}
