package rbac

import (
	"context"
	"maps"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// The bootstrap policy is kube's own (its bootstrappolicy package, with kube's default feature
// gates), written and reconciled at every start as kube-apiserver's rbac/bootstrap-roles
// post-start hook does (k8s.io/kubernetes/pkg/registry/rbac/rest, ensureRBACPolicy), with kube's
// reconciler: a missing role or binding is created; one that exists gets back the labels,
// annotations, rules, aggregation selectors and subjects it lacks, keeping what an operator
// added, unless annotated rbac.authorization.kubernetes.io/autoupdate "false"; a binding whose
// roleRef differs is deleted and created again. Every replica does this; a write another one
// made first is retried or found done.

// policy is what kube-apiserver's hook writes (its PolicyData), read from kube's package at each
// start.
type policy struct {
	clusterRoles        []rbacv1.ClusterRole
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	roles               map[string][]rbacv1.Role
	roleBindings        map[string][]rbacv1.RoleBinding
	// clusterRolesToAggregate maps a role that became aggregated to the role now holding its rules.
	clusterRolesToAggregate map[string]string
	// clusterRoleBindingsToSplit maps a binding to one that now takes part of its subjects.
	clusterRoleBindingsToSplit map[string]rbacv1.ClusterRoleBinding
}

// kubePolicy is kube-apiserver's: its ClusterRoles and ControllerRoles, their bindings, and the
// namespaced Roles and RoleBindings (in kube-system and kube-public).
func kubePolicy() policy {
	return policy{
		clusterRoles:               append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...),
		clusterRoleBindings:        append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...),
		roles:                      bootstrappolicy.NamespaceRoles(),
		roleBindings:               bootstrappolicy.NamespaceRoleBindings(),
		clusterRolesToAggregate:    bootstrappolicy.ClusterRolesToAggregate(),
		clusterRoleBindingsToSplit: bootstrappolicy.ClusterRoleBindingsToSplit(),
	}
}

// bootstrapRetry is how long a start waits before writing the policy again after a write failed,
// as kube-apiserver's hook polls.
const bootstrapRetry = time.Second

// bootstrap writes kube's policy until a pass succeeds or ctx ends. kube-apiserver exits when
// 30 s of passes fail; sqlkube keeps trying, and its bootstrap-roles check keeps failing.
func (c *Controller) bootstrap(ctx context.Context) bool {
	for {
		if c.ensurePolicy(ctx, kubePolicy()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(bootstrapRetry):
		}
	}
}

// ensurePolicy makes one pass over p, in kube's order, and reports whether every write
// succeeded; a failed object does not stop the others.
func (c *Controller) ensurePolicy(ctx context.Context, p policy) bool {
	m := c.modifiers(ctx)
	if err := primeAggregatedClusterRoles(p.clusterRolesToAggregate, m.clusterRoles.objects); err != nil {
		c.logFailure(ctx, "priming aggregated cluster roles", err)
		return false
	}
	if err := primeSplitClusterRoleBindings(p.clusterRoleBindingsToSplit, m.clusterRoleBindings.objects); err != nil {
		c.logFailure(ctx, "priming split cluster role bindings", err)
		return false
	}
	ok := true
	for _, role := range p.clusterRoles {
		ok = reconcileRole(c, reconciliation.ClusterRoleRuleOwner{ClusterRole: &role}, m.clusterRoles) && ok
	}
	for _, binding := range p.clusterRoleBindings {
		ok = reconcileBinding(c, reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &binding}, m.clusterRoleBindings) && ok
	}
	for _, namespace := range slices.Sorted(maps.Keys(p.roles)) {
		for _, role := range p.roles[namespace] {
			ok = reconcileRole(c, reconciliation.RoleRuleOwner{Role: &role}, m.roles) && ok
		}
	}
	for _, namespace := range slices.Sorted(maps.Keys(p.roleBindings)) {
		for _, binding := range p.roleBindings[namespace] {
			ok = reconcileBinding(c, reconciliation.RoleBindingAdapter{RoleBinding: &binding}, m.roleBindings) && ok
		}
	}
	return ok
}

// reconcileRole runs kube's reconciler on a ClusterRole or Role.
func reconcileRole[T any](c *Controller, want reconciliation.RuleOwner, client ruleOwners[T]) bool {
	opts := reconciliation.ReconcileRoleOptions{Role: want, Client: client, Confirm: true}
	return c.reconcile(client.ctx, client.resource.Kind, want.GetNamespace(), want.GetName(), func() (reconciled, error) {
		result, err := opts.Run()
		if err != nil {
			return reconciled{}, err
		}
		return reconciled{result.Operation, result.Protected, []any{"missingRules", result.MissingRules}}, nil
	})
}

