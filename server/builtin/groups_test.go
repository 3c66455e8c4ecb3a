package builtin

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/sqlkube/sqlkube/server/resource"
)

// servedAt is the built-in served at group/version/name.
func servedAt(t *testing.T, group, version, name string) *resource.Resource {
	t.Helper()
	for _, r := range Resources(func(*resource.Resource) {}, nil) {
		if r.Group == group && r.Version == version && r.Name == name {
			return r
		}
	}
	t.Fatalf("%s/%s %s is not served", group, version, name)
	return nil
}

// TestFieldLabelsAreKubes: every field label a type served with kube's rules lists is one kube's
// scheme converts for its version (kube-apiserver refuses the others with 400).
func TestFieldLabelsAreKubes(t *testing.T) {
	for _, r := range Resources(func(*resource.Resource) {}, nil) {
		strategy, ok := r.Strategy.(*kubeTypeStrategy)
		if !ok {
			continue
		}
		gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
		for label := range strategy.SelectableFields() {
			if _, _, err := legacyscheme.Scheme.ConvertFieldLabel(gvk, label, "x"); err != nil {
				t.Errorf("%v: kube refuses field label %s: %v", gvk, label, err)
			}
		}
	}
}

// TestHorizontalPodAutoscalerConverts: an autoscaling/v1 HPA converts to v2, as it is stored,
// and back unchanged, with kube's scheme.
func TestHorizontalPodAutoscalerConverts(t *testing.T) {
	v1 := servedAt(t, AutoscalingGroup, "v1", "horizontalpodautoscalers")
	if v1.StorageVersion != "v2" || v1.ServesStorageVersion() || v1.StorageName != servedAt(t, AutoscalingGroup, "v2", "horizontalpodautoscalers").StorageName {
		t.Fatalf("v1 HPAs stored as %s in %s", v1.StorageVersion, v1.StorageName)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": "web", "namespace": "default", "resourceVersion": "7"},
		"spec": map[string]any{"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"minReplicas": int64(1), "maxReplicas": int64(5), "targetCPUUtilizationPercentage": int64(80)},
		"status": map[string]any{"currentReplicas": int64(0), "desiredReplicas": int64(0)},
	}}
	stored, err := v1.ConvertToStorage(obj.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	wantMetrics := []any{map[string]any{"type": "Resource", "resource": map[string]any{
		"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": int64(80)}}}}
	if stored.GetAPIVersion() != "autoscaling/v2" || !cmp.Equal(stored.Object["spec"].(map[string]any)["metrics"], wantMetrics) {
		t.Fatalf("stored as %v", stored.Object)
	}
	read, err := v1.ReadStored(stored)
	if err != nil {
		t.Fatal(err)
	}
	obj.SetResourceVersion("") // the storage does not keep it in the object
	if diff := cmp.Diff(obj.Object, read.Object); diff != "" {
		t.Errorf("v1 -> v2 -> v1 (-sent +read):\n%s", diff)
	}
}

// TestEventsV1AreCoreEvents: events.k8s.io/v1 events are stored as core v1 events, with their
// fields renamed as kube's conversion renames them.
func TestEventsV1AreCoreEvents(t *testing.T) {
	events := servedAt(t, EventsGroup, "v1", "events")
	if events.StorageName != "events" || events.StorageGroupVersion() != (schema.GroupVersion{Version: "v1"}) {
		t.Fatalf("events.k8s.io events stored in %s as %v", events.StorageName, events.StorageGroupVersion())
	}
	stored, err := events.ConvertToStorage(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": map[string]any{"name": "e", "namespace": "default"},
		"note": "hello", "reportingController": "example.com/ctl", "regarding": map[string]any{"kind": "Deployment", "name": "web"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if stored.GetAPIVersion() != "v1" || stored.Object["message"] != "hello" || stored.Object["reportingComponent"] != "example.com/ctl" ||
		!cmp.Equal(stored.Object["involvedObject"], map[string]any{"kind": "Deployment", "name": "web"}) {
		t.Errorf("stored as %v", stored.Object)
	}
}

// TestCertificateApprovalTakesOnlyConditions: a write to /approval changes a CSR's conditions
// (timestamped), and nothing else of its spec or status, as kube's approval strategy does.
func TestCertificateApprovalTakesOnlyConditions(t *testing.T) {
	csrs := servedAt(t, CertificatesGroup, "v1", "certificatesigningrequests")
	old := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": map[string]any{"name": "alice"},
		"spec": map[string]any{"request": "cmVx", "signerName": "example.com/signer", "usages": []any{"client auth"}},
	}}
	body := old.DeepCopy()
	_ = unstructured.SetNestedField(body.Object, "example.com/other", "spec", "signerName")
	_ = unstructured.SetNestedField(body.Object, "Y2VydA==", "status", "certificate")
	_ = unstructured.SetNestedSlice(body.Object, []any{map[string]any{"type": "Approved", "status": "True", "reason": "Test"}}, "status", "conditions")
	approval := csrs.SubresourceStrategy("approval")
	approval.PrepareForUpdate(t.Context(), body, old)
	if signer, _, _ := unstructured.NestedString(body.Object, "spec", "signerName"); signer != "example.com/signer" {
		t.Errorf("signerName %q after /approval", signer)
	}
	if _, found, _ := unstructured.NestedString(body.Object, "status", "certificate"); found {
		t.Errorf("certificate set through /approval: %v", body.Object["status"])
	}
	conditions, _, _ := unstructured.NestedSlice(body.Object, "status", "conditions")
	if len(conditions) != 1 || conditions[0].(map[string]any)["lastUpdateTime"] == nil {
		t.Errorf("conditions after /approval: %v", conditions)
	}
}

// TestAPIExtensionsCategory: as kube's storage of them, the admission types and CRDs are in
// the api-extensions category (`kubectl get api-extensions`).
func TestAPIExtensionsCategory(t *testing.T) {
	seen := 0
	for _, r := range Resources(func(*resource.Resource) {}, nil) {
		if r.Group != AdmissionGroup && r.Group != APIExtensionsGroup {
			continue
		}
		seen++
		if !cmp.Equal(r.Categories, []string{"api-extensions"}) {
			t.Errorf("%s.%s: categories %v, want [api-extensions]", r.Name, r.Group, r.Categories)
		}
	}
	if seen != 7 {
		t.Errorf("%d admission and CRD types, want 7", seen)
	}
}

// TestReturnsDeletedObject: the types whose immediate delete kube-apiserver answers with the
// deleted object (their storage's ReturnDeletedObject), each declared so with the type.
func TestReturnsDeletedObject(t *testing.T) {
	var got []string
	for _, r := range Resources(func(*resource.Resource) {}, nil) {
		if r.ReturnsDeletedObject {
			got = append(got, r.StorageName)
		}
	}
	slices.Sort(got)
	want := []string{"csidrivers.storage.k8s.io", "csinodes.storage.k8s.io", "deviceclasses.resource.k8s.io", "namespaces",
		"persistentvolumeclaims", "persistentvolumes", "pods", "podtemplates", "resourceclaims.resource.k8s.io",
		"resourceclaimtemplates.resource.k8s.io", "resourcequotas", "resourceslices.resource.k8s.io", "serviceaccounts", "services",
		"storageclasses.storage.k8s.io", "volumeattachments.storage.k8s.io", "volumeattributesclasses.storage.k8s.io"}
	if !slices.Equal(got, want) {
		t.Errorf("types returning the deleted object:\n got %v\nwant %v", got, want)
	}
}
