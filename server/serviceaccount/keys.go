package serviceaccount

import (
	"crypto"
	"fmt"

	"k8s.io/client-go/util/keyutil"
)

// LoadSigningKey reads the private key at path (PEM, RSA or ECDSA).
func LoadSigningKey(path string) (crypto.Signer, error) {
	key, err := keyutil.PrivateKeyFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: a %T cannot sign", path, key)
	}
	return signer, nil
}

// PublicKeys reads the verification keys of --service-account-key-file files (public or private
// keys, PEM, several a file).
func PublicKeys(paths []string) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, p := range paths {
		found, err := keyutil.PublicKeysFromFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, k := range found {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
