package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
)

// violations collects the server's permission violations.
type violations struct {
	mu    sync.Mutex
	lines []string
}

func (v *violations) add(format string, args ...any) {
	line := strings.TrimSpace(fmt.Sprintf(format, args...))
	if strings.Contains(line, "Violation") {
		v.mu.Lock()
		v.lines = append(v.lines, line)
		v.mu.Unlock()
	}
}

func (v *violations) all() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.lines...)
}

func (v *violations) Noticef(f string, a ...any) { v.add(f, a...) }
func (v *violations) Warnf(f string, a ...any)   { v.add(f, a...) }
func (v *violations) Fatalf(f string, a ...any)  { v.add(f, a...) }
func (v *violations) Errorf(f string, a ...any)  { v.add(f, a...) }
func (v *violations) Debugf(f string, a ...any)  { v.add(f, a...) }
func (v *violations) Tracef(f string, a ...any)  { v.add(f, a...) }

// docPermissions is the NATS config block of docs/cluster.md that names
// what a cc-connect host may publish and subscribe to.
func docPermissions(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "cluster.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```\n(CC_CONNECT = \\{.*?\n\\})\n```").FindSubmatch(data)
	if m == nil {
		t.Fatal("docs/cluster.md has no CC_CONNECT = { … } permissions block")
	}
	return string(m[1])
}

// permissionedServer starts a JetStream server from a config of the
// permissions block and one NKey user per host holding them; it returns
// the client URL and each host's seed file.
func permissionedServer(t *testing.T, perms string, hosts ...string) (string, map[string]string, *violations) {
	t.Helper()
	dir := t.TempDir()
	seeds := map[string]string{}
	var users []string
	for _, h := range hosts {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		seed, _ := kp.Seed()
		seeds[h] = filepath.Join(dir, h+".seed")
		if err := os.WriteFile(seeds[h], seed, 0o600); err != nil {
			t.Fatal(err)
		}
		users = append(users, "    { nkey: "+pub+", permissions: $CC_CONNECT }")
	}
	conf := filepath.Join(dir, "nats.conf")
	text := "listen: 127.0.0.1:-1\njetstream { store_dir: \"" + filepath.Join(dir, "js") + "\" }\n" + perms +
		"\nauthorization {\n  users: [\n" + strings.Join(users, "\n") + "\n  ]\n}\n"
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("the documented config does not parse: %v\n%s", err, text)
	}
	opts.NoSigs = true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	v := &violations{}
	ns.SetLoggerV2(v, true, false, false)
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return ns.ClientURL(), seeds, v
}

// TestDocumentedPermissionsAreEnough: two hosts whose NATS users hold
// exactly the permissions docs/cluster.md lists run everything cc-connect
// does: create the stream and the bucket, heartbeats, a binding's lease
// and its consumer, publishing and consuming, a takeover by the standby
// with the redelivery and its ack, the Telegram poller's lease and
// offset, the status. The server reports no permission violation; and
// the same user may not publish outside them.
func TestDocumentedPermissionsAreEnough(t *testing.T) {
	t.Parallel()
	url, seeds, v := permissionedServer(t, docPermissions(t), "a", "b")
	settings := func(host string) Settings {
		s := testSettings(t, host, []string{url}, 1, "a", "b")
		s.Names = names.Names{Prefix: "cc-connect"}
		s.Auth.NKeySeedFile = seeds[host]
		s.ConfigHash = s.fingerprint()
		return s
	}
	l := newLedger()
	a := startNode(t, settings("a"))
	b := startNode(t, settings("b"))
	ea := newFakeEngine("a", l)
	serveBinding(t, a, ea)
	publish(t, b, "x", "x-0", "x0")
	l.waitIDs(t, []string{"x-0"})

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	fa, err := a.Leases().Claim(names.PollerLease("telegram"), kvlease.Candidate, 0).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Offsets("telegram").Save(ctx, fa, 42); err != nil {
		t.Fatal(err)
	}
	if next, err := b.Offsets("telegram").Load(ctx); err != nil || next != 42 {
		t.Fatalf("offset %d, %v; want 42", next, err)
	}
	if in, err := a.InStream(ctx, 1); err != nil || in {
		t.Errorf("InStream of a settled event: %v, %v", in, err)
	}
	r, err := ReadStatus(ctx, settings("b"), nil)
	if err != nil || len(r.Bindings) != 1 || r.Bindings[0].Holder != "a" {
		t.Fatalf("status: %+v, %v", r, err)
	}

	// a stops mid-turn; b takes the binding and gets the event again.
	ea.mu.Lock()
	ea.hold = true
	ea.mu.Unlock()
	publish(t, b, "x", "x-1", "x1")
	ea.waitJournaled(t, 1)
	a.Close()
	serveBinding(t, b, newFakeEngine("b", l))
	publish(t, b, "x", "x-2", "x2")
	runs := l.waitIDs(t, []string{"x-0", "x-1", "x-2"})
	checkOnceInOrder(t, runs, map[string][]string{"x": {"x0", "x1", "x2"}})

	if got := v.all(); len(got) != 0 {
		t.Errorf("permission violations with the documented permissions:\n%s", strings.Join(got, "\n"))
	}
	// Nothing else: the same user may not publish elsewhere, nor delete
	// the stream.
	nc := connectAs(t, url, seeds["b"])
	if err := nc.Publish("other.subject", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Request("$JS.API.STREAM.DELETE.cc-connect-in", nil, 2*time.Second); err == nil {
		t.Error("a cc-connect user deleted the ingress stream")
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the server refusing the other publishes", func() bool {
		n := 0
		for _, l := range v.all() {
			if strings.Contains(l, "other.subject") || strings.Contains(l, "STREAM.DELETE") {
				n++
			}
		}
		return n >= 2
	})
}

// connectAs connects to url as the NKey user of seedFile.
func connectAs(t *testing.T, url, seedFile string) *nats.Conn {
	t.Helper()
	opt, err := nats.NkeyOptionFromSeed(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, opt, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
