// Package controllers is what the in-process controllers share. They do, inside sqlkube, what
// kube-controller-manager would do for deletion to behave as on a cluster (packages gc and
// namespace), and what further controllers will do. They read storage (following it with package
// follow) and write through the registry, as any API client would, never through HTTP. Every
// replica runs them: their writes are conditional, so two replicas doing the same step cost a
// harmless conflict.
package controllers

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// FieldManager is who the controllers write as (managedFields), as kube-controller-manager's
// controllers would appear.
const FieldManager = "kube-controller-manager"

// Storage is what controllers read directly: they follow storage, not this replica's requests.
// *sqlstore.Store implements it.
type Storage interface {
	follow.Storage
	Get(ctx context.Context, key sqlstore.Key) (sqlstore.Object, error)
}

// The store this package is run on implements Storage.
var _ Storage = (*sqlstore.Store)(nil)

// Deps are what a controller runs on.
type Deps struct {
	Store    Storage
	Registry *registry.Registry
	Catalog  *catalog.Catalog
	Log      *slog.Logger
}

// ToUnstructured converts a typed object of r to the form the registry writes, with r's
// apiVersion and kind.
func ToUnstructured(obj runtime.Object, r *resource.Resource) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion(schema.GroupVersion{Group: r.Group, Version: r.Version}.String())
	u.SetKind(r.Kind)
	return u, nil
}
