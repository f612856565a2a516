package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Who makes the stream and the bucket. No host's user may create, change
// or delete them (Permissions), so:
//   - an embedded server makes them itself as it starts, as a user whose
//     key exists only in its process (startEmbedded);
//   - on a NATS server cc-connect does not run, an admin runs `cc-connect
//     cluster init` once, and again after an upgrade that changes their
//     configuration (a host warns then), with a credential holding
//     SetupPermissions (Init);
//   - a server that does not hold hosts to permissions lets every host
//     make them as it starts, as before.

// Init creates the cluster's stream and bucket, or updates them to this
// build's configuration, through s's servers and TLS as the user whose
// credential admin holds (CredsFile or NKeySeedFile). It is `cc-connect
// cluster init`.
func Init(ctx context.Context, s Settings, admin Auth, log *slog.Logger) error {
	if s.Embedded != nil {
		return errors.New("this host runs the embedded NATS server, which creates the stream and the bucket itself as it starts")
	}
	if admin.CredsFile == "" && admin.NKeySeedFile == "" {
		return errors.New("an admin credential is needed (a creds file or an NKey seed file)")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := s
	a.Auth.CredsFile, a.Auth.NKeySeedFile = admin.CredsFile, admin.NKeySeedFile
	// This host's connection options with the admin's credential; the
	// options setupAs adds after them (its name, its error handler, the
	// admin's reply prefix) win.
	opts, _, err := natsOptions(a, log, nil)
	if err != nil {
		return err
	}
	return setupAs(ctx, s, strings.Join(s.URLs, ","), log, append(opts, nats.CustomInboxPrefix(AdminInbox))...)
}

// setupAs connects to urls with opts and makes the stream and the bucket.
func setupAs(ctx context.Context, s Settings, urls string, log *slog.Logger, opts ...nats.Option) error {
	var ref refusals
	closed := make(chan struct{})
	opts = append(opts, nats.Name("cc-connect setup"), nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			ref.note(err)
			log.Warn("NATS error while creating the cluster's stream and bucket", "error", err)
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return fmt.Errorf("connecting to NATS to create the cluster's stream and bucket: %w", err)
	}
	// Nothing may log once this returns: the caller's log may be gone.
	defer closeConn(nc, closed)
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_, _, err = setup(ctx, js, s, log, &ref)
	return err
}
