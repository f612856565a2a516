package embedded

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

func TestStartServesJetStreamAndShutsDownCleanly(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state", "nats")
	s, err := Start(Options{Name: "a", StoreDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("store dir %v, mode %v; want 0700", err, info.Mode().Perm())
	}
	if !strings.HasPrefix(s.ClientURL(), "nats://127.0.0.1:") {
		t.Errorf("client URL %q is not loopback", s.ClientURL())
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(); err != nil {
		t.Fatalf("JetStream not available: %v", err)
	}
	nc.Close()
	s.Shutdown()
	s.Shutdown() // twice is fine
	if s.NATS().Running() {
		t.Error("still running after Shutdown")
	}
	if !Exists(dir) {
		t.Error("no JetStream store left for the next start")
	}
}

func TestInProcessOnlyListensNowhere(t *testing.T) {
	t.Parallel()
	s, err := Start(Options{Name: "a", StoreDir: filepath.Join(t.TempDir(), "nats")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if s.ClientURL() != "" || s.NATS().Addr() != nil {
		t.Fatalf("a server without Listen listens at %q", s.ClientURL())
	}
	nc, err := nats.Connect("", nats.InProcessServer(s.NATS()))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

func TestNKeysAreRequired(t *testing.T) {
	t.Parallel()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "seed")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{Name: "a", StoreDir: filepath.Join(t.TempDir(), "nats"), Listen: "127.0.0.1:0", Users: []User{{NKey: pub}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a client without the NKey got in")
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := filepath.Join(t.TempDir(), "other")
	_ = os.WriteFile(otherFile, otherSeed, 0o600)
	opt, err := nats.NkeyOptionFromSeed(otherFile)
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(s.ClientURL(), opt, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a client with an unlisted NKey got in")
	}
	opt, err = nats.NkeyOptionFromSeed(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL(), opt)
	if err != nil {
		t.Fatalf("the listed NKey was refused: %v", err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	if _, err := js.AccountInfo(); err != nil {
		t.Fatalf("JetStream not available to an NKey user: %v", err)
	}
}

// TestUsersHoldTheirRights: a listed user may publish and subscribe
// only where it was allowed; the setup user, whose key exists only in
// the server's process, connects in process and may do what it was
// allowed (create a stream here) and nothing else.
func TestUsersHoldTheirRights(t *testing.T) {
	t.Parallel()
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	s, err := Start(Options{Name: "a", StoreDir: filepath.Join(t.TempDir(), "nats"), Listen: "127.0.0.1:0",
		Users: []User{{NKey: pub, Publish: []string{"allowed.>"}, Subscribe: []string{"mine.>"}}},
		Setup: &User{Publish: []string{"$JS.API.INFO", "$JS.API.STREAM.CREATE.S"}, Subscribe: []string{"_INBOX.>"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	refusals := make(chan error, 10)
	onErr := nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refusals <- err })
	refused := func(what string) {
		t.Helper()
		select {
		case err := <-refusals:
			if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), what) {
				t.Errorf("refusal %v, want one of %s", err, what)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s was not refused", what)
		}
	}
	nc, err := nats.Connect(s.ClientURL(), nats.Nkey(pub, kp.Sign), onErr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish("allowed.x", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.SubscribeSync("mine.x"); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	if err := nc.Publish("other.x", nil); err != nil {
		t.Fatal(err)
	}
	refused(`Publish to "other.x"`)
	if _, err := nc.SubscribeSync("theirs.x"); err != nil {
		t.Fatal(err)
	}
	refused(`Subscription to "theirs.x"`)

	setup, err := nats.Connect("", append(s.SetupOptions(), onErr)...)
	if err != nil {
		t.Fatalf("the setup user: %v", err)
	}
	defer setup.Close()
	js, _ := setup.JetStream()
	if _, err := js.AddStream(&nats.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatalf("the setup user creating a stream: %v", err)
	}
	if err := setup.Publish("allowed.x", nil); err != nil {
		t.Fatal(err)
	}
	refused(`Publish to "allowed.x"`)
}

func TestTakenPortFailsFast(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	s, err := Start(Options{Name: "a", StoreDir: filepath.Join(t.TempDir(), "nats"), Listen: ln.Addr().String()})
	if err == nil {
		s.Shutdown()
		t.Fatal("started on a taken port")
	}
	if !strings.Contains(err.Error(), "listen") {
		t.Errorf("error %q does not say the port is taken", err)
	}
	if time.Since(start) > readyTimeout {
		t.Errorf("took %v to notice", time.Since(start))
	}
}

func TestOptionErrors(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{
		{StoreDir: "x"},
		{Name: "a"},
		{Name: "a", StoreDir: "x", Listen: "nope"},
		{Name: "a", StoreDir: "x", Routes: []string{"nats-route://b:6222"}},
		{Name: "a", StoreDir: "x", ClusterListen: "127.0.0.1:0", Routes: []string{"::"}},
	} {
		if _, err := serverOptions(o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}
