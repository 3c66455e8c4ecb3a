package endpoints_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodesWithKubesRules: nodes are served with kube's rules, with the not-ready taint kube's
// TaintNodesByCondition admission gives a new node, /status, and the spec.unschedulable field
// selector.
func TestNodesWithKubesRules(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		node := api.do("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`).expect(t, http.StatusCreated).object(t)
		if taints := nested(node, "spec", "taints"); !equalJSON(taints, []any{map[string]any{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}}) {
			t.Errorf("a new node's taints: %v", taints)
		}
		api.do("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"},"spec":{"unschedulable":true}}`).expect(t, http.StatusCreated)
		// kube names the field of a taint metadata.taints in its validation.
		api.do("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"bad"},"spec":{"taints":[{"key":"k","effect":"Sometimes"}]}}`).expectStatus(t, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: `Node "bad" is invalid: metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
			Details: &metav1.StatusDetails{Name: "bad", Kind: "Node", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueNotSupported,
				Message: `Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`, Field: "metadata.taints[0].effect"}}}})

		for selector, want := range map[string][]string{"spec.unschedulable=true": {"n2"}, "spec.unschedulable!=true": {"n1"}, "spec.unschedulable=false": {"n1"}, "metadata.name=n1": {"n1"}} {
			if names := itemNames(api.do("GET", "/api/v1/nodes?fieldSelector="+selector, "").expect(t, http.StatusOK).object(t)); !equalJSON(names, want) {
				t.Errorf("nodes with %s: %v, want %v", selector, names, want)
			}
		}
		api.do("GET", "/api/v1/nodes?fieldSelector=spec.podCIDR=x", "").expectStatus(t, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: `field label not supported: spec.podCIDR`})

		// No kubelet answers a node's /proxy.
		api.do("GET", "/api/v1/nodes/n1/proxy/metrics", "").expectStatus(t, metav1.Status{Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown,
			Message: "no preferred addresses found; known addresses: []"})
		api.do("GET", "/api/v1/nodes/nope/proxy", "").expectStatus(t, metav1.Status{Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: `nodes "nope" not found`, Details: &metav1.StatusDetails{Name: "nope", Kind: "nodes"}})
		api.do("GET", "/api/v1/nodes/a:b:c:d/proxy", "").expectStatus(t, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: `invalid node request "a:b:c:d"`})
		api.do("PATCH", "/api/v1/nodes/n2/status", `{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.2"}]}}`,
			"Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
		api.do("POST", "/api/v1/nodes/https:n2:10250/proxy/pods", "{}").expectStatus(t, metav1.Status{Code: http.StatusServiceUnavailable,
			Reason: metav1.StatusReasonServiceUnavailable, Message: "error trying to reach service: sqlkube does not proxy to kubelets"})
		// kube proxies to no address that is not global unicast: a loopback one is refused.
		api.do("PATCH", "/api/v1/nodes/n1/status", `{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}]}}`,
			"Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
		api.do("GET", "/api/v1/nodes/n1/proxy/metrics", "").expectStatus(t, metav1.Status{Code: http.StatusBadRequest,
			Reason: metav1.StatusReasonBadRequest, Message: "address not allowed"})

		status := api.do("PATCH", "/api/v1/nodes/n1/status", `{"status":{"addresses":null,"capacity":{"cpu":"4"}},"spec":{"unschedulable":true}}`,
			"Content-Type: application/merge-patch+json").expect(t, http.StatusOK).object(t)
		if nested(status, "status", "capacity", "cpu") != "4" || nested(status, "spec", "unschedulable") != nil {
			t.Errorf("a node's /status wrote %v, %v: want its status alone", nested(status, "status"), nested(status, "spec"))
		}
	})
}

