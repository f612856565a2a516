// Package embedded runs a JetStream-enabled NATS server inside cc-connect,
// for a small team that does not run NATS itself: its store lives under the
// state dir, it listens on loopback unless told otherwise, and it only
// lets in clients that prove an NKey it was given. It owns the server's
// lifecycle (start, readiness, clean shutdown) and nothing of what runs
// over it.
package embedded

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cc-connect/cc-connect/workspace"
)

// ClusterName is the NATS cluster name of embedded nodes routed together:
// all of one cc-connect cluster's embedded nodes must agree on it.
const ClusterName = "cc-connect"

// readyTimeout bounds the wait for the server's listeners. Start blocks on
// the client listener itself; this covers the route listener, which the
// server opens on a goroutine of its own.
const readyTimeout = 10 * time.Second

// Options say how to run the embedded server.
type Options struct {
	// Name is the server's name: the cc-connect host name. JetStream
	// clustering needs it unique among the routed nodes.
	Name string
	// StoreDir is where JetStream keeps its files; created 0700.
	StoreDir string
	// Listen is host:port for clients; "" listens nowhere (in-process
	// clients only). Port 0 picks a free port.
	Listen string
	// ClusterListen is host:port for routes to other embedded nodes; ""
	// runs a single node. Port 0 picks a free port.
	ClusterListen string
	// Routes are the other nodes' route URLs (nats-route://host:port).
	Routes []string
	// NoAdvertise keeps the node from telling clients the other nodes'
	// client URLs, so that a client reaches only the URLs it was given
	// (tests that cut a client off through a proxy).
	NoAdvertise bool
	// Users are the NKey users allowed to connect, each with what it may
	// publish and subscribe to. Empty lets anyone in who can reach
	// Listen, with every right: the caller allows that only on loopback,
	// for tests, or with no listener at all.
	Users []User
	// Setup, with Users, are the rights of one more user, whose key Start
	// makes and never writes anywhere: SetupOptions connect as it, in
	// process, to create what the other users may not (the cluster's
	// stream and bucket). Its NKey is ignored.
	Setup *User
	// TLS, when set, is required of client connections; RouteTLS of
	// routes. Each carries its own ClientAuth policy.
	TLS      *tls.Config
	RouteTLS *tls.Config
	// Log receives the server's notices (debug), warnings and errors.
	Log *slog.Logger
}

// User is one NKey user and what it may do: subjects (wildcards allowed)
// it may publish and subscribe to; nothing else. Nil lists allow
// everything.
type User struct {
	NKey      string
	Publish   []string
	Subscribe []string
}

// Server is a running embedded NATS server.
type Server struct {
	ns    *server.Server
	logs  *slogLogger
	setup nkeys.KeyPair // nil without Options.Setup
	once  sync.Once
}

