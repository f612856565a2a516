package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/embedded"
	"github.com/cc-connect/cc-connect/cluster/names"
)

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// clientTLS is this host's TLS to the servers, or nil.
func (a Auth) clientTLS() (*tls.Config, error) {
	if a.TLSCA == "" && a.TLSCert == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.TLSCA != "" {
		pem, err := os.ReadFile(a.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("cluster.tls_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cluster.tls_ca: %s holds no PEM certificate", a.TLSCA)
		}
		c.RootCAs = pool
	}
	if a.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("cluster.tls_cert: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// serverTLS is the embedded server's TLS: its certificate, and client
// certificates required and checked against the CA when there is one.
func (a Auth) serverTLS() (*tls.Config, error) {
	if a.TLSCert == "" {
		return nil, nil
	}
	c, err := a.clientTLS()
	if err != nil {
		return nil, err
	}
	if c.RootCAs != nil {
		c.ClientCAs, c.ClientAuth = c.RootCAs, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// natsOptions are the client options of this host's connection. closed
// is closed once the connection is closed and its last callback ran, so
// that whoever closes it can wait until nothing logs any more. The
// server's refusals are noted in ref (nil: only logged).
func natsOptions(s Settings, log *slog.Logger, ref *refusals) (opts []nats.Option, closed <-chan struct{}, err error) {
	return natsOptionsTLS(s, log, ref, true)
}

// natsOptionsTLS is natsOptions, with TLS only if useTLS: a connection to
// the embedded server in this very process needs none.
func natsOptionsTLS(s Settings, log *slog.Logger, ref *refusals, useTLS bool) (opts []nats.Option, closed <-chan struct{}, err error) {
	done := make(chan struct{})
	opts = []nats.Option{
		nats.Name("cc-connect " + s.Host),
		// Replies come to this host's own prefix, the only one its user
		// may subscribe to (Permissions).
		nats.CustomInboxPrefix(names.Inbox(s.Host)),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.Timeout(5 * time.Second),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil && !nc.IsClosed() { // nil: closed on purpose
				log.Warn("Disconnected from NATS; reconnecting", "error", err)
			}
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(done) }),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("Reconnected to NATS", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				ref.note(err)
				log.Warn("NATS refused this host's user an operation: the server's permissions for it do not match "+
					"this config (`cc-connect cluster permissions` prints them; docs/cluster.md)", "error", err)
				return
			}
			log.Warn("NATS error", "error", err)
		}),
	}
	switch {
	case s.Auth.CredsFile != "":
		opts = append(opts, nats.UserCredentials(s.Auth.CredsFile))
	case s.Auth.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(s.Auth.NKeySeedFile)
		if err != nil {
			return nil, nil, fmt.Errorf("cluster.nkey_seed_file: %w", err)
		}
		opts = append(opts, o)
	}
	if !useTLS {
		return opts, done, nil
	}
	tc, err := s.Auth.clientTLS()
	if err != nil {
		return nil, nil, err
	}
	if tc != nil {
		opts = append(opts, nats.Secure(tc))
	}
	return opts, done, nil
}

// closeConn closes nc and waits for its callbacks to finish.
func closeConn(nc *nats.Conn, closed <-chan struct{}) {
	nc.Close()
	<-closed
}

// connect opens this host's connection: to its own embedded server
// in-process when it runs one (no port, no TLS; its NKey still counts),
// else to the configured servers.
func connect(s Settings, srv *embedded.Server, log *slog.Logger, ref *refusals) (*nats.Conn, <-chan struct{}, error) {
	opts, closed, err := natsOptionsTLS(s, log, ref, srv == nil)
	if err != nil {
		return nil, nil, err
	}
	urls := strings.Join(s.URLs, ",")
	if srv != nil {
		// Its own node dies only with this process; the routes carry
		// the rest of the cluster's traffic.
		opts, urls = append(opts, nats.InProcessServer(srv.NATS())), ""
	}
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to NATS: %w", err)
	}
	return nc, closed, nil
}

// passing says whether a JetStream API error may go away by itself: no
// leader yet, not enough peers yet, no answer yet.
func passing(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case jetstream.JSErrCodeJetStreamNotEnabled, jetstream.JSErrCodeJetStreamNotEnabledForAccount:
			return false
		}
		return api.Code == 503 || api.Code == 500 || strings.Contains(strings.ToLower(api.Description), "insufficient resources") ||
			strings.Contains(strings.ToLower(api.Description), "no suitable peers")
	}
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrNoResponders)
}
