package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cc-connect/cc-connect/cluster/embedded"
)

func TestStateIDIsStable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, err := StateID(dir)
	if err != nil || a == "" {
		t.Fatal(a, err)
	}
	b, err := StateID(dir)
	if err != nil || b != a {
		t.Fatalf("second read %q, %v; want %q", b, err, a)
	}
	info, err := os.Stat(filepath.Join(dir, "cluster", "state-id"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state id file: %v %v", err, info.Mode().Perm())
	}
	if c, _ := StateID(t.TempDir()); c == a {
		t.Error("two state dirs share an id")
	}
}

// TestEmbeddedWithTLSAndNKeys: a node whose embedded server requires
// mutual TLS and an NKey; the node itself gets in with its own, a client
// with the certificate but no NKey does not.
func TestEmbeddedWithTLSAndNKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, cert, key := writeCerts(t, dir)
	seed := filepath.Join(dir, "seed")
	pub, err := NewSeedFile(seed)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := SeedPublicKey(seed); err != nil || got != pub {
		t.Fatalf("SeedPublicKey = %q, %v; want %q", got, err, pub)
	}
	seedB := filepath.Join(dir, "seed-b")
	pubB, err := NewSeedFile(seedB)
	if err != nil {
		t.Fatal(err)
	}
	s := testSettings(t, "a", nil, 1, "a")
	s.Auth = Auth{NKeySeedFile: seed, TLSCA: ca, TLSCert: cert, TLSKey: key}
	s.NKeys = map[string]string{"a": pub, "b": pubB}
	s.Embedded = &embedded.Options{Name: "a", StoreDir: filepath.Join(dir, "nats"), Listen: "127.0.0.1:0"}
	n := startNode(t, s) // connects in-process, with its NKey
	url := n.srv.ClientURL()
	// Another host: certificate and its NKey.
	other := s
	other.Host, other.Embedded, other.URLs = "b", nil, []string{url}
	other.Auth.NKeySeedFile = seedB
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := ReadStatus(ctx, other, nil); err != nil {
		t.Fatalf("a host with the certificate and the NKey: %v", err)
	}
	tc, err := s.Auth.clientTLS()
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(url, nats.Secure(tc), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a client with the certificate but no NKey got in")
	}
	opt, _ := nats.NkeyOptionFromSeed(seed)
	if nc, err := nats.Connect(url, opt, nats.MaxReconnects(0), nats.Secure(&tls.Config{InsecureSkipVerify: true})); err == nil {
		nc.Close()
		t.Fatal("a client with the NKey but no certificate got in")
	}
	if _, err := n.Status(ctx); err != nil {
		t.Fatalf("status through the TLS connection: %v", err)
	}
}

// writeCerts makes a CA and one certificate for 127.0.0.1, good for both
// server and client, and returns the three PEM files.
func writeCerts(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "host a"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", der), write("key.pem", "EC PRIVATE KEY", keyDER)
}
