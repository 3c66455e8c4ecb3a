package rbac

import (
	"context"
	"encoding/json"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/rbac"
	"github.com/sqlkube/sqlkube/server/registry"
)

// requestAggregation asks Run to recompute aggregated ClusterRoles after a ClusterRole changed;
// requests made while one is pending are merged into it.
func (c *Controller) requestAggregation(kind string) {
	if kind != "clusterroles" {
		return
	}
	select {
	case c.aggregate <- struct{}{}:
	default:
	}
}

// aggregateAll writes the rules of every aggregated ClusterRole whose stored rules differ from
// what its selectors now gather. Roles aggregating other aggregated roles (admin gathers edit,
// which gathers view) settle over successive passes: each write changes a ClusterRole, which
// requests the next pass.
func (c *Controller) aggregateAll(ctx context.Context) {
	c.mu.Lock()
	roles := make([]rbacv1.ClusterRole, 0, len(c.clusterRoles))
	for _, r := range c.clusterRoles {
		roles = append(roles, r)
	}
	c.mu.Unlock()
	for _, role := range roles {
		if role.AggregationRule == nil {
			continue
		}
		rules, err := rbac.AggregatedRules(role.AggregationRule, role.Name, roles)
		if err != nil || equalRules(rules, role.Rules) {
			continue
		}
		if err := c.writeRules(ctx, role.Name, rules); err != nil && ctx.Err() == nil {
			c.deps.Log.Warn("rbac: aggregating a ClusterRole", "name", role.Name, "err", err)
		}
	}
}

func equalRules(a, b []rbacv1.PolicyRule) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// writeRules replaces a ClusterRole's rules with a merge patch, as kube-controller-manager's
// aggregation controller does.
func (c *Controller) writeRules(ctx context.Context, name string, rules []rbacv1.PolicyRule) error {
	patch, err := json.Marshal(map[string]any{"rules": rules})
	if err != nil {
		return err
	}
	ref := registry.Ref{Resource: c.types["clusterroles"], Name: name}
	_, _, _, err = c.deps.Registry.Patch(ctx, ref, types.MergePatchType, patch, &metav1.PatchOptions{FieldManager: controllers.FieldManager})
	return err
}
