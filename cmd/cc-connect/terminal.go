package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/term"

	"github.com/cc-connect/cc-connect/config"
)

// How `cc-connect run` serves a person at a terminal: the terminal chat
// reads what they type (interactive), and on a terminal screen it streams
// replies under a status line while the log goes to a file.

// chatMode is how the terminal chat meets its user.
type chatMode struct {
	// interactive: the terminal chat is served and its input is a
	// terminal (a person typing, Ctrl-C stops a turn).
	interactive bool
	// screen: interactive, and replies go to a terminal too.
	screen bool
	// width is the screen's width in columns now (0 when unknown); nil
	// without a screen.
	width func() int
}

func terminalChat(cfg *config.Config, std stdio) chatMode {
	served := false
	for _, p := range cfg.Platforms {
		served = served || p.Type == config.TypeLocal
	}
	m := chatMode{interactive: served && isTerminal(std.In)}
	m.screen = m.interactive && isTerminal(std.Out)
	if m.screen {
		fd := int(std.Out.(*os.File).Fd())
		m.width = func() int {
			w, _, err := term.GetSize(fd)
			if err != nil {
				return 0
			}
			return w
		}
	}
	return m
}

// isTerminal reports whether f is a terminal (not a file, a pipe or
// /dev/null).
func isTerminal(f any) bool {
	fd, ok := f.(*os.File)
	return ok && term.IsTerminal(int(fd.Fd()))
}

// logFileName is the log's file in the state dir when the terminal chat
// runs on a terminal.
const logFileName = "cc-connect.log"

// openLogFile opens the log file in the state dir for appending, private
// to the user (0600), and returns it with its path.
func openLogFile(stateDir string) (io.WriteCloser, string, error) {
	path := filepath.Join(stateDir, logFileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, path, fmt.Errorf("opening the log file: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return nil, path, fmt.Errorf("opening the log file: %w", err)
	}
	return f, path, nil
}
