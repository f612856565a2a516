package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/doctor"
)

// doctorMain is `cc-connect doctor [--config FILE]`: offline checks of
// everything `run` depends on, one line each, exit 1 when any fails (2
// when the config itself does not load).
func doctorMain(ctx context.Context, configPath string, args []string, std stdio) int {
	fs := flag.NewFlagSet("cc-connect doctor", flag.ContinueOnError)
	path := fs.String("config", configPath, "config file")
	if code, ok := parseFlags(fs, args, std); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "cc-connect doctor: unexpected argument %q\n\n%s", fs.Arg(0), usageText)
		return exitUsage
	}
	return doctorCommand(ctx, *path, doctor.Options{}, std)
}

func doctorCommand(ctx context.Context, path string, opts doctor.Options, std stdio) int {
	cfg, checks := doctor.LoadConfig(path)
	report := doctor.Report{Checks: checks}
	if cfg != nil {
		report.Checks = append(report.Checks, adaptersCheck(cfg))
		report.Checks = append(report.Checks, doctor.Run(ctx, cfg, opts).Checks...)
	}
	if err := report.Write(std.Out); err != nil {
		fmt.Fprintf(std.Err, "cc-connect doctor: %v\n", err)
		return exitFailure
	}
	switch {
	case cfg == nil:
		return exitUsage
	case report.Failed():
		return exitFailure
	}
	return exitOK
}

// adaptersCheck builds every adapter the way `run` does (constructors only
// validate; nothing connects), so a platform type missing from this build
// or a setting its adapter refuses is found here.
func adaptersCheck(cfg *config.Config) doctor.Check {
	c := doctor.Check{Name: "platform adapters"}
	if err := checkAvailable(cfg, adapterFactories); err != nil {
		c.Status, c.Detail = doctor.Fail, err.Error()
		return c
	}
	adapters, err := buildAdapters(cfg, adapterDeps{Stdin: eofReader{}, Stdout: io.Discard, Stderr: io.Discard, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		c.Status, c.Detail = doctor.Fail, err.Error()
		return c
	}
	c.Status, c.Detail = doctor.OK, fmt.Sprintf("%d built (nothing contacted)", len(adapters))
	return c
}

// eofReader is an empty stdin for the terminal adapter's constructor.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
