package rbac

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/component-helpers/auth/rbac/reconciliation"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
)

// bootstrapManager is who the bootstrap policy is written as: kube-apiserver writes it through
// its loopback client, whose user agent names it in managedFields.
const bootstrapManager = "kube-apiserver"

// modifiers are kube's reconciliation clients of the four RBAC types, on the registry.
type modifiers struct {
	clusterRoles        ruleOwners[rbacv1.ClusterRole]
	roles               ruleOwners[rbacv1.Role]
	clusterRoleBindings bindings[rbacv1.ClusterRoleBinding]
	roleBindings        bindings[rbacv1.RoleBinding]
}

// modifiers wrap what they read in kube's adapters of each type, as kube's clients do.
func (c *Controller) modifiers(ctx context.Context) modifiers {
	return modifiers{
		clusterRoles: ruleOwners[rbacv1.ClusterRole]{objects: objectsOf[rbacv1.ClusterRole](ctx, c, "clusterroles"),
			wrap: func(r *rbacv1.ClusterRole) reconciliation.RuleOwner {
				return reconciliation.ClusterRoleRuleOwner{ClusterRole: r}
			}},
		roles: ruleOwners[rbacv1.Role]{objects: objectsOf[rbacv1.Role](ctx, c, "roles"),
			wrap: func(r *rbacv1.Role) reconciliation.RuleOwner { return reconciliation.RoleRuleOwner{Role: r} }},
		clusterRoleBindings: bindings[rbacv1.ClusterRoleBinding]{objects: objectsOf[rbacv1.ClusterRoleBinding](ctx, c, "clusterrolebindings"),
			wrap: func(b *rbacv1.ClusterRoleBinding) reconciliation.RoleBinding {
				return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}
			}},
		roleBindings: bindings[rbacv1.RoleBinding]{objects: objectsOf[rbacv1.RoleBinding](ctx, c, "rolebindings"),
			wrap: func(b *rbacv1.RoleBinding) reconciliation.RoleBinding {
				return reconciliation.RoleBindingAdapter{RoleBinding: b}
			}},
	}
}

func objectsOf[T any](ctx context.Context, c *Controller, resourceName string) objects[T] {
	return objects[T]{ctx: ctx, deps: c.deps, resource: c.types[resourceName], namespaces: c.namespaces}
}

// objects reads and writes one RBAC type (T is its Go type) through the registry, as kube's
// reconciliation adapters (reconciliation.ClusterRoleModifier and the others) do through
// kube-apiserver's loopback clientset: as kube-apiserver, without a user, so unchecked by
// admission, as the loopback client's system:masters writes are.
type objects[T any] struct {
	ctx      context.Context
	deps     controllers.Deps
	resource *resource.Resource
	// namespaces is where a namespaced object's missing namespace is created.
	namespaces *resource.Resource
}

func (o objects[T]) ref(namespace, name string) registry.Ref {
	return registry.Ref{Resource: o.resource, Namespace: namespace, Name: name}
}

func (o objects[T]) get(namespace, name string) (*T, error) {
	stored, err := o.deps.Registry.Get(o.ctx, o.ref(namespace, name), &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return decode[T](stored.Value)
}

// create stores obj, first creating its namespace if missing, as kube's RoleModifier and
// RoleBindingClientAdapter do.
func (o objects[T]) create(namespace, name string, obj runtime.Object) (*T, error) {
	if namespace != "" {
		if err := o.ensureNamespace(namespace); err != nil {
			return nil, err
		}
	}
	u, err := controllers.ToUnstructured(obj, o.resource)
	if err != nil {
		return nil, err
	}
	stored, _, err := o.deps.Registry.Create(o.ctx, o.ref(namespace, name), u, &metav1.CreateOptions{FieldManager: bootstrapManager})
	if err != nil {
		return nil, err
	}
	return decode[T](stored.Value)
}

func (o objects[T]) update(namespace, name string, obj runtime.Object) (*T, error) {
	u, err := controllers.ToUnstructured(obj, o.resource)
	if err != nil {
		return nil, err
	}
	stored, _, err := o.deps.Registry.Update(o.ctx, o.ref(namespace, name), u, &metav1.UpdateOptions{FieldManager: bootstrapManager})
	if err != nil {
		return nil, err
	}
	return decode[T](stored.Value)
}

// delete deletes the object if it still has uid.
func (o objects[T]) delete(namespace, name string, uid types.UID) error {
	_, _, err := o.deps.Registry.Delete(o.ctx, o.ref(namespace, name), &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	return err
}

// ensureNamespace creates namespace if it does not exist, as kube's reconciliation package
// (tryEnsureNamespace) does before creating a Role or RoleBinding in it.
func (o objects[T]) ensureNamespace(namespace string) error {
	ref := registry.Ref{Resource: o.namespaces, Name: namespace}
	_, err := o.deps.Registry.Get(o.ctx, ref, &metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if err := utilerrors.FilterOut(err, apierrors.IsNotFound, apierrors.IsForbidden); err != nil {
		return err
	}
	u, err := controllers.ToUnstructured(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, o.namespaces)
	if err != nil {
		return err
	}
	_, _, err = o.deps.Registry.Create(o.ctx, ref, u, &metav1.CreateOptions{FieldManager: bootstrapManager})
	return utilerrors.FilterOut(err, apierrors.IsAlreadyExists, apierrors.IsForbidden)
}

func decode[T any](value []byte) (*T, error) {
	obj := new(T)
	if err := storedobj.UnmarshalStored(value, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// wrapped is what a read or write of objects returned, in kube's adapter type W.
func wrapped[T, W any](wrap func(*T) W) func(*T, error) (W, error) {
	return func(obj *T, err error) (W, error) {
		if err != nil {
			var none W
			return none, err
		}
		return wrap(obj), nil
	}
}

// ruleOwners is kube's reconciliation.RuleOwnerModifier of ClusterRoles or Roles on the
// registry; wrap is kube's adapter of T (ClusterRoleRuleOwner, RoleRuleOwner).
type ruleOwners[T any] struct {
	objects[T]
	wrap func(*T) reconciliation.RuleOwner
}

func (m ruleOwners[T]) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	return wrapped(m.wrap)(m.get(namespace, name))
}

func (m ruleOwners[T]) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return wrapped(m.wrap)(m.create(in.GetNamespace(), in.GetName(), in.GetObject()))
}

func (m ruleOwners[T]) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return wrapped(m.wrap)(m.update(in.GetNamespace(), in.GetName(), in.GetObject()))
}

// bindings is kube's reconciliation.RoleBindingModifier of ClusterRoleBindings or RoleBindings
// on the registry; wrap is kube's adapter of T (ClusterRoleBindingAdapter, RoleBindingAdapter).
type bindings[T any] struct {
	objects[T]
	wrap func(*T) reconciliation.RoleBinding
}

func (m bindings[T]) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	return wrapped(m.wrap)(m.get(namespace, name))
}

func (m bindings[T]) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return wrapped(m.wrap)(m.create(in.GetNamespace(), in.GetName(), in.GetObject()))
}

func (m bindings[T]) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return wrapped(m.wrap)(m.update(in.GetNamespace(), in.GetName(), in.GetObject()))
}

func (m bindings[T]) Delete(namespace, name string, uid types.UID) error {
	return m.delete(namespace, name, uid)
}
