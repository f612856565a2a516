package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
)

// NewSeedFile writes a new NKey user seed to path (0600; it must not
// exist) and returns its public key, for cluster.nkey_seed_file and the
// embedded server's cluster.embedded_nkeys.
func NewSeedFile(path string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("making an NKey: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return "", err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", err
	}
	// O_EXCL: never overwrite a key another host may be using.
	f, err := os.OpenFile(filepath.Clean(path), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("%s already exists: not overwriting a key", path)
	}
	if err != nil {
		return "", fmt.Errorf("writing the NKey seed: %w", err)
	}
	_, err = f.Write(append(seed, '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("writing the NKey seed: %w", err)
	}
	return pub, nil
}

// SeedPublicKey returns the public key of the seed in path.
func SeedPublicKey(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	kp, err := nkeys.ParseDecoratedNKey(data)
	if err != nil {
		return "", fmt.Errorf("%s holds no NKey seed: %w", path, err)
	}
	defer kp.Wipe()
	return kp.PublicKey()
}
