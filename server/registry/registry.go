// Package registry applies the Kubernetes object rules to the served resources, without HTTP:
// for any resource the catalog serves, it creates, reads, lists, updates (patch and apply too),
// deletes and watches objects as kube-apiserver's generic registry and the types' strategies do
// (defaulting, validation, metadata rules, managedFields, finalizers, graceful deletion,
// dry-run, preconditions, namespace lifecycle). Errors are apimachinery Status errors.
//
// The HTTP layer and the in-process controllers both call it; objects come back as stored (the
// bytes of a sqlstore.Object, in the type's storage version).
package registry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Storage is what the registry needs from the database layer. *sqlstore.Store implements it.
type Storage interface {
	Write(ctx context.Context, w sqlstore.Write) (sqlstore.Object, error)
	Get(ctx context.Context, key sqlstore.Key) (sqlstore.Object, error)
	CurrentRevision(ctx context.Context) (int64, error)
	List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error)
	Watch(ctx context.Context, opts sqlstore.WatchOptions) (*sqlstore.Watcher, error)
}

// The store this package is run on implements Storage.
var _ Storage = (*sqlstore.Store)(nil)

// Options configure a Registry.
type Options struct {
	Logger *slog.Logger
	// RevisionWait bounds how long a read asking for a revision newer than the store's current
	// one waits for it before answering 504; 0 picks kube-apiserver's 3 s.
	RevisionWait time.Duration
	// Admission, if set, is the admission step of writes.
	Admission Admission
	// NoNamespaceLifecycle turns off the registry's own NamespaceLifecycle admission (kube's
	// plugin disabled by --disable-admission-plugins): content may then be created in missing or
	// terminating namespaces, and the initial namespaces deleted, as kube-apiserver lets them.
	NoNamespaceLifecycle bool
	// WatchBookmarkInterval is how often a watch that asked for bookmarks gets one; 0 picks
	// kube-apiserver's minute.
	WatchBookmarkInterval time.Duration
}

const defaultRevisionWait = 3 * time.Second

// Registry applies the object rules. Make one with New.
type Registry struct {
	store Storage
	log   *slog.Logger
	opts  Options
	// namespaceResource is the namespaces type, which namespace lifecycle reads.
	namespaceResource *resource.Resource
	// namespaces answers the namespace check of creates (see namespaceCache).
	namespaces *namespaceCache
	// watchIndexes holds the store's index of each resource's watch events (watchIndex).
	watchIndexes sync.Map
}

// New makes a Registry on store. namespaces is the served namespaces type. It makes sure the
// initial namespaces exist, and keeps its namespace cache in sync with storage until ctx ends.
func New(ctx context.Context, store Storage, namespaces *resource.Resource, opts Options) (*Registry, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RevisionWait <= 0 {
		opts.RevisionWait = defaultRevisionWait
	}
	r := &Registry{store: store, log: opts.Logger, opts: opts, namespaceResource: namespaces, namespaces: newNamespaceCache()}
	r.followNamespaces(ctx)
	if err := r.ensureInitialNamespaces(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Ref names what a call is about: a resource's collection (Name empty; Namespace empty for all
// namespaces or a cluster-scoped type), one object, or one of its subresources.
type Ref struct {
	Resource    *resource.Resource
	Namespace   string
	Name        string
	Subresource string
}

// request is one call's target and the options every write path reads.
type request struct {
	res         *resource.Resource
	gr          schema.GroupResource
	namespace   string
	name        string
	subresource string
	// options are the call's options, which admission sees.
	options runtime.Object
	// dryRun writes nothing: the answer is what the write would have stored.
	dryRun bool
	// manager is who a write is recorded for in managedFields (see recordManagedFields);
	// empty for an apply, which records its manager itself.
	manager string
}

func newRequest(ref Ref, dryRun []string, manager string, options runtime.Object) *request {
	return &request{res: ref.Resource, gr: ref.Resource.GroupResource(), namespace: ref.Namespace, name: ref.Name,
		subresource: ref.Subresource, dryRun: len(dryRun) > 0, manager: manager, options: options}
}

func (req *request) key() sqlstore.Key {
	return sqlstore.Key{Resource: req.res.StorageName, Namespace: req.namespace, Name: req.name}
}

// updateModeOf is the part of an object a write through subresource replaces.
func updateModeOf(res *resource.Resource, subresource string) updateMode {
	if subresource == "status" || subresource == "finalize" || res.SubresourceStrategy(subresource) != nil {
		return updateMode(subresource)
	}
	return replaceAll
}
