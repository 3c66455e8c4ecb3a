// Package perns keeps one object in every active namespace, as kube-controller-manager's
// ServiceAccount controller (a "default" ServiceAccount) and root CA publisher (a
// "kube-root-ca.crt" ConfigMap) do: it creates the object in each new namespace, and again
// when it is deleted or (if it must hold fixed content) changed.
package perns

import (
	"context"
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/follow"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Object is the object to keep in each namespace.
type Object struct {
	Resource *resource.Resource
	Name     string
	// Content is the object's body beyond metadata (for a ConfigMap, its data), as JSON values
	// (map[string]any, not map[string]string); nil for an object whose content is its owner's
	// business once created.
	Content map[string]any
	// Annotations are set on the object when it is created or restored.
	Annotations map[string]string
}

// controller keeps obj in every active namespace. It remembers only namespace names.
type controller struct {
	deps       controllers.Deps
	obj        Object
	namespaces *resource.Resource
	queue      *follow.Queue[string]
}

// Run keeps obj in every active namespace until ctx ends.
func Run(ctx context.Context, deps controllers.Deps, namespaces *resource.Resource, obj Object) {
	c := &controller{deps: deps, obj: obj, namespaces: namespaces, queue: follow.NewQueue[string]()}
	go follow.Resource(ctx, deps.Store, deps.Log, namespaces.StorageName, namespaceObserver{c})
	go follow.Resource(ctx, deps.Store, deps.Log, obj.Resource.StorageName, objectObserver{c})
	for {
		ns, ok := c.queue.Next(ctx)
		if !ok {
			return
		}
		if err := c.ensure(ctx, ns); err != nil && ctx.Err() == nil {
			deps.Log.Warn("keeping an object in a namespace", "resource", obj.Resource.Name, "name", obj.Name, "namespace", ns, "err", err)
			c.queue.AddAfter(ctx, ns, follow.Retry)
		}
	}
}

// ensure creates the object in namespace unless it is there with the content it must hold.
func (c *controller) ensure(ctx context.Context, namespace string) error {
	ref := registry.Ref{Resource: c.obj.Resource, Namespace: namespace, Name: c.obj.Name}
	stored, err := c.deps.Registry.Get(ctx, ref, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, _, err = c.deps.Registry.Create(ctx, ref, c.desired(namespace), &metav1.CreateOptions{FieldManager: controllers.FieldManager})
		return ignoreGone(err)
	}
	if err != nil || c.obj.Content == nil || c.holdsContent(stored) {
		return err
	}
	_, _, err = c.deps.Registry.Update(ctx, ref, c.restored(stored), &metav1.UpdateOptions{FieldManager: controllers.FieldManager})
	return ignoreGone(err)
}

// ignoreGone: a namespace that is terminating or gone needs nothing; a conflict means another
// writer (or replica) got there first, and its write is followed again.
func ignoreGone(err error) error {
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil
	}
	return err
}

func (c *controller) desired(namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: maps.Clone(c.obj.Content)}
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	u.SetAPIVersion(schema.GroupVersion{Group: c.obj.Resource.Group, Version: c.obj.Resource.Version}.String())
	u.SetKind(c.obj.Resource.Kind)
	u.SetNamespace(namespace)
	u.SetName(c.obj.Name)
	if len(c.obj.Annotations) > 0 {
		u.SetAnnotations(c.obj.Annotations)
	}
	return u
}

func (c *controller) holdsContent(stored sqlstore.Object) bool {
	u, err := storedobj.DecodeStored(stored.Value)
	if err != nil {
		return false
	}
	for k, v := range c.obj.Content {
		if !equalJSON(u.Object[k], v) {
			return false
		}
	}
	return true
}

// restored is the stored object with its content put back.
func (c *controller) restored(stored sqlstore.Object) *unstructured.Unstructured {
	u, _ := storedobj.DecodeStored(stored.Value)
	maps.Copy(u.Object, c.obj.Content)
	return u
}

// namespaceObserver queues every active namespace it sees.
type namespaceObserver struct{ c *controller }

func (o namespaceObserver) Relisting()                 {}
func (o namespaceObserver) ListDone(int64)             {}
func (o namespaceObserver) Listed(obj sqlstore.Object) { o.observe(obj) }
func (o namespaceObserver) Changed(ev *sqlstore.Event) {
	if ev.Op != sqlstore.OpDelete {
		o.observe(ev.Object)
	}
}

func (o namespaceObserver) observe(obj sqlstore.Object) {
	var ns corev1.Namespace
	if err := storedobj.UnmarshalStored(obj.Value, &ns); err == nil && ns.DeletionTimestamp == nil {
		o.c.queue.Add(obj.Name)
	}
}

// objectObserver queues the namespace of a kept object that was deleted or changed.
type objectObserver struct{ c *controller }

func (o objectObserver) Relisting()             {}
func (o objectObserver) ListDone(int64)         {}
func (o objectObserver) Listed(sqlstore.Object) {}

// NarrowList keeps lists to the kept objects, as stored JSON names them: only changes matter
// here, and a namespace of a million ConfigMaps needs not be read for its root CA.
func (o objectObserver) NarrowList(opts *sqlstore.ListOptions) {
	opts.ValueContains = [][]byte{[]byte(`"name":"` + o.c.obj.Name + `"`)}
}
func (o objectObserver) Changed(ev *sqlstore.Event) {
	if ev.Object.Name == o.c.obj.Name && (ev.Op == sqlstore.OpDelete || o.c.obj.Content != nil) {
		o.c.queue.Add(ev.Object.Namespace)
	}
}

// equalJSON compares two JSON values as JSON.
func equalJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
