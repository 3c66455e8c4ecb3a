package builtin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sqlkube/sqlkube/server/resource"
	"k8s.io/apimachinery/pkg/runtime"

	api "k8s.io/kubernetes/pkg/apis/core"
)

// TestServiceGetsKubesDefaults: a Service body gets the defaults of kube's core/v1 scheme as
// it is decoded (type, session affinity, the port's protocol and target port).
func TestServiceGetsKubesDefaults(t *testing.T) {
	res := builtinResource(t, "services")
	obj := decodedForValidation(t, res, `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {ports: [{port: 80}]}}`)
	want := map[string]any{
		"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
		"ports": []any{map[string]any{"port": int64(80), "protocol": "TCP", "targetPort": int64(80)}},
	}
	if diff := cmp.Diff(want, obj.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

// TestNetworkTypesValidation: kube's validation of the network types, with its exact causes.
func TestNetworkTypesValidation(t *testing.T) {
	for _, tt := range []struct{ storage, body, want string }{
		{"networkpolicies.networking.k8s.io", `{metadata: {name: p}, spec: {podSelector: {}, policyTypes: [Sideways]}}`,
			"\nUnsupported value \"spec.policyTypes[0]\": Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\""},
		{"ingresses.networking.k8s.io", `{metadata: {name: i}, spec: {}}`,
			"\nInvalid value \"spec\": Invalid value: null: either `defaultBackend` or `rules` must be specified"},
		{"servicecidrs.networking.k8s.io", `{metadata: {name: c}, spec: {cidrs: ["10.0.0.0/33"]}}`,
			"\nInvalid value \"spec.cidrs[0]\": Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"},
	} {
		res := builtinResource(t, tt.storage)
		obj := decodedForValidation(t, res, tt.body)
		obj.SetResourceVersion("")
		res.Strategy.PrepareForCreate(t.Context(), obj)
		if got := errorsText(res.Strategy.Validate(t.Context(), obj)); got != tt.want {
			t.Errorf("%s: %s\nwant %s", tt.storage, got, tt.want)
		}
	}
}

// TestInternally: the services' strategy hands kube's store hooks the internal Service and
// keeps what they write into it.
func TestInternally(t *testing.T) {
	res := builtinResource(t, "services")
	obj := decodedForValidation(t, res, `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {ports: [{port: 80}]}}`)
	err := resource.Internally(res.Strategy.(*kubeTypeStrategy), obj, func(internal runtime.Object) error {
		internal.(*api.Service).Spec.ClusterIPs = []string{"10.0.0.7"}
		return nil
	})
	if err != nil || obj.Object["spec"].(map[string]any)["clusterIPs"] == nil {
		t.Errorf("Internally: %v, spec %v", err, obj.Object["spec"])
	}
}