// reconcileBinding runs kube's reconciler on a ClusterRoleBinding or RoleBinding.
func reconcileBinding[T any](c *Controller, want reconciliation.RoleBinding, client bindings[T]) bool {
	opts := reconciliation.ReconcileRoleBindingOptions{RoleBinding: want, Client: client, Confirm: true}
	return c.reconcile(client.ctx, client.resource.Kind, want.GetNamespace(), want.GetName(), func() (reconciled, error) {
		result, err := opts.Run()
		if err != nil {
			return reconciled{}, err
		}
		return reconciled{result.Operation, result.Protected, []any{"missingSubjects", result.MissingSubjects}}, nil
	})
}

// reconciled is what one of kube's reconcilers did: its operation, whether the object was
// protected (autoupdate "false"), and what it found missing, as log attributes.
type reconciled struct {
	op        reconciliation.ReconcileOperation
	protected bool
	missing   []any
}

// reconcile runs a reconciler, again on a conflict, and logs what it did or why it failed.
func (c *Controller) reconcile(ctx context.Context, kind, namespace, name string, run func() (reconciled, error)) bool {
	var result reconciled
	err := retryOnConflictOrServiceUnavailable(func() (err error) {
		result, err = run()
		return err
	})
	what := []any{"kind", kind, "namespace", namespace, "name", name}
	if err != nil {
		c.logFailure(ctx, "reconciling", err, what...)
		return false
	}
	c.logResult(result.op, result.protected, append(what, result.missing...))
	return true
}

// retryOnConflictOrServiceUnavailable is kube's hook's retry of one object: a conflict is
// another writer (a replica, an operator) between the read and the write.
func retryOnConflictOrServiceUnavailable(fn func() error) error {
	return retry.OnError(retry.DefaultBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err)
	}, fn)
}

// logResult logs what kube-apiserver's hook logs: a protected object that lacks something as a
// warning, a change at a lower level.
func (c *Controller) logResult(op reconciliation.ReconcileOperation, protected bool, what []any) {
	switch {
	case protected && op != reconciliation.ReconcileNone:
		c.deps.Log.Warn("rbac bootstrap: skipped a reconcile-protected object", what...)
	case op == reconciliation.ReconcileUpdate, op == reconciliation.ReconcileRecreate:
		c.deps.Log.Info("rbac bootstrap: "+string(op)+"d", what...)
	case op == reconciliation.ReconcileCreate:
		c.deps.Log.Debug("rbac bootstrap: created", what...)
	}
}

func (c *Controller) logFailure(ctx context.Context, doing string, err error, what ...any) {
	if ctx.Err() == nil {
		c.deps.Log.Error("rbac bootstrap: "+doing, append(what, "err", err)...)
	}
}

// primeAggregatedClusterRoles copies a role that became aggregated (admin, edit, view) to the
// role that now holds its rules (system:aggregate-to-...), when that one does not exist yet, so
// that rules an operator added to the old role are kept: kube's primeAggregatedClusterRoles.
func primeAggregatedClusterRoles(toAggregate map[string]string, clusterRoles objects[rbacv1.ClusterRole]) error {
	for oldName, newName := range toAggregate {
		_, err := clusterRoles.get("", newName)
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		existing, err := clusterRoles.get("", oldName)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if existing.AggregationRule != nil {
			// Already aggregated: no rules of its own to carry over. kube stops priming here.
			return nil
		}
		existing.Name, existing.ResourceVersion = newName, ""
		if _, err := clusterRoles.create("", newName, existing); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// primeSplitClusterRoleBindings creates a binding split off an existing one (system:discovery's
// unauthenticated part, now system:public-info-viewer) with the existing one's subjects, labels
// and annotations, when it does not exist yet: kube's primeSplitClusterRoleBindings.
func primeSplitClusterRoleBindings(toSplit map[string]rbacv1.ClusterRoleBinding, clusterRoleBindings objects[rbacv1.ClusterRoleBinding]) error {
	for existingName, template := range toSplit {
		existing, err := clusterRoleBindings.get("", existingName)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		_, err = clusterRoleBindings.get("", template.Name)
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		split := template.DeepCopy()
		split.Subjects, split.Labels, split.Annotations = existing.Subjects, existing.Labels, existing.Annotations
		if _, err := clusterRoleBindings.create("", split.Name, split); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
