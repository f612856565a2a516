package testenv

import (
	"testing"
	"time"
)

type fixedDeadline struct {
	at time.Time
	ok bool
}

func (d fixedDeadline) Deadline() (time.Time, bool) { return d.at, d.ok }

func TestHangLimit(t *testing.T) {
	const floor = 20 * time.Second
	tests := []struct {
		name     string
		left     time.Duration
		ok       bool
		min, max time.Duration
	}{
		{"no deadline is the floor", 0, false, floor, floor},
		{"a long run leaves a tenth to report", 90 * time.Minute, true, 80 * time.Minute, 81 * time.Minute},
		{"a short run keeps five seconds back", 40 * time.Second, true, 34 * time.Second, 35 * time.Second},
		{"never under the floor", 10 * time.Second, true, floor, floor},
		{"a deadline passed is the floor", -time.Minute, true, floor, floor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HangLimit(fixedDeadline{time.Now().Add(tt.left), tt.ok}, floor)
			if got < tt.min || got > tt.max {
				t.Errorf("HangLimit = %v, want within [%v, %v]", got, tt.min, tt.max)
			}
		})
	}
}
