// Package encryption is kube-apiserver's encryption at rest for sqlstore: an
// EncryptionConfiguration file (apiserver.config.k8s.io/v1) read and turned into value
// transformers by k8s.io/apiserver's own code (aesgcm, aescbc, secretbox, identity, KMS v2; the
// first provider of a resource encrypts, all of them decrypt; values carry kube's
// k8s:enc:PROVIDER:v1:KEYNAME: prefix), applied to the store's values as a sqlstore.Transformer.
// Resources the configuration does not name (all of them, without one) are stored as they are,
// and a value of theirs stored encrypted is refused on reading as kube-apiserver refuses it
// ("identity transformer tried to read encrypted data"), not taken for an object.
package encryption

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// apiServerID names this server to KMS v2 plugins.
const apiServerID = "sqlkube"

// Transformer encrypts and decrypts the values of the resources its configuration names.
type Transformer struct {
	configured map[schema.GroupResource]value.Transformer
	resources  encryptionconfig.StaticTransformers
	// byStorageName caches, per storage name, its transformer, or nil when the configuration
	// does not name it: the store asks for every value it reads.
	byStorageName sync.Map // string → value.Transformer
}

// Unconfigured is the Transformer of a server without an EncryptionConfiguration: it encrypts
// nothing, and refuses to read what an earlier configuration encrypted.
func Unconfigured() *Transformer { return &Transformer{} }

// Load reads the EncryptionConfiguration at path. KMS plugins it names run until ctx ends.
func Load(ctx context.Context, path string) (*Transformer, error) {
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, apiServerID)
	if err != nil {
		return nil, err
	}
	return &Transformer{configured: cfg.Transformers, resources: encryptionconfig.StaticTransformers(cfg.Transformers)}, nil
}

// Transforms reports whether the configuration names resource (a storage name, "plural.group"),
// itself or through a wildcard ("*.group", "*.*").
func (t *Transformer) Transforms(resource string) bool { return t.forResource(resource) != nil }

func (t *Transformer) ToStorage(ctx context.Context, key sqlstore.Key, plain []byte) ([]byte, error) {
	return t.forResource(key.Resource).TransformToStorage(ctx, plain, authenticatedData(key))
}

// FromStorage reads a value of any resource: through the configured providers if the
// configuration names it, else through kube's check that it is not encrypted.
func (t *Transformer) FromStorage(ctx context.Context, key sqlstore.Key, stored []byte) ([]byte, bool, error) {
	tr := t.forResource(key.Resource)
	if tr == nil {
		// Every read of every unencrypted resource comes here: the check reads only the value's
		// prefix, so it is not given the authenticated data it would not use.
		return identity.NewEncryptCheckTransformer().TransformFromStorage(ctx, stored, nil)
	}
	return tr.TransformFromStorage(ctx, stored, authenticatedData(key))
}

// forResource is the transformer of a storage name, nil when the configuration does not name it.
func (t *Transformer) forResource(storageName string) value.Transformer {
	if cached, ok := t.byStorageName.Load(storageName); ok {
		tr, _ := cached.(value.Transformer)
		return tr
	}
	var tr value.Transformer
	gr := groupResource(storageName)
	for _, candidate := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, {Group: "*", Resource: "*"}} {
		if _, ok := t.configured[candidate]; ok {
			tr = t.resources.TransformerForResource(gr)
			break
		}
	}
	t.byStorageName.Store(storageName, tr)
	return tr
}

// groupResource reads a storage name: "plural.group", or "plural" in the core group.
func groupResource(storageName string) schema.GroupResource {
	resource, group, _ := strings.Cut(storageName, ".")
	return schema.GroupResource{Group: group, Resource: resource}
}

// authenticatedData binds an encrypted value to its key, as kube-apiserver binds it to its etcd
// key: a value copied onto another key does not decrypt.
func authenticatedData(key sqlstore.Key) value.Context {
	return value.DefaultContext("/" + key.Resource + "/" + key.Namespace + "/" + key.Name)
}
