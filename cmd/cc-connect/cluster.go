package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/config"
)

const clusterUsage = `Usage:
  cc-connect cluster status [--config FILE] [--json]
                                  who owns each binding, who stands by, and each host's health
  cc-connect cluster nkey FILE    write a new NKey seed to FILE (0600) and print its public key
  cc-connect cluster nkey --public FILE
                                  print the public key of the seed in FILE
  cc-connect cluster permissions [--config FILE]
                                  print the NATS server config that gives each host's user only
                                  what its part needs (for a NATS server cc-connect does not run)
  cc-connect cluster init [--config FILE] (--nkey-seed-file FILE | --creds-file FILE)
                                  create or update the stream and the bucket as the admin whose
                                  credential is given (no host's user may)
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
	case "permissions":
		return clusterPermissions(configPath, args[1:], std)
	case "init":
		return clusterInit(ctx, configPath, args[1:], std)
	case "help", "-h", "--help":
		fmt.Fprint(std.Out, clusterUsage)
		return exitOK
	}
	fmt.Fprintf(std.Err, "cc-connect cluster: unknown command %q\n\n%s", args[0], clusterUsage)
	return exitUsage
}

func clusterStatus(ctx context.Context, configPath string, args []string, std stdio) int {
	var asJSON bool
	cfg, code := clusterConfig("status", configPath, args, std, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	})
	if cfg == nil {
		return code
	}
	s, _ := clusterSettings(cfg)
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	log := newLogger(cfg.Log, std.Err).With("command", "cluster status")
	r, err := cluster.ReadStatus(ctx, s, log)
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect cluster status: %v\n", err)
		return exitFailure
	}
	if asJSON {
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

// clusterConfig parses a subcommand's flags (--config and those add
// defines) and loads the config, which must have a [cluster] table; nil
// and an exit code when it cannot.
func clusterConfig(name, configPath string, args []string, std stdio, add func(*flag.FlagSet)) (*config.Config, int) {
	fs := flag.NewFlagSet("cc-connect cluster "+name, flag.ContinueOnError)
	fs.SetOutput(std.Err)
	fs.Usage = func() { fmt.Fprint(std.Err, clusterUsage) }
	path := fs.String("config", configPath, "config file")
	if add != nil {
		add(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK
		}
		return nil, exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "cc-connect cluster %s: unexpected argument %q\n", name, fs.Arg(0))
		return nil, exitUsage
	}
	cfg := loadConfig(*path, std.Err)
	if cfg == nil {
		return nil, exitUsage
	}
	if cfg.Cluster == nil {
		fmt.Fprintf(std.Err, "cc-connect: %s has no [cluster] table: this cc-connect runs alone (docs/cluster.md)\n", cfg.Path)
		return nil, exitUsage
	}
	return cfg, exitOK
}

// clusterPermissions prints the NATS server config of every member's
// rights, from this host's config (every host reads the same).
func clusterPermissions(configPath string, args []string, std stdio) int {
	cfg, code := clusterConfig("permissions", configPath, args, std, nil)
	if cfg == nil {
		return code
	}
	s, _ := clusterSettings(cfg)
	if s.Embedded != nil {
		fmt.Fprintln(std.Err, "This host runs the embedded NATS server, which gives each member in cluster.embedded_nkeys these rights itself; "+
			"this is what it applies.")
	}
	fmt.Fprint(std.Out, s.ServerConfig())
	return exitOK
}

// initTimeout bounds `cluster init`: a NATS cluster may still be electing
// its JetStream leader.
const initTimeout = time.Minute

// clusterInit creates or updates the stream and the bucket as an admin.
func clusterInit(ctx context.Context, configPath string, args []string, std stdio) int {
	var admin cluster.Auth
	cfg, code := clusterConfig("init", configPath, args, std, func(fs *flag.FlagSet) {
		fs.StringVar(&admin.NKeySeedFile, "nkey-seed-file", "", "the admin's NKey seed file")
		fs.StringVar(&admin.CredsFile, "creds-file", "", "the admin's NATS credentials file")
	})
	if cfg == nil {
		return code
	}
	if (admin.NKeySeedFile == "") == (admin.CredsFile == "") {
		fmt.Fprint(std.Err, "cc-connect cluster init: give the admin's credential: --nkey-seed-file FILE or --creds-file FILE\n\n"+clusterUsage)
		return exitUsage
	}
	s, _ := clusterSettings(cfg)
	ctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	log := newLogger(cfg.Log, std.Err).With("command", "cluster init")
	if err := cluster.Init(ctx, s, admin, log); err != nil {
		fmt.Fprintf(std.Err, "cc-connect cluster init: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(std.Out, "The stream %s and the bucket %s are ready for this build's cluster.\n", s.Names.Stream(), s.Names.Bucket())
	return exitOK
}
