package tokenrequest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/server/serviceaccount"
)

// Resources finds a served resource. *catalog.Catalog implements it.
type Resources interface {
	Lookup(group, version, resource string) (*resource.Resource, bool)
}

// RegistryObjects finds objects through the registry, as a GET of them would: the uids Issuing
// names in a token, and those the token verifier checks still exist.
type RegistryObjects struct {
	types    Resources
	registry *registry.Registry
}

var (
	_ Objects               = (*RegistryObjects)(nil)
	_ serviceaccount.Lookup = (*RegistryObjects)(nil)
)

// NewRegistryObjects reads the objects of the core/v1 resources types serves from objects.
func NewRegistryObjects(types Resources, objects *registry.Registry) *RegistryObjects {
	return &RegistryObjects{types: types, registry: objects}
}

// UID reads the uid of a core/v1 object, or its NotFound.
func (o *RegistryObjects) UID(ctx context.Context, resource, namespace, name string) (string, error) {
	res, ok := o.types.Lookup("", "v1", resource)
	if !ok {
		return "", apierrors.NewNotFound(corev1.Resource(resource), name)
	}
	stored, err := o.registry.Get(ctx, registry.Ref{Resource: res, Namespace: namespace, Name: name}, &metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var meta registry.MetadataOnly
	if err := registry.UnmarshalStored(stored.Value, &meta); err != nil {
		return "", err
	}
	return string(meta.Metadata.UID), nil
}
