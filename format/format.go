// Package format is the version of what cc-connect writes for another run
// or another host to read: the journals (inbox/), the events of a
// cluster's stream (cluster/ingress) and each host's heartbeat, which
// says what format the host writes. One number for all of them, so that a
// host knows from one comparison whether it can read what the cluster
// holds.
//
// A build reads every older format and refuses a newer one with
// NewerError, before it takes any lease (docs/cluster.md, "Rolling
// upgrades"): a host that must not run yet stays out instead of dropping
// or misreading what a newer host wrote. It imports nothing of the
// project.
package format

import (
	"errors"
	"fmt"
)

// Version is the format this build writes. Records written before formats
// carried a version read as 1. Raise it when a change would be misread by
// the build before it (a new record kind, a field whose absence means
// something else), and keep reading every older one.
const Version = 1

// next, when set at link time (-ldflags "-X
// github.com/cc-connect/cc-connect/format.next=1"), makes a build write
// and read Version+1: the next format, without its changes, so that the
// upgrade procedure can be tested with two builds of one source.
var next string

// Written is the format this build writes.
func Written() int {
	if next != "" {
		return Version + 1
	}
	return Version
}

// ErrNewer: written by a newer cc-connect than this one. The caller stops
// before it acts on it (a host takes no lease); upgrading this host is the
// way out.
var ErrNewer = errors.New("written by a newer cc-connect")

// NewerError says what holds a newer format than this build reads.
type NewerError struct {
	What  string // "journal /var/lib/cc-connect/inbox/….jsonl", "host build-2's heartbeat"
	Found int
	Reads int
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("%s is in format %d, written by a newer cc-connect; this cc-connect (format %d) reads formats up to %d: "+
		"upgrade this host before it runs (docs/cluster.md, Rolling upgrades)", e.What, e.Found, Written(), e.Reads)
}

func (e *NewerError) Unwrap() error { return ErrNewer }

// Check returns a NewerError when v, the format what was written in, is
// newer than this build reads; 0 (written before formats were versioned)
// is format 1.
func Check(what string, v int) error {
	if v > Written() {
		return &NewerError{What: what, Found: v, Reads: Written()}
	}
	return nil
}
