package registry_test

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// createDecoded creates doc in typ's collection as the HTTP layer would, decoded (and so
// defaulted) by the type's strategy: kube's validation of a built-in needs its defaults.
func (r *testRegistry) createDecoded(typ, namespace, doc string) *unstructured.Unstructured {
	r.t.Helper()
	ref := r.ref(typ, namespace, "")
	content, _, err := ref.Resource.Typed().Decode([]byte(doc))
	if err != nil {
		r.t.Fatalf("decoding %s: %v", doc, err)
	}
	stored, _, err := r.reg.Create(r.t.Context(), ref, &unstructured.Unstructured{Object: content}, &metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		r.t.Fatalf("creating %s: %v", doc, err)
	}
	return decode(r.t, stored)
}

// TestPodGCStatusPatchOfTerminatingPod: kube-controller-manager's pod garbage collector marks a
// pod whose node is gone Failed with a DisruptionTarget condition, by the strategic merge patch
// of pods/status utilpod.PatchPodStatus sends, then deletes it with grace period 0. kube's pod
// status strategy clears the deletionTimestamp, which the update then restores from the stored
// pod (kube's BeforeUpdate order), so a pod being deleted takes the patch, and the delete
// removes it.
func TestPodGCStatusPatchOfTerminatingPod(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		pod := r.createDecoded("pods", "default", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"orphan"},
			"spec":{"nodeName":"gone-node","containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"Running"}}`)
		ref := r.ref("pods", "default", "orphan")
		terminating, deleted := r.mustDelete(ref, &metav1.DeleteOptions{})
		if deleted || terminating.GetDeletionTimestamp() == nil {
			t.Fatalf("a bound pod's delete should wait its grace period: deleted %t, %v", deleted, terminating.Object["metadata"])
		}
		status := ref
		status.Subresource = "status"
		patched := r.mustPatch(status, types.StrategicMergePatchType, `{"metadata":{"uid":"`+string(pod.GetUID())+`"},"status":{
			"$setElementOrder/conditions":[{"type":"DisruptionTarget"}],
			"conditions":[{"type":"DisruptionTarget","status":"True","reason":"DeletionByPodGC","message":"PodGC: node no longer exists","lastTransitionTime":"2026-11-29T07:00:00Z"}],
			"phase":"Failed"}}`)
		wantField(t, patched, "Failed", "status", "phase")
		if !patched.GetDeletionTimestamp().Equal(terminating.GetDeletionTimestamp()) {
			t.Fatalf("deletionTimestamp %v after the status patch, want %v", patched.GetDeletionTimestamp(), terminating.GetDeletionTimestamp())
		}
		if _, deleted := r.mustDelete(ref, metav1.NewDeleteOptions(0)); !deleted {
			t.Fatal("the pod garbage collector's delete with grace period 0 left the pod")
		}
	})
}

// TestStatusWriteKeepsWhatKubesStrategyKeeps: a /status write hands the whole object to kube's
// status strategy of the type, which decides what of the request's metadata is stored: the
// labels and annotations for services, pods, nodes, jobs, PDBs, PVs and CSRs (they reset only
// the spec), the annotations alone for deployments (their strategy resets the labels), neither
// for ServiceCIDRs (metav1.ResetObjectMetaForStatus). A namespace's keeps them too.
func TestStatusWriteKeepsWhatKubesStrategyKeeps(t *testing.T) {
	r := onSQLite(t)
	const meta = `"labels":{"set":"by-status"},"annotations":{"note":"by-status"}`
	for _, c := range []struct {
		typ, namespace, doc, status   string
		keepsLabels, keepsAnnotations bool
	}{
		{"services", "default", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}`,
			`{"loadBalancer":{}}`, true, true},
		{"pods", "default", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
			`{"phase":"Running"}`, true, true},
		{"nodes", "", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}`, `{"phase":"Running"}`, true, true},
		{"jobs.batch", "default", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"perl"}]}}}}`,
			`{"active":1}`, true, true},
		{"poddisruptionbudgets.policy", "default", `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"b"},"spec":{"minAvailable":1}}`,
			`{"currentHealthy":0,"desiredHealthy":1,"disruptionsAllowed":0,"expectedPods":1}`, true, true},
		{"persistentvolumes", "", `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"v"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp"}}}`,
			`{"phase":"Available"}`, true, true},
		{"certificatesigningrequests.certificates.k8s.io", "", csrJSON, `{}`, true, true},
		{"deployments.apps", "default", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"app":"d"}},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
			`{"replicas":1}`, false, true},
		{"servicecidrs.networking.k8s.io", "", `{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"c"},"spec":{"cidrs":["10.9.0.0/24"]}}`,
			`{}`, false, false},
		{"namespaces", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}}`, `{"phase":"Active"}`, true, true},
	} {
		t.Run(c.typ, func(t *testing.T) {
			obj := r.createDecoded(c.typ, c.namespace, c.doc)
			ref := r.ref(c.typ, c.namespace, obj.GetName())
			ref.Subresource = "status"
			before := obj.GetLabels()
			got := r.mustPatch(ref, types.MergePatchType, `{"metadata":{`+meta+`},"status":`+c.status+`}`)
			wantLabels := maps.Clone(before)
			if c.keepsLabels {
				wantLabels = merged(before, map[string]string{"set": "by-status"})
			}
			if !maps.Equal(got.GetLabels(), wantLabels) {
				t.Errorf("labels %v, want %v", got.GetLabels(), wantLabels)
			}
			if kept := got.GetAnnotations()["note"] == "by-status"; kept != c.keepsAnnotations {
				t.Errorf("annotations %v: kept %t, want %t", got.GetAnnotations(), kept, c.keepsAnnotations)
			}
			if stored := r.mustGet(c.typ, c.namespace, obj.GetName()); !maps.Equal(stored.GetLabels(), got.GetLabels()) {
				t.Errorf("stored labels %v, answered %v", stored.GetLabels(), got.GetLabels())
			}
		})
	}
}

// csrJSON is a CertificateSigningRequest for a client certificate, its request a PEM
// certificate request for CN=alice,O=developers (a P-256 key thrown away), base64.
const csrJSON = `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"csr"},
	"spec":{"signerName":"example.com/signer","usages":["client auth"],"request":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIZk1JR0hBZ0VBTUNVeERqQU1CZ05WQkFNTUJXRnNhV05sTVJNd0VRWURWUVFLREFwa1pYWmxiRzl3WlhKegpNRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUVwbHpoUlAyYjQ1U1pFV1J2LzFzM1BnWC9oanU1CmdiWGJpTlhubGdyNkF2a0xpcHA0dGJVTUdTMGxoN3lZNSs5S0U3RWxHR3M0WXBQMnJtd0tITStLZzZBQU1Bb0cKQ0NxR1NNNDlCQU1DQTBjQU1FUUNJSHN1NU95SHQzRUdhUElmcEcxZS80UlhZb1NSNEpGZzNJNHlFTUJQWFpnbgpBaUFUb0FueHJaZWllaVl4S0xFRUpycTlNSXpYdVJRZVAxOVZxNm5xOHFsMGx3PT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg=="}}`

func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}
