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

func TestQuestionRoundTrip(t *testing.T) {
	uuid := "6088ef75-df8e-4e17-9492-87e166cd0d56"
	tests := []struct {
		name      string
		limit     int
		requestID string
		c         platform.Choice
		q, o      int
		direct    bool
	}{
		{"answer fits Telegram", 64, uuid, platform.ChoiceAnswer, 3, 3, true},
		{"toggle", 64, uuid, platform.ChoiceToggle, 1, 2, true},
		{"submit", 100, uuid, platform.ChoiceSubmit, 2, 0, true},
		{"dismiss", 64, uuid, platform.ChoiceDismiss, 0, 0, true},
		{"id with the separator stays whole", 64, "a|b|c", platform.ChoiceAnswer, 0, 1, true},
		{"long id gets a reference", 64, strings.Repeat("r", 60), platform.ChoiceAnswer, 0, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRefs(tt.limit, 8)
			ref := r.QuestionRef(tt.requestID)
			if (ref == tt.requestID) != tt.direct {
				t.Errorf("ref %q for %q: direct=%v, want %v", ref, tt.requestID, ref == tt.requestID, tt.direct)
			}
			data := QuestionData(tt.c, tt.q, tt.o, ref)
			if len(data) > tt.limit {
				t.Fatalf("payload %q is %d bytes, over %d", data, len(data), tt.limit)
			}
			c, q, o, gotRef, ok := DecodeQuestion(data)
			if !ok || c != tt.c || q != tt.q || o != tt.o {
				t.Fatalf("DecodeQuestion(%q) = %v %d %d %v", data, c, q, o, ok)
			}
			if id, ok := r.RequestID(gotRef); !ok || id != tt.requestID {
				t.Errorf("request id %q, %v; want %q", id, ok, tt.requestID)
			}
			if _, _, ok := Decode(data); ok {
				t.Errorf("a question payload %q decodes as a permission button", data)
			}
		})
	}
	for _, bad := range []string{"ccq|", "ccq|a|0|0|", "ccq|z|0|0|r", "ccq|a|x|0|r", "ccq|a|10|0|r", "ccp|a|r"} {
		if _, _, _, _, ok := DecodeQuestion(bad); ok {
			t.Errorf("DecodeQuestion(%q) accepted", bad)
		}
	}
}

func TestPlanChoices(t *testing.T) {
	for _, c := range []platform.Choice{platform.ChoicePlanDefault, platform.ChoicePlanAcceptEdits, platform.ChoicePlanKeep} {
		got, ref, ok := Decode(Data(c, "req"))
		if !ok || got != c || ref != "req" {
			t.Errorf("plan choice %s: decoded %s %q %v", c, got, ref, ok)
		}
	}
}

// TestRevertFitsWhole: a turn summary's Revert button carries its request
// id ("revert:" and the turn's uuid) whole in Telegram's 64 bytes, so a
// press after a restart, which remembers no generated reference, still
// names its turn.
func TestRevertFitsWhole(t *testing.T) {
	id := "revert:6088ef75-df8e-4e17-9492-87e166cd0d56"
	r := NewRefs(64, 8)
	ref := r.Ref(id)
	if ref != id {
		t.Fatalf("Ref(%q) = %q, want the id itself", id, ref)
	}
	data := Data(platform.ChoiceRevert, ref)
	c, got, ok := Decode(data)
	if len(data) > 64 || !ok || c != platform.ChoiceRevert {
		t.Fatalf("Decode(%q) = %q, %q, %v", data, c, got, ok)
	}
	if back, ok := NewRefs(64, 8).RequestID(got); !ok || back != id {
		t.Errorf("a fresh Refs reads %q as %q, %v; want %q", got, back, ok, id)
	}
}
