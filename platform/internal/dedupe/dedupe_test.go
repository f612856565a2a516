package dedupe

import (
	"testing"
	"time"
)

func TestFirst(t *testing.T) {
	now := time.Unix(1000, 0)
	d := New(3, time.Minute)
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
		if got := d.First(s.key); got != s.want {
			t.Fatalf("step %d: First(%q) = %v, want %v", i, s.key, got, s.want)
		}
	}
}

func TestBounds(t *testing.T) {
	s := New(3, time.Minute)
	now := time.Unix(0, 0)
	s.now = func() time.Time { return now }
	for _, k := range []string{"a", "b", "c"} {
		if !s.First(k) {
			t.Fatalf("%s not new", k)
		}
	}
	if s.First("a") {
		t.Error("a seen twice")
	}
	s.First("d") // evicts the oldest, a
	if !s.First("a") {
		t.Error("a should have been evicted by size")
	}
	now = now.Add(2 * time.Minute)
	if !s.First("d") {
		t.Error("d should have expired")
	}
	if s.Len() > 3 {
		t.Errorf("holds %d keys, max 3", s.Len())
	}
}
