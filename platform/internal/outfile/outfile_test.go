package outfile

import (
	"errors"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name, file string
		size       int
		want       string
		err        error
	}{
		{"plain", "a.txt", 3, "a.txt", nil},
		{"folders", "out/build/a.txt", 3, "a.txt", nil},
		{"windows folders", `out\build\a.txt`, 3, "a.txt", nil},
		{"empty", "", 3, "", ErrNoName},
		{"a folder alone", "out/", 3, "out", nil},
		{"a slash alone", "/", 3, "", ErrNoName},
		{"a dot", ".", 3, "", ErrNoName},
		{"at the limit", "a.bin", 10, "a.bin", nil},
		{"over the limit", "a.bin", 11, "a.bin", platform.ErrFileTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check(platform.OutgoingFile{Name: tt.file, Data: make([]byte, tt.size)}, 10)
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("Check(%q, %d bytes) = %q, %v; want %q, %v", tt.file, tt.size, got, err, tt.want, tt.err)
			}
			var tl *platform.FileTooLargeError
			if tt.err == platform.ErrFileTooLarge && (!errors.As(err, &tl) || tl.Size != 11 || tl.Limit != 10) {
				t.Errorf("error %v does not carry the figures", err)
			}
		})
	}
}
