package admission

import (
	"log/slog"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/rbac"
	"github.com/sqlkube/sqlkube/server/registry"
)

// The type checking of a ValidatingAdmissionPolicy is written to its status, at its
// generation, as kube's policy status controller writes it.
func TestValidatingAdmissionPolicyTypeChecking(t *testing.T) {
	h := newHarness(t, harnessConfig{objects: []string{`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"typo"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"validations":[{"expression":"object.spec.replicas > 1"}]}}`}})
	policies := h.client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	var status *admissionregistrationv1.ValidatingAdmissionPolicyStatus
	eventually(t, "the policy's status is written", func() bool {
		policy, err := policies.Get(t.Context(), "typo", metav1.GetOptions{})
		status = &policy.Status
		return err == nil && status.ObservedGeneration == 1
	})
	if status.TypeChecking == nil || len(status.TypeChecking.ExpressionWarnings) != 1 {
		t.Fatalf("type checking %+v, want one warning", status.TypeChecking)
	}
	warning := status.TypeChecking.ExpressionWarnings[0]
	if warning.FieldRef != "spec.validations[0].expression" || !strings.Contains(warning.Warning, "undefined field 'spec'") {
		t.Errorf("type checking warning %+v", warning)
	}
}

// The chain ends with the RBAC escalation check of RBAC writes.
func TestEscalationIsChecked(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	roles := schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: "roles"}
	role := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r"},"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}`
	if _, err := h.create(asAlice(t.Context()), roles, role, true); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "attempting to grant RBAC permissions not currently held") {
		t.Errorf("alice's role: %v, want the escalation refused", err)
	}
	if _, err := h.create(asAdmin(t.Context()), roles, role, true); err != nil {
		t.Errorf("an admin's role: %v", err)
	}
}

// Until started, the chain is not synced and admits by the escalation check alone.
func TestChainBeforeStart(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	chain := New(Options{}, h.catalog, &rbac.Escalation{RBAC: h.rbac, Authorizer: h.rbac}, slog.New(slog.DiscardHandler))
	if chain.Synced() {
		t.Error("a chain not started is synced")
	}
	req := &registry.AdmissionRequest{Resource: h.resource("", "v1", "configmaps"), Namespace: "default", Name: "cm",
		Object: object(t, forbiddenConfigMap), Operation: "CREATE", Options: &metav1.CreateOptions{}}
	ctx := asAlice(t.Context())
	if err := chain.Mutate(ctx, req); err != nil {
		t.Errorf("mutate: %v", err)
	}
	if err := chain.Validate(ctx, req); err != nil {
		t.Errorf("validate: %v", err)
	}
}
