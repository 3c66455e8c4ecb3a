// Package resource describes a served resource: its names, its storage, and the per-type rules
// (the strategy) the registry applies to its objects. The types layer (built-ins, CRDs) fills
// these descriptions; the registry, discovery and the HTTP layer read them.
package resource

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/discovery"

	"github.com/sqlkube/sqlkube/server/crdschema"
)

// Resource describes one served resource at one group version: a built-in or a CRD's version.
type Resource struct {
	Group        string // "" for the core group
	Version      string
	Name         string // plural, lower case: "configmaps"
	SingularName string
	Kind         string
	ListKind     string
	Namespaced   bool
	ShortNames   []string
	Categories   []string
	Verbs        []string
	// StorageName keys the type in storage ("resource.group", the same for every version of the
	// type), so that all versions of one type share their objects.
	StorageName string
	// StorageVersion is the version objects are stored in. For a CRD's non-storage versions it
	// differs from Version: writes go through ConvertToStorage and ToStorage, reads through
	// ReadStored.
	StorageVersion string
	// StorageVersionHashVersion, when set, is the version kube-apiserver encodes the type in in
	// etcd, which discovery's storageVersionHash names (CRDs: v1beta1); else StorageVersion.
	StorageVersionHashVersion string
	// Status is true when the type has a /status subresource.
	Status bool
	// Scale is set when the type has a /scale subresource.
	Scale *ScaleSubresource
	// Finalize is true when the type has a /finalize subresource (namespaces: an update that
	// writes only spec.finalizers).
	Finalize bool
	// TokenRequest is true when the type has a /token subresource (serviceaccounts: TokenRequest).
	TokenRequest bool
	// ReturnsDeletedObject is true for the types whose immediate delete answers the deleted
	// object rather than a Status (kube's store option of the same name: services).
	ReturnsDeletedObject bool
	// Proxy is true when the type has a /proxy subresource (services), which sqlkube answers as
	// kube-apiserver does when no endpoint backs the object.
	Proxy bool
	// CRDName names the CustomResourceDefinition this type comes from; empty for built-ins.
	CRDName string
	// Definition is that CustomResourceDefinition, as the registry read it.
	Definition *apiextensionsv1.CustomResourceDefinition
	// Terminating is true for the types of a CRD being deleted: its objects are being removed,
	// and creates are refused with 405 MethodNotAllowed as apiextensions-apiserver does.
	Terminating bool
	// DeprecationWarning, when set, is the Warning header every request to this version gets
	// (a CRD version marked deprecated).
	DeprecationWarning string

	// Strategy is the type's object rules, which the registry applies to every write (see
	// Strategy). Every stored type has one; the reviews, which are not stored, do not.
	Strategy Strategy

	// Schema is set for a CRD's versions: the custom resource schema (pruning, defaulting,
	// reading stored objects, field selectors), which their Strategy also uses.
	Schema *crdschema.Schema
	// StorageSchema is the Schema of the CRD's storage version (see ReadStored and
	// PruneForStorage); ReadsDefaults is set when that schema has defaults, which stored objects
	// get when they are read.
	StorageSchema *crdschema.Schema
	ReadsDefaults bool
	// Converter is set for the versions of a CRD with conversion strategy Webhook: it converts
	// objects between the CRD's versions by calling the webhook (apiextensions-apiserver's own
	// converter, which also checks what the webhook returns). nil for strategy None, whose
	// versions differ only by apiVersion.
	Converter runtime.ObjectConvertor

	// AfterWrite runs after a successful write (create, update, delete) at revision, before the
	// reply. For CRDs it waits until the registry has seen that revision, so the type is served
	// (or gone) when the request returns. An error means it gave up waiting: the write itself
	// succeeded, so log it rather than fail the request.
	AfterWrite func(ctx context.Context, revision int64) error

	// Allocations, when set, reserves what the type's objects take from pools the whole
	// cluster shares (a Service's cluster IPs and node ports) around its writes; the assembly
	// sets it.
	Allocations Allocations
}

