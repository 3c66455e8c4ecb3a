package encryption

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore"
)

const config = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, "*.example.com"]
  providers:
  - aesgcm:
      keys:
      - name: key1
        secret: c3Fsa3ViZSB0ZXN0IGtleSBvZiAzMiBieXRlcyEhISE=
  - identity: {}
`

func load(t *testing.T) *Transformer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTransformsWhatTheConfigurationNames(t *testing.T) {
	tr := load(t)
	for resource, want := range map[string]bool{"secrets": true, "widgets.example.com": true, "configmaps": false,
		"leases.coordination.k8s.io": false, "secrets.example.org": false} {
		if got := tr.Transforms(resource); got != want {
			t.Errorf("%s: %v, want %v", resource, got, want)
		}
	}
}

func TestRoundTripBoundToTheKey(t *testing.T) {
	tr, ctx := load(t), context.Background()
	key := sqlstore.Key{Resource: "secrets", Namespace: "ns", Name: "a"}
	stored, err := tr.ToStorage(ctx, key, []byte(`{"data":"x"}`))
	if err != nil || !bytes.HasPrefix(stored, []byte("k8s:enc:aesgcm:v1:key1:")) || bytes.Contains(stored, []byte(`"data"`)) {
		t.Fatalf("stored %q, %v", stored, err)
	}
	if plain, stale, err := tr.FromStorage(ctx, key, stored); err != nil || stale || string(plain) != `{"data":"x"}` {
		t.Errorf("read back %q, stale %v, %v", plain, stale, err)
	}
	other := sqlstore.Key{Resource: "secrets", Namespace: "ns", Name: "b"}
	if _, _, err := tr.FromStorage(ctx, other, stored); err == nil {
		t.Error("a value copied to another key decrypted")
	}
	if plain, stale, err := tr.FromStorage(ctx, key, []byte(`{"plain":true}`)); err != nil || !stale || string(plain) != `{"plain":true}` {
		t.Errorf("an unencrypted value: %q, stale %v, %v; want it read, and stale", plain, stale, err)
	}
}

// TestRefusesEncryptedValuesOfResourcesNotNamed: a resource the configuration does not name
// (any resource, without a configuration) reads plain values as they are, and refuses an
// encrypted one with kube's identity transformer error rather than hand it on as an object.
func TestRefusesEncryptedValuesOfResourcesNotNamed(t *testing.T) {
	ctx := context.Background()
	secret := sqlstore.Key{Resource: "secrets", Namespace: "ns", Name: "a"}
	encrypted, err := load(t).ToStorage(ctx, secret, []byte(`{"data":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	configMap := sqlstore.Key{Resource: "configmaps", Namespace: "ns", Name: "a"}
	for name, tr := range map[string]*Transformer{"unconfigured": Unconfigured(), "configmaps not named": load(t)} {
		key := secret
		if name == "configmaps not named" {
			key = configMap
		}
		if _, _, err := tr.FromStorage(ctx, key, encrypted); err == nil || err.Error() != "identity transformer tried to read encrypted data" {
			t.Errorf("%s: reading an encrypted value: %v", name, err)
		}
		if plain, stale, err := tr.FromStorage(ctx, key, []byte(`{"data":"x"}`)); err != nil || stale || string(plain) != `{"data":"x"}` {
			t.Errorf("%s: reading a plain value: %q, %v, %v", name, plain, stale, err)
		}
	}
	if Unconfigured().Transforms("secrets") {
		t.Error("without a configuration, secrets are transformed")
	}
}