// Start validates o, starts the server and returns once it accepts
// connections (and its route listener is open, when it has one). The
// caller shuts it down.
func Start(o Options) (*Server, error) {
	var setup nkeys.KeyPair
	if o.Setup != nil && len(o.Users) > 0 {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, fmt.Errorf("making the embedded NATS server's setup key: %w", err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, err
		}
		u := *o.Setup
		u.NKey = pub
		o.Users = append(slices.Clone(o.Users), u)
		setup = kp
	}
	opts, err := serverOptions(o)
	if err != nil {
		return nil, err
	}
	if err := workspace.EnsurePrivateDir(o.StoreDir); err != nil {
		return nil, fmt.Errorf("preparing the embedded NATS store: %w", err)
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring the embedded NATS server: %w", err)
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sl := &slogLogger{log: log.With("component", "nats-server")}
	ns.SetLoggerV2(sl, false, false, false)
	s := &Server{ns: ns, logs: sl, setup: setup}
	ns.Start() // returns once the client listener is open, or has failed
	if err := sl.fatal(); err != nil {
		s.Shutdown()
		return nil, fmt.Errorf("starting the embedded NATS server: %w", err)
	}
	if !ns.ReadyForConnections(readyTimeout) {
		err := sl.fatal()
		s.Shutdown()
		if err == nil {
			err = errors.New("not ready for connections")
		}
		return nil, fmt.Errorf("starting the embedded NATS server: %w", err)
	}
	if !ns.JetStreamEnabled() {
		s.Shutdown()
		return nil, fmt.Errorf("starting the embedded NATS server: JetStream did not start (see the log)")
	}
	return s, nil
}

func serverOptions(o Options) (*server.Options, error) {
	if o.Name == "" {
		return nil, errors.New("embedded NATS: a server name is required")
	}
	if o.StoreDir == "" {
		return nil, errors.New("embedded NATS: a store dir is required")
	}
	opts := &server.Options{
		ServerName: o.Name,
		JetStream:  true,
		StoreDir:   filepath.Clean(o.StoreDir),
		NoSigs:     true, // cc-connect owns the process's signals
		// fsync every write, as cc-connect's own journal does: a publish
		// acknowledged to a platform must survive the host losing power,
		// not only the process dying (the server's default syncs every
		// two minutes).
		SyncAlways: true,
		// Big enough for a long pasted message, as the stream allows.
		MaxPayload: 4 << 20,
	}
	if o.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, err := splitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS listen address: %w", err)
		}
		opts.Host, opts.Port = host, port
		if port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	if o.TLS != nil {
		opts.TLSConfig = o.TLS
		opts.TLSVerify = o.TLS.ClientAuth == tls.RequireAndVerifyClientCert
		opts.TLSTimeout = 5
	}
	for _, u := range o.Users {
		nu := &server.NkeyUser{Nkey: u.NKey}
		if u.Publish != nil || u.Subscribe != nil {
			nu.Permissions = &server.Permissions{Publish: &server.SubjectPermission{Allow: slices.Clone(u.Publish)},
				Subscribe: &server.SubjectPermission{Allow: slices.Clone(u.Subscribe)}}
		}
		opts.Nkeys = append(opts.Nkeys, nu)
	}
	if o.ClusterListen != "" {
		host, port, err := splitHostPort(o.ClusterListen)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS cluster listen address: %w", err)
		}
		opts.Cluster = server.ClusterOpts{Name: ClusterName, Host: host, Port: port, NoAdvertise: o.NoAdvertise}
		if port == 0 {
			opts.Cluster.Port = server.RANDOM_PORT
		}
		if o.RouteTLS != nil {
			opts.Cluster.TLSConfig = o.RouteTLS
			opts.Cluster.TLSTimeout = 5
		}
		for _, r := range o.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("embedded NATS route %q is not a URL such as nats-route://host:6222", r)
			}
			opts.Routes = append(opts.Routes, u)
		}
	} else if len(o.Routes) > 0 {
		return nil, errors.New("embedded NATS: routes need a cluster listen address")
	}
	return opts, nil
}

func splitHostPort(hp string) (string, int, error) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	var port int
	if _, err := fmt.Sscanf(p, "%d", &port); err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: bad port", hp)
	}
	return host, port, nil
}

// ClientURL is the URL clients on this host connect to ("" without a
// listener: use InProcess).
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// RouteURL is the URL other embedded nodes route to ("" for a single
// node).
func (s *Server) RouteURL() string {
	a := s.ns.ClusterAddr()
	if a == nil {
		return ""
	}
	return "nats-route://" + a.String()
}

// SetupOptions connect in process as the setup user (Options.Setup);
// nil when there is none, and the server admits anyone in process.
func (s *Server) SetupOptions() []nats.Option {
	if s.setup == nil {
		return nil
	}
	pub, _ := s.setup.PublicKey()
	return []nats.Option{nats.InProcessServer(s.ns), nats.Nkey(pub, s.setup.Sign)}
}

// NATS returns the server, for in-process connections
// (nats.InProcessServer) and tests.
func (s *Server) NATS() *server.Server { return s.ns }

// Shutdown stops the server and waits until it has flushed its store and
// closed every connection. It may be called more than once.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	})
}

// slogLogger adapts the server's logger to slog and keeps the first fatal
// error, which the server reports instead of returning.
type slogLogger struct {
	log *slog.Logger

	mu       sync.Mutex // guards fatalErr
	fatalErr error
}

var _ server.Logger = (*slogLogger)(nil)

func (l *slogLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *slogLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *slogLogger) Tracef(format string, v ...any)  {}
func (l *slogLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *slogLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }

// Fatalf is where the server reports that it cannot run (a taken port);
// unlike its default logger this one does not exit the process.
func (l *slogLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg)
	l.mu.Lock()
	if l.fatalErr == nil {
		l.fatalErr = errors.New(msg)
	}
	l.mu.Unlock()
}

func (l *slogLogger) fatal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatalErr
}

// StoreDir is where an embedded server keeps JetStream's files under a
// cc-connect state dir.
func StoreDir(stateDir string) string { return filepath.Join(stateDir, "nats") }

// Exists reports whether a store dir already holds data (for doctor and
// the logs: a fresh store means the streams start empty).
func Exists(storeDir string) bool {
	_, err := os.Stat(filepath.Join(storeDir, "jetstream"))
	return err == nil
}
