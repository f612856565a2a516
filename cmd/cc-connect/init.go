package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cc-connect/cc-connect/config"
)

// platformDocs is where each chat platform's setup (the app, its tokens,
// the ids to bind) is described, for someone who has only the binary.
var platformDocs = map[string]string{
	config.TypeSlack:    "https://github.com/cc-connect/cc-connect/blob/main/docs/slack.md",
	config.TypeDiscord:  "https://github.com/cc-connect/cc-connect/blob/main/docs/discord.md",
	config.TypeTelegram: "https://github.com/cc-connect/cc-connect/blob/main/docs/telegram.md",
}

// initMain is `cc-connect init [--platform P] [--workspace DIR] [--config
// FILE]`: it writes a starter config (config.NewStarter) where none is,
// and says what to do next.
func initMain(configPath string, args []string, std stdio) int {
	fs := flag.NewFlagSet("cc-connect init", flag.ContinueOnError)
	path := fs.String("config", configPath, "the config file to write")
	platform := fs.String("platform", config.TypeLocal, "local, slack, discord or telegram")
	ws := fs.String("workspace", ".", "the folder Claude Code works in")
	if code, ok := parseFlags(fs, args, std); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "cc-connect init: unexpected argument %q\n\n%s", fs.Arg(0), usageText)
		return exitUsage
	}
	workspace, err := initWorkspace(*ws)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect init: --workspace %s\n", err)
		return exitUsage
	}
	starter, err := config.NewStarter(*platform, workspace)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect init: --platform: %v\n", err)
		return exitUsage
	}
	if err := writeNewPrivateFile(*path, starter.Text); err != nil {
		fmt.Fprintf(std.Err, "cc-connect init: %v\n", err)
		return exitUsage
	}
	writeNextSteps(std, *path, *platform, workspace, starter.Vars)
	return exitOK
}

// initWorkspace makes dir absolute and checks that it is a folder: the
// config's relative paths are taken from the config file's folder, which
// need not be where init ran.
func initWorkspace(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: does not exist (create it, or name the folder Claude Code should work in)", abs)
	case err != nil:
		return "", fmt.Errorf("%s: %w", abs, err)
	case !info.IsDir():
		return "", fmt.Errorf("%s: is not a folder", abs)
	}
	return abs, nil
}

// writeNewPrivateFile writes data to a new file at path, mode 0600 (a
// config may come to hold a token), creating missing parent folders 0700.
// It never replaces an existing file, not even one created a moment ago
// by someone else: O_EXCL decides.
func writeNewPrivateFile(path string, data []byte) (err error) {
	if err := mkdirPrivate(filepath.Dir(path)); err != nil {
		return fmt.Errorf("creating the config's folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; init never writes over a config: edit it, move it aside, or write another with --config FILE", path)
	}
	if err != nil {
		return fmt.Errorf("writing the config: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("writing %s: %w", path, cerr)
		}
		if err != nil {
			os.Remove(path) // ours, half written
		}
	}()
	// The umask may have narrowed the mode further (0400 leaves the admin
	// a file they cannot edit); 0600 is what the file should be.
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("setting %s to 0600: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Sync()
}

// mkdirPrivate creates dir and its missing parents 0700, whatever the
// umask (one that takes the owner's write bit would leave a folder the
// config cannot be written into); existing folders are left as they are.
func mkdirPrivate(dir string) error {
	if _, err := os.Stat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirPrivate(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
		return nil // made meanwhile, by someone else
	} else if err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// writeNextSteps tells what is left between the file just written and a
// running cc-connect.
func writeNextSteps(std stdio, path, platform, workspace string, vars []string) {
	flagPart := ""
	if path != defaultConfigPath {
		flagPart = " --config " + shellQuote(path)
	}
	fmt.Fprintf(std.Out, "Wrote %s: %s, working in %s.\n\nNext:\n", path, platform, workspace)
	if platform == config.TypeLocal {
		fmt.Fprintf(std.Out, "  1. Check that everything run needs is in place (claude installed and logged in):\n"+
			"       cc-connect doctor%s\n"+
			"  2. Chat with Claude Code in this terminal:\n"+
			"       cc-connect run%s\n", flagPart, flagPart)
		return
	}
	exports := make([]string, len(vars))
	for i, v := range vars {
		exports[i] = "       export " + v + "=…"
	}
	fmt.Fprintf(std.Out, "  1. Give cc-connect the bot's secrets in its environment, and add your user id to\n"+
		"     allow_users in %s. Where to find both:\n"+
		"     %s\n%s\n"+
		"  2. Check that everything run needs is in place, then start:\n"+
		"       cc-connect doctor%s\n"+
		"       cc-connect run%s\n",
		path, platformDocs[platform], strings.Join(exports, "\n"), flagPart, flagPart)
}

// configNotFoundHint is what to do when the config file does not exist.
func configNotFoundHint(path string) string {
	flagPart := ""
	if path != defaultConfigPath {
		flagPart = " --config " + shellQuote(path)
	}
	return fmt.Sprintf("Write a starter config with: cc-connect init%s [--platform slack|discord|telegram]\n"+
		"(every key is described in docs/configuration.md), or point at another file with --config FILE.\n", flagPart)
}

// shellQuote quotes s for a POSIX shell when it needs it, so that a
// printed command can be pasted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
