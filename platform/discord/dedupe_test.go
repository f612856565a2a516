package discord

import (
	"testing"
	"time"
)

func TestDedupe(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDedupe(3, time.Minute)
	d.now = func() time.Time { return now }
	steps := []struct {
		key     string
		advance time.Duration
		want    bool
	}{
		{"a", 0, true},
		{"a", 0, false}, // redelivery
		{"b", 0, true},
		{"c", 0, true},
		{"d", 0, true}, // over the bound: "a" is forgotten
		{"a", 0, true},
		{"d", 0, false},
		{"d", 2 * time.Minute, true}, // expired
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if got := d.first(s.key); got != s.want {
			t.Fatalf("step %d: first(%q) = %v, want %v", i, s.key, got, s.want)
		}
	}
}
