// Package resource describes a served resource: its names, its storage, and the per-type rules
// (the strategy) the registry applies to its objects. The types layer (built-ins, CRDs) fills
// these descriptions; the registry, discovery and the HTTP layer read them.
package resource

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"reflect"

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
	// differs from Version, as for a built-in served in several versions (autoscaling/v1
	// HorizontalPodAutoscalers are stored as v2): writes go through ConvertToStorage and
	// ToStorage, reads through ReadStored.
	StorageVersion string
	// StorageGroup, when StoredInOtherGroup, is the group objects are stored in instead of Group
	// (events.k8s.io events are stored as core v1 events).
	StorageGroup       string
	StoredInOtherGroup bool
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
	// ReturnsDeletedObject is true when an immediate delete is answered with the deleted object,
	// as kube-apiserver's storage of the type answers it (ReturnDeletedObject), rather than a
	// Success Status.
	ReturnsDeletedObject bool
	// Computed, when set, makes the type one whose objects are not stored but computed at each
	// read, from the results of the server's liveness checks (componentstatuses): it serves get
	// and list only, and has no storage version hash.
	Computed func(ctx context.Context) []*unstructured.Unstructured
	// Creater, when set, makes the type a create-only one, stored nowhere, whose POSTs it
	// answers (see CreateOnly); AnswerType is then its kind's Go type.
	Creater    Creater
	AnswerType reflect.Type
	// Subresources are the type's other subresources, as discovery lists them and as they are
	// served: updates with rules of their own (pods' ephemeralcontainers, CSRs' approval), or
	// ones a handler of their own answers (pods' binding, eviction, log...; a ServiceAccount's
	// token; a node's proxy), registered with Serve.
	Subresources []Subresource
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
	// versions differ only by apiVersion. A built-in served in several versions (or groups)
	// converts with kube's scheme.
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

// Check is the result of one of the server's liveness checks: its name ("database"), and why
// it fails, nil when it passes.
type Check struct {
	Name string
	Err  error
}

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
	// MapSelector is true when the field at LabelSelectorPath is a map of labels (a
	// ReplicationController's spec.selector), which the Scale's status.selector shows as the
	// selector of that set.
	MapSelector bool
}

// Subresource is one of Resource.Subresources, as discovery lists it: Group and Version are set
// only when its kind is not of the resource's group version (a pod's eviction: policy/v1
// Eviction). One of Strategy, Creater and Connecter serves it.
type Subresource struct {
	Name, Group, Version, Kind string
	Verbs                      []string
	// Strategy, when set, is the rules of updates through the subresource, whose body is the
	// whole object (pods' ephemeralcontainers and resize): the registry serves its get, update
	// and patch as those of the object, with these rules instead of the type's, which take from
	// the body only what the subresource may change.
	Strategy StatusStrategy
	// Creater answers its POSTs (binding, eviction, token); Connecter its requests of any method
	// its verbs allow (log, exec, attach, portforward, proxy). See Resource.Serve.
	Creater   Creater
	Connecter Connecter
}

// Subresource is r's subresource name among Subresources, nil when it has none of that name.
func (r *Resource) Subresource(name string) *Subresource {
	for i := range r.Subresources {
		if r.Subresources[i].Name == name {
			return &r.Subresources[i]
		}
	}
	return nil
}

// SubresourceStrategy is the rules of updates through the subresource name, when it is one of
// Subresources with rules of its own; else nil.
func (r *Resource) SubresourceStrategy(name string) StatusStrategy {
	if sub := r.Subresource(name); sub != nil {
		return sub.Strategy
	}
	return nil
}

// APIVersion is "group/version", or "version" for the core group.
func (r *Resource) APIVersion() string {
	return GroupVersion(r.Group, r.Version)
}

// StorageGroupVersion is the group version objects of r are stored in.
func (r *Resource) StorageGroupVersion() schema.GroupVersion {
	if r.StoredInOtherGroup {
		return schema.GroupVersion{Group: r.StorageGroup, Version: r.StorageVersion}
	}
	return schema.GroupVersion{Group: r.Group, Version: r.StorageVersion}
}

// ServesStorageVersion is true when r serves objects as they are stored.
func (r *Resource) ServesStorageVersion() bool {
	return r.StorageGroupVersion() == schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// ConvertToStorage converts an object written through r to the storage version with r's
// Converter (a CRD's conversion webhook, kube's scheme for a built-in): it returns the converted object, or obj itself when there
// is nothing to convert. ToStorage then finishes the job. The webhook gets the object without
// its resourceVersion, as kube-apiserver's storage clears it before encoding.
func (r *Resource) ConvertToStorage(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if r.Converter == nil || r.ServesStorageVersion() {
		return obj, nil
	}
	rv := obj.GetResourceVersion()
	defer obj.SetResourceVersion(rv)
	obj.SetResourceVersion("")
	return r.convertTo(obj, r.StorageGroupVersion())
}

// ToStorage rewrites an object written through r to the storage version: its apiVersion (all
// that CRD conversion strategy None changes), and the fields the storage version's schema
// prunes. Call it before storing, after ConvertToStorage.
func (r *Resource) ToStorage(obj *unstructured.Unstructured) {
	obj.SetAPIVersion(r.StorageGroupVersion().String())
	r.PruneForStorage(obj)
}

// NeedsConversion is true when stored objects must be decoded (ReadStored) before being served
// through r, so that stored bytes can be streamed as they are otherwise. With a CRD's conversion
// webhook that is every version: an object may still be stored in a former storage version.
func (r *Resource) NeedsConversion() bool {
	return !r.ServesStorageVersion() || r.ReadsDefaults || (r.Converter != nil && r.CRDName != "")
}

// StorageVersionHash is the hash discovery lists for r, as kube-apiserver computes it.
func (r *Resource) StorageVersionHash() string {
	if r.StorageName == "" || r.Computed != nil {
		return "" // not stored: the reviews, componentstatuses
	}
	return discovery.StorageVersionHash(r.StorageGroupVersion().Group, cmp.Or(r.StorageVersionHashVersion, r.StorageVersion), r.Kind)
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
	if r.ReadsDefaults && (r.Converter == nil || obj.GetAPIVersion() == r.StorageGroupVersion().String()) {
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

// Convert converts obj to version of r's group with r's Converter (which must be set).
func (r *Resource) Convert(obj *unstructured.Unstructured, version string) (*unstructured.Unstructured, error) {
	return r.convertTo(obj, schema.GroupVersion{Group: r.Group, Version: version})
}

func (r *Resource) convertTo(obj *unstructured.Unstructured, gv schema.GroupVersion) (*unstructured.Unstructured, error) {
	out, err := r.Converter.ConvertToVersion(obj, gv)
	if err != nil {
		return nil, &ConversionError{Err: err}
	}
	converted, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("converting %s %q to %s: got a %T", r.Kind, obj.GetName(), gv, out)
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
	if r.StorageSchema != nil && !r.ServesStorageVersion() {
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