// Allocations are kube-apiserver's BeginCreate, BeginUpdate and AfterDelete store hooks of a
// type (its service storage's): what a write takes from shared pools, given back when the
// write fails or the object goes. The registry calls BeginCreate and BeginUpdate after
// mutating admission and before the type's strategy, and the Finish they return once the
// write has succeeded or failed; AfterDelete once the object is gone.
type Allocations interface {
	// BeginCreate allocates what obj asks for or needs, writing it into obj; an error (a
	// Status error: 422 for a taken IP) refuses the create.
	BeginCreate(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (Finish, error)
	// BeginUpdate allocates and releases what changes between old and obj.
	BeginUpdate(ctx context.Context, obj, old *unstructured.Unstructured, dryRun bool) (Finish, error)
	// AfterDelete releases what the deleted obj held.
	AfterDelete(ctx context.Context, obj *unstructured.Unstructured, dryRun bool)
}

// Finish ends what a Begin hook started: success keeps its allocations, failure gives them back.
type Finish func(success bool)

// ScaleSubresource names where a type keeps the fields the autoscaling/v1 Scale exposes.
type ScaleSubresource struct {
	SpecReplicasPath   string
	StatusReplicasPath string
	LabelSelectorPath  string
	// StructuredSelector is true when the field at LabelSelectorPath is a
	// metav1.LabelSelector (a built-in's spec.selector), which the Scale's status.selector
	// shows in its string form, as kube-apiserver's scale of the built-ins does. A CRD's
	// labelSelectorPath names that string itself.
	StructuredSelector bool
}

// APIVersion is "group/version", or "version" for the core group.
func (r *Resource) APIVersion() string {
	return GroupVersion(r.Group, r.Version)
}

// ConvertToStorage converts an object written through r to the storage version with r's
// Converter (the conversion webhook): it returns the converted object, or obj itself when there
// is nothing to convert. ToStorage then finishes the job. The webhook gets the object without
// its resourceVersion, as kube-apiserver's storage clears it before encoding.
func (r *Resource) ConvertToStorage(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if r.Converter == nil || r.Version == r.StorageVersion {
		return obj, nil
	}
	rv := obj.GetResourceVersion()
	defer obj.SetResourceVersion(rv)
	obj.SetResourceVersion("")
	return r.Convert(obj, r.StorageVersion)
}

// ToStorage rewrites an object written through r to the storage version: its apiVersion (all
// that CRD conversion strategy None changes), and the fields the storage version's schema
// prunes. Call it before storing, after ConvertToStorage.
func (r *Resource) ToStorage(obj *unstructured.Unstructured) {
	obj.SetAPIVersion(GroupVersion(r.Group, r.StorageVersion))
	r.PruneForStorage(obj)
}

// NeedsConversion is true when stored objects must be decoded (ReadStored) before being served
// through r, so that stored bytes can be streamed as they are otherwise. With a conversion
// webhook that is every version: an object may still be stored in a former storage version.
func (r *Resource) NeedsConversion() bool {
	return r.StorageVersion != r.Version || r.ReadsDefaults || r.Converter != nil
}

// StorageVersionHash is the hash discovery lists for r, as kube-apiserver computes it.
func (r *Resource) StorageVersionHash() string {
	if r.StorageName == "" {
		return "" // not stored: the reviews
	}
	return discovery.StorageVersionHash(r.Group, cmp.Or(r.StorageVersionHashVersion, r.StorageVersion), r.Kind)
}

func GroupVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// ReadStored turns a stored object into the version r serves, as kube-apiserver's storage
// decoder and version converter do: defaulted by the storage version's schema (so that an
// object stored before a default was added reads with it), converted (by the webhook, or by
// rewriting apiVersion), then pruned by r's own schema when it was in another version. Call it
// on every object read from storage (get, list items, watch events) before encoding it; it
// returns the object to serve, obj itself unless the webhook converted it.
func (r *Resource) ReadStored(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	// The storage version's schema reads only what is in that version: with a webhook, an
	// object still in a former storage version is converted as it was stored.
	if r.ReadsDefaults && (r.Converter == nil || obj.GetAPIVersion() == GroupVersion(r.Group, r.StorageVersion)) {
		if err := r.StorageSchema.ReadStored(obj); err != nil {
			return nil, fmt.Errorf("decoding stored %s %q: %w", r.Kind, obj.GetName(), err)
		}
	}
	converted := obj.GetAPIVersion() != r.APIVersion()
	switch {
	case !converted:
	case r.Converter != nil:
		var err error
		if obj, err = r.Convert(obj, r.Version); err != nil {
			return nil, err
		}
	default:
		obj.SetAPIVersion(r.APIVersion())
	}
	if r.Schema != nil && converted {
		if _, err := r.Schema.Prune(obj); err != nil {
			return nil, fmt.Errorf("converting stored %s %q to %s: %w", r.Kind, obj.GetName(), r.Version, err)
		}
	}
	return obj, nil
}

// Convert converts obj to version with r's Converter (which must be set).
func (r *Resource) Convert(obj *unstructured.Unstructured, version string) (*unstructured.Unstructured, error) {
	out, err := r.Converter.ConvertToVersion(obj, schema.GroupVersion{Group: r.Group, Version: version})
	if err != nil {
		return nil, &ConversionError{Err: err}
	}
	converted, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("converting %s %q to %s: got a %T", r.Kind, obj.GetName(), version, out)
	}
	return converted, nil
}

// ConversionError is a failed conversion by a CRD's webhook (down, or answering wrongly). A
// write answers it as kube-apiserver answers an error that is not a Status: 500, no reason, and
// the converter's message.
type ConversionError struct{ Err error }

func (e *ConversionError) Error() string { return e.Err.Error() }

func (e *ConversionError) Unwrap() error { return e.Err }

func (e *ConversionError) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: e.Error()}
}

// PruneForStorage drops from an object written through another version than the storage
// version the fields the storage version's schema does not have, as kube-apiserver's
// conversion to the storage version does. The object was decoded and validated already: its
// metadata is well-formed, so pruning cannot fail.
func (r *Resource) PruneForStorage(obj *unstructured.Unstructured) {
	if r.StorageSchema != nil && r.Version != r.StorageVersion {
		_, _ = r.StorageSchema.Prune(obj)
	}
}

// GroupKind is the GroupKind Invalid errors name.
func (r *Resource) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

// GroupResource names the resource in errors and authorization.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Name}
}
