package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/cc-connect/cc-connect/cluster"
)

const clusterUsage = `Usage:
  cc-connect cluster status [--config FILE] [--json]
                                  who owns each binding, who stands by, and each host's health
  cc-connect cluster nkey FILE    write a new NKey seed to FILE (0600) and print its public key
  cc-connect cluster nkey --public FILE
                                  print the public key of the seed in FILE
`

// statusTimeout bounds `cluster status`: it reads a few keys.
const statusTimeout = 15 * time.Second

// clusterMain is `cc-connect cluster …`.
func clusterMain(ctx context.Context, configPath string, args []string, std stdio) int {
	if len(args) == 0 {
		fmt.Fprint(std.Err, clusterUsage)
		return exitUsage
	}
	switch args[0] {
	case "status":
		return clusterStatus(ctx, configPath, args[1:], std)
	case "nkey":
		return clusterNKey(args[1:], std)
	case "help", "-h", "--help":
		fmt.Fprint(std.Out, clusterUsage)
		return exitOK
	}
	fmt.Fprintf(std.Err, "cc-connect cluster: unknown command %q\n\n%s", args[0], clusterUsage)
	return exitUsage
}

func clusterStatus(ctx context.Context, configPath string, args []string, std stdio) int {
	fs := flag.NewFlagSet("cc-connect cluster status", flag.ContinueOnError)
	fs.SetOutput(std.Err)
	fs.Usage = func() { fmt.Fprint(std.Err, clusterUsage) }
	path := fs.String("config", configPath, "config file")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "cc-connect cluster status: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	cfg := loadConfig(*path, std.Err)
	if cfg == nil {
		return exitUsage
	}
	s, ok := clusterSettings(cfg)
	if !ok {
		fmt.Fprintf(std.Err, "cc-connect: %s has no [cluster] table: this cc-connect runs alone (docs/cluster.md)\n", cfg.Path)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	log := newLogger(cfg.Log, std.Err).With("command", "cluster status")
	r, err := cluster.ReadStatus(ctx, s, log)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect cluster status: %v\n", err)
		return exitFailure
	}
	if *asJSON {
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(std.Err, "cc-connect cluster status: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	fmt.Fprint(std.Out, r.Text())
	return exitOK
}

func clusterNKey(args []string, std stdio) int {
	fs := flag.NewFlagSet("cc-connect cluster nkey", flag.ContinueOnError)
	fs.SetOutput(std.Err)
	fs.Usage = func() { fmt.Fprint(std.Err, clusterUsage) }
	public := fs.Bool("public", false, "print the public key of an existing seed")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprint(std.Err, clusterUsage)
		return exitUsage
	}
	file := fs.Arg(0)
	if *public {
		pub, err := cluster.SeedPublicKey(file)
		if err != nil {
			fmt.Fprintf(std.Err, "cc-connect cluster nkey: %v\n", err)
			return exitFailure
		}
		fmt.Fprintln(std.Out, pub)
		return exitOK
	}
	pub, err := cluster.NewSeedFile(file)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect cluster nkey: %v\n", err)
		return exitFailure
	}
	fmt.Fprintln(std.Out, pub)
	fmt.Fprintf(std.Err, "Wrote a new NKey seed to %s (keep it private). Set cluster.nkey_seed_file to it, "+
		"and list the public key above in the embedded server's cluster.embedded_nkeys.\n", file)
	return exitOK
}
