package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
)

// ErrSetupRefused: the stream or the bucket is missing and this host's
// NATS user may not create it. Run `cc-connect cluster init` with an
// admin credential once (docs/cluster.md).
var ErrSetupRefused = errors.New("the cluster's stream and bucket need `cc-connect cluster init`")

// errRefused is a setup request the server refused this user (its
// permissions): not a server still electing its leader, so it is not
// retried.
type errRefused struct{ subject string }

func (e *errRefused) Error() string {
	return fmt.Sprintf("NATS refused this user %s (the server's permissions for it; docs/cluster.md)", e.subject)
}

// refusals are the subjects the server refused a connection. A refusal (a
// permission violation) arrives as an asynchronous error while the request
// that caused it waits for its timeout: setup watches them to give up at
// once. Nil notes nothing.
type refusals struct {
	mu       sync.Mutex    // guards subjects, changed
	subjects []string      // the latest few
	changed  chan struct{} // closed and replaced on each refusal
}

var refusedSubject = regexp.MustCompile(`(?:Publish to|Subscription to) "([^"]+)"`)

func (r *refusals) note(err error) {
	m := refusedSubject.FindStringSubmatch(err.Error())
	if r == nil || m == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subjects = append(r.subjects, m[1])
	if len(r.subjects) > 32 {
		r.subjects = r.subjects[1:]
	}
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// watch returns how many refusals were noted, and a channel closed at the
// next one.
func (r *refusals) watch() (int, <-chan struct{}) {
	if r == nil {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return len(r.subjects), r.changed
}

// since returns the subjects refused after the first n.
func (r *refusals) since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.subjects[min(n, len(r.subjects)):])
}

// setupCallTimeout bounds one request of the setup.
const setupCallTimeout = 5 * time.Second

// call runs one request of a host's start (the setup, a release) within
// setupCallTimeout, and gives it up as soon as the server refuses this
// user something (errRefused): nothing else runs on the connection then.
func call(ctx context.Context, ref *refusals, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, setupCallTimeout)
	defer cancel()
	n, refused := ref.watch()
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		return err
	case <-refused:
		cancel()
		<-done
		subs := ref.since(n)
		return &errRefused{subject: strings.Join(subs, ", ")}
	}
}

// setup makes sure the ingress stream and the lease bucket exist as this
// build configures them, creating or updating what is missing or differs.
// A host's own user may do neither (Permissions): on a server that holds
// hosts to their permissions, the embedded server's setup user or
// `cc-connect cluster init` has made them, and a host only reads them.
// When they differ from this build's and the update is refused, it warns
// and goes on; when they are missing and the create is refused, it fails
// with ErrSetupRefused. A NATS cluster that is still electing its
// JetStream leader answers with passing errors for a while: they are
// retried until ctx ends.
func setup(ctx context.Context, js jetstream.JetStream, s Settings, log *slog.Logger, ref *refusals) (kv, ctxKV jetstream.KeyValue, _ error) {
	wait := 100 * time.Millisecond
	for {
		maxAge, err := ensureStream(ctx, js, ingress.StreamConfig(s.Names, s.Replicas), log, ref)
		if err == nil {
			err = checkRetention(s.Names.Stream(), maxAge)
		}
		if err == nil {
			kv, err = ensureBucket(ctx, js, kvlease.BucketConfig(s.Names.Bucket(), s.Replicas), log, ref)
		}
		if err == nil {
			ctxKV, err = ensureBucket(ctx, js, ContextBucketConfig(s.Names, s.Replicas), log, ref)
		}
		if err == nil {
			return kv, ctxKV, nil
		}
		var refused *errRefused
		if errors.Is(err, ErrSetupRefused) || errors.Is(err, ErrRetention) || errors.As(err, &refused) || !passing(err) {
			return nil, nil, fmt.Errorf("creating the cluster's stream and buckets: %w", err)
		}
		log.Info("JetStream not ready yet; retrying", "error", err)
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("creating the cluster's stream and buckets: %w (last: %w)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// ensureStream creates the stream, or updates it when its config differs
// from cfg. It updates only then: every host runs this as it starts, and
// an update while another host creates its consumer races inside
// nats-server 2.15 (the race detector sees the file store's config
// written and read at once).
//
// It returns the stream's max age in force: cfg's, or the one the stream
// keeps when this host may not update it.
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, log *slog.Logger, ref *refusals) (time.Duration, error) {
	var st jetstream.Stream
	err := call(ctx, ref, func(ctx context.Context) (err error) {
		st, err = js.Stream(ctx, cfg.Name)
		return err
	})
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return cfg.MaxAge, created(cfg.Name, call(ctx, ref, func(ctx context.Context) error {
			_, err := js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return nil // another host made it meanwhile; the next start compares
			}
			return err
		}))
	case err != nil:
		return 0, err
	}
	have := st.CachedInfo().Config
	if sameStream(have, cfg) {
		return have.MaxAge, nil
	}
	var refused *errRefused
	err = call(ctx, ref, func(ctx context.Context) error {
		_, err := js.UpdateStream(ctx, cfg)
		return err
	})
	if errors.As(err, &refused) {
		return have.MaxAge, updated(log, cfg.Name, err)
	}
	return cfg.MaxAge, err
}

