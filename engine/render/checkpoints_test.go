package render

import (
	"strings"
	"testing"
)

func TestChangesSummary(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = string(rune('a'+i)) + ".go"
	}
	tests := []struct {
		name string
		in   TurnChanges
		want []string
		not  []string
	}{
		{"one file, buttons", TurnChanges{Files: []string{"new.txt"}, Added: 3, Buttons: true},
			[]string{"This turn changed 1 file (+3 −0): `new.txt`", "`!diff`", "the button or `!revert`"}, nil},
		{"two files, no buttons", TurnChanges{Files: []string{"a.go", "b.go"}, Added: 4, Removed: 1},
			[]string{"2 files (+4 −1): `a.go`, `b.go`", "undo it with `!revert`"}, []string{"button"}},
		{"a backtick in a name", TurnChanges{Files: []string{"we`ird"}}, []string{"`we'ird`"}, nil},
		{"many files", TurnChanges{Files: many}, []string{"12 files", "`j.go` and 2 more"}, []string{"k.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChangesSummary(tt.in)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("%q has %q", got, n)
				}
			}
		})
	}
}

func TestReverted(t *testing.T) {
	got := Reverted("alice", []string{"keep.txt", "other.txt"}, 1, 4)
	want := "↩️ alice reverted the last turn: `keep.txt`, `other.txt` back to what they were before it (1 line put back, 4 taken out)."
	if got != want {
		t.Errorf("Reverted = %q, want %q", got, want)
	}
}
