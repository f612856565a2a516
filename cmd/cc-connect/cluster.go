package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
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
  cc-connect cluster permissions [--config FILE] [--nkey HOST=KEY]... [--admin-nkey KEY]
                                  print the NATS server config that gives each host's user only
                                  what its part needs (for a NATS server cc-connect does not run);
                                  the flags fill in the hosts' and the admin's public keys
  cc-connect cluster drain HOST [--config FILE] [--timeout DURATION]
                                  hand HOST's bindings over to their standbys (running turns get
                                  agent.shutdown_grace) and wait until they serve them; HOST serves
                                  none until it restarts. Run it with HOST's own config: its NATS
                                  user may write only its own drain key
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
	case "drain":
		return clusterDrain(ctx, configPath, args[1:], std)
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
	fmt.Fprintf(std.Err, "Wrote a new NKey seed to %s (keep it private, out of the agent's reach). Set cluster.nkey_seed_file to it, "+
		"and give the public key above under this host's name: in cluster.embedded_nkeys for the embedded server, "+
		"or to `cc-connect cluster permissions --nkey HOST=KEY` for your own NATS.\n", file)
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
	keys := nkeyFlags{}
	var admin string
	cfg, code := clusterConfig("permissions", configPath, args, std, func(fs *flag.FlagSet) {
		fs.Var(keys, "nkey", "HOST=KEY: a member's NKey public key (repeat for each)")
		fs.StringVar(&admin, "admin-nkey", "", "the NKey public key of the admin who runs `cluster init`")
	})
	if cfg == nil {
		return code
	}
	s, _ := clusterSettings(cfg)
	for h, k := range keys {
		if !cfg.Cluster.Member(h) {
			fmt.Fprintf(std.Err, "cc-connect cluster permissions: --nkey %s: %q is not in cluster.members\n", h, h)
			return exitUsage
		}
		if s.NKeys == nil {
			s.NKeys = map[string]string{}
		}
		s.NKeys[h] = k
	}
	if s.Embedded != nil {
		fmt.Fprintln(std.Err, "This host runs the embedded NATS server, which gives each member in cluster.embedded_nkeys these rights itself; "+
			"this is what it applies.")
	}
	if admin != "" && (!strings.HasPrefix(admin, "U") || len(admin) != 56) {
		fmt.Fprintf(std.Err, "cc-connect cluster permissions: --admin-nkey %q is not an NKey user public key (U…, 56 characters)\n", admin)
		return exitUsage
	}
	fmt.Fprint(std.Out, s.ServerConfig(admin))
	return exitOK
}

// nkeyFlags are --nkey HOST=KEY flags.
type nkeyFlags map[string]string

func (f nkeyFlags) String() string { return fmt.Sprint(map[string]string(f)) }

func (f nkeyFlags) Set(v string) error {
	h, k, ok := strings.Cut(v, "=")
	if !ok || h == "" || !strings.HasPrefix(k, "U") || len(k) != 56 {
		return fmt.Errorf("%q is not HOST=KEY with an NKey user public key (U…, 56 characters)", v)
	}
	f[h] = k
	return nil
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

// defaultDrainTimeout bounds `cluster drain` by default: the grace of the
// running turns (30 s by default) and the standbys' takeover.
const defaultDrainTimeout = 2 * time.Minute

// clusterDrain is `cc-connect cluster drain HOST`: it asks HOST to hand
// its bindings over (a key of the bucket HOST watches) and waits until
// their standbys serve them.
func clusterDrain(ctx context.Context, configPath string, args []string, std stdio) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(std.Err, "cc-connect cluster drain: name the host to drain\n\n%s", clusterUsage)
		return exitUsage
	}
	host := args[0]
	var timeout time.Duration
	cfg, code := clusterConfig("drain", configPath, args[1:], std, func(fs *flag.FlagSet) {
		fs.DurationVar(&timeout, "timeout", defaultDrainTimeout, "how long to wait for the standbys to serve")
	})
	if cfg == nil {
		return code
	}
	s, _ := clusterSettings(cfg)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	log := newLogger(cfg.Log, std.Err).With("command", "cluster drain")
	got, err := cluster.Drain(ctx, s, host, log)
	for _, p := range got {
		switch {
		case p.Stuck:
			fmt.Fprintf(std.Out, "%s  no standby: its events wait in the stream until %s is back\n", p.Binding, host)
		case p.Holder == "" || p.Holder == host:
			fmt.Fprintf(std.Out, "%s  not served yet\n", p.Binding)
		default:
			fmt.Fprintf(std.Out, "%s  served by %s\n", p.Binding, p.Holder)
		}
	}
	if err != nil {
		fmt.Fprintf(std.Err, "cc-connect cluster drain: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(std.Out, "%s is drained: it serves no binding until it restarts\n", host)
	return exitOK
}