// ErrRetention: the ingress stream keeps events as long as the record of
// answered messages is kept, or longer (checkRetention).
var ErrRetention = errors.New("the cluster's stream keeps events too long")

// checkRetention refuses a stream that keeps an event (maxAge; 0: for
// ever) as long as the record that a message was answered or longer. A
// message read back from its thread and answered by one host is not run
// again by the host that gets its own delivery from the stream only while
// that record holds it (answered.go): the delivery must come sooner. A
// delivery of the stream's own cannot run twice, whatever its age: an
// event the owner settled leaves the stream (work-queue retention), and
// one it did not settle was not answered.
func checkRetention(stream string, maxAge time.Duration) error {
	if maxAge > 0 && maxAge < AnsweredTTL {
		return nil
	}
	keeps := "for ever (max_age 0)"
	if maxAge > 0 {
		keeps = "for " + maxAge.String()
	}
	return fmt.Errorf("%w: %s keeps events %s, and a message answered is recorded for %s only: an event waiting longer "+
		"could run again after its record expired; run `cc-connect cluster init` to set it back to %s",
		ErrRetention, stream, keeps, AnsweredTTL, ingress.MaxAge)
}

// ensureBucket is ensureStream for the lease bucket.
func ensureBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, log *slog.Logger, ref *refusals) (jetstream.KeyValue, error) {
	name := "KV_" + cfg.Bucket
	var st jetstream.Stream
	err := call(ctx, ref, func(ctx context.Context) (err error) {
		st, err = js.Stream(ctx, name)
		return err
	})
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		err = created(name, call(ctx, ref, func(ctx context.Context) error {
			_, err := js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				return nil
			}
			return err
		}))
	case err != nil:
	case !sameBucket(st.CachedInfo().Config, cfg):
		err = updated(log, name, call(ctx, ref, func(ctx context.Context) error {
			_, err := js.UpdateKeyValue(ctx, cfg)
			return err
		}))
	}
	if err != nil {
		return nil, err
	}
	var kv jetstream.KeyValue
	err = call(ctx, ref, func(ctx context.Context) (err error) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		return err
	})
	return kv, err
}

// created is what becomes of a create of stream name that failed with
// err: refused, it needs `cluster init`.
func created(name string, err error) error {
	var refused *errRefused
	if errors.As(err, &refused) {
		return fmt.Errorf("%w: %s does not exist, and this host's NATS user may not create it (%w)", ErrSetupRefused, name, err)
	}
	return err
}

// updated is what becomes of an update of stream name that failed with
// err: a refused one is warned about (this build's config waits for
// `cluster init`; the one in force works), any other error stays.
func updated(log *slog.Logger, name string, err error) error {
	var refused *errRefused
	if errors.As(err, &refused) {
		log.Warn("The cluster's stream or bucket is configured otherwise than this build configures it, and this host's NATS user "+
			"may not change it: run `cc-connect cluster init` (docs/cluster.md)", "stream", name)
		return nil
	}
	return err
}

// sameStream says whether the stream's config is want as far as want
// says.
func sameStream(have, want jetstream.StreamConfig) bool {
	return slices.Equal(have.Subjects, want.Subjects) && have.Retention == want.Retention && have.Storage == want.Storage &&
		have.Replicas == want.Replicas && have.Duplicates == want.Duplicates && have.MaxAge == want.MaxAge &&
		have.MaxMsgSize == want.MaxMsgSize && have.Discard == want.Discard && have.Description == want.Description
}

// sameBucket says whether the bucket's stream is configured as want asks.
func sameBucket(have jetstream.StreamConfig, want jetstream.KeyValueConfig) bool {
	return have.MaxMsgsPerSubject == int64(want.History) && have.Storage == want.Storage && have.Replicas == want.Replicas &&
		have.MaxMsgSize == want.MaxValueSize && have.Description == want.Description &&
		have.AllowMsgTTL == (want.LimitMarkerTTL > 0) && have.SubjectDeleteMarkerTTL == want.LimitMarkerTTL
}
