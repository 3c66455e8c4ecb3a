package tokenrequest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
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
	var meta storedobj.MetadataOnly
	err := o.read(ctx, resource, namespace, name, &meta)
	return string(meta.Metadata.UID), err
}

// Pod reads what binding a token to a Pod needs of it, or its NotFound.
func (o *RegistryObjects) Pod(ctx context.Context, namespace, name string) (Pod, error) {
	var pod struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     struct {
			ServiceAccountName string `json:"serviceAccountName"`
			NodeName           string `json:"nodeName"`
		} `json:"spec"`
	}
	err := o.read(ctx, "pods", namespace, name, &pod)
	return Pod{UID: string(pod.Metadata.UID), ServiceAccountName: pod.Spec.ServiceAccountName, NodeName: pod.Spec.NodeName}, err
}

// read decodes the stored core/v1 object of resource into into, as a GET of it would find it.
func (o *RegistryObjects) read(ctx context.Context, resource, namespace, name string, into any) error {
	res, ok := o.types.Lookup("", "v1", resource)
	if !ok {
		return apierrors.NewNotFound(corev1.Resource(resource), name)
	}
	stored, err := o.registry.Get(ctx, registry.Ref{Resource: res, Namespace: namespace, Name: name}, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	return storedobj.UnmarshalStored(stored.Value, into)
}