// TestVolumesAndClaims: persistentvolumes and persistentvolumeclaims get kube's defaults and
// the finalizers of kube's StorageObjectInUseProtection admission, so deleting one leaves it
// terminating, as on a cluster without the protection controllers.
func TestVolumesAndClaims(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		pv := api.do("POST", "/api/v1/persistentvolumes", `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"},
			"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"}}}`).expect(t, http.StatusCreated).object(t)
		if nested(pv, "spec", "persistentVolumeReclaimPolicy") != "Retain" || nested(pv, "spec", "volumeMode") != "Filesystem" ||
			!equalJSON(nested(pv, "metadata", "finalizers"), []any{"kubernetes.io/pv-protection"}) || nested(pv, "status", "phase") != "Pending" {
			t.Errorf("volume: %v", pv)
		}
		const claims = "/api/v1/namespaces/default/persistentvolumeclaims"
		pvc := api.do("POST", claims, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},
			"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`).expect(t, http.StatusCreated).object(t)
		if nested(pvc, "spec", "volumeMode") != "Filesystem" || nested(pvc, "spec", "storageClassName") != nil ||
			!equalJSON(nested(pvc, "metadata", "finalizers"), []any{"kubernetes.io/pvc-protection"}) || nested(pvc, "status", "phase") != "Pending" {
			t.Errorf("claim: %v", pvc)
		}
		api.do("PATCH", claims+"/data", `{"spec":{"accessModes":["ReadWriteMany"]}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusUnprocessableEntity)
		deleted := api.do("DELETE", claims+"/data", "").expect(t, http.StatusOK).object(t)
		if nested(deleted, "metadata", "deletionTimestamp") == nil {
			t.Errorf("a claim held by its protection finalizer was deleted at once: %v", deleted)
		}
	})
}

// TestLimitRangesAndQuotas: limitranges and resourcequotas with kube's rules; a quota's
// /status holds its usage, which nothing counts here.
func TestLimitRangesAndQuotas(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do("POST", "/api/v1/namespaces/default/limitranges", `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"limits"},
			"spec":{"limits":[{"type":"Container","default":{"cpu":"500m"},"max":{"cpu":"1"}}]}}`).expect(t, http.StatusCreated)
		api.do("POST", "/api/v1/namespaces/default/limitranges", `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"bad"},
			"spec":{"limits":[{"type":"Container","default":{"cpu":"2"},"max":{"cpu":"1"}}]}}`).expect(t, http.StatusUnprocessableEntity)
		const quotas = "/api/v1/namespaces/default/resourcequotas"
		api.do("POST", quotas, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"pods":"2"}}}`).expect(t, http.StatusCreated)
		quota := api.do("PUT", quotas+"/q/status", `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},
			"spec":{"hard":{"pods":"5"}},"status":{"hard":{"pods":"2"},"used":{"pods":"1"}}}`).expect(t, http.StatusOK).object(t)
		if nested(quota, "spec", "hard", "pods") != "2" || nested(quota, "status", "used", "pods") != "1" {
			t.Errorf("quota after a /status write: %v", quota)
		}
	})
}

// itemNames are the names of a list's items.
func itemNames(list map[string]any) []any {
	names := []any{}
	for _, item := range list["items"].([]any) {
		names = append(names, nested(item.(map[string]any), "metadata", "name"))
	}
	return names
}

// TestComponentStatuses: componentstatuses are read-only, computed from the liveness checks
// (the database), with kube's deprecation warning.
func TestComponentStatuses(t *testing.T) {
	api := sqliteAPI(t)
	resp := api.do("GET", "/api/v1/componentstatuses", "").expect(t, http.StatusOK)
	if w := resp.header.Get("Warning"); w != `299 - "v1 ComponentStatus is deprecated in v1.19+"` {
		t.Errorf("Warning header: %q", w)
	}
	list := resp.object(t)
	if list["kind"] != "ComponentStatusList" || !equalJSON(itemNames(list), []any{"database"}) {
		t.Errorf("componentstatuses: %v", list)
	}
	database := api.do("GET", "/api/v1/componentstatuses/database", "").expect(t, http.StatusOK).object(t)
	if !equalJSON(database["conditions"], []any{map[string]any{"type": "Healthy", "status": "True", "message": "ok"}}) {
		t.Errorf("database: %v", database)
	}
	if names := itemNames(api.do("GET", "/api/v1/componentstatuses?fieldSelector=metadata.name=etcd-0", "").expect(t, http.StatusOK).object(t)); len(names) != 0 {
		t.Errorf("selected by another name: %v", names)
	}
	api.do("GET", "/api/v1/componentstatuses/etcd-0", "").expectStatus(t, metav1.Status{Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: `componentstatus "etcd-0" not found`, Details: &metav1.StatusDetails{Name: "etcd-0", Kind: "componentstatus"}})
	api.do("POST", "/api/v1/componentstatuses", `{"apiVersion":"v1","kind":"ComponentStatus","metadata":{"name":"x"}}`).expect(t, http.StatusMethodNotAllowed)
	api.do("GET", "/api/v1/componentstatuses?watch=true", "").expect(t, http.StatusMethodNotAllowed)
}
