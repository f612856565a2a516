package permbutton

import (
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

func TestRoundTrip(t *testing.T) {
	uuid := "6088ef75-df8e-4e17-9492-87e166cd0d56"
	tests := []struct {
		name      string
		limit     int
		requestID string
		direct    bool // the id itself is the reference
	}{
		{"uuid fits Telegram", 64, uuid, true},
		{"uuid fits Discord", 100, uuid, true},
		{"just fits", 10, "abcd", true},
		{"one byte over", 10, "abcde", false},
		{"long id", 64, strings.Repeat("r", 120), false},
		{"id looking like a reference", 64, "~abc", false},
		{"id with the separator", 64, "a|b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRefs(tt.limit, 8)
			ref := r.Ref(tt.requestID)
			if (ref == tt.requestID) != tt.direct {
				t.Fatalf("Ref = %q, want the id itself: %v", ref, tt.direct)
			}
			for _, c := range []platform.Choice{platform.ChoiceAllow, platform.ChoiceAlwaysAllow, platform.ChoiceDeny} {
				data := Data(c, ref)
				if len(data) > max(tt.limit, 23) { // a payload with a generated reference takes 23 bytes
					t.Errorf("payload %q is over %d bytes", data, tt.limit)
				}
				gotC, gotRef, ok := Decode(data)
				if !ok || gotC != c || gotRef != ref {
					t.Fatalf("Decode(%q) = %q, %q, %v", data, gotC, gotRef, ok)
				}
				if id, ok := r.RequestID(gotRef); !ok || id != tt.requestID {
					t.Errorf("RequestID(%q) = %q, %v; want %q", gotRef, id, ok, tt.requestID)
				}
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, data := range []string{"", "ccp|", "ccp|a", "ccp|x|id", "other|a|id", "a|id"} {
		if c, ref, ok := Decode(data); ok {
			t.Errorf("Decode(%q) = %q, %q, true; want not ours", data, c, ref)
		}
	}
}

func TestRequestIDUnknown(t *testing.T) {
	r := NewRefs(20, 2)
	first := r.Ref(strings.Repeat("x", 40))
	r.Ref(strings.Repeat("y", 40))
	r.Ref(strings.Repeat("z", 40)) // the first reference is forgotten
	for _, ref := range []string{"", "~0123456789abcdef", first} {
		if id, ok := r.RequestID(ref); ok {
			t.Errorf("RequestID(%q) = %q, true; want unknown", ref, id)
		}
	}
}
