package registry_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/sqlkube/sqlkube/server/registry"
)

// A kubelet's watch of its node's pods (fieldSelector spec.nodeName, which the store indexes)
// gets exactly its pods' events: ADDED when a pod is bound to the node, MODIFIED while it stays,
// DELETED when it leaves the node or is deleted; never another node's. A watch of all pods gets
// every event.
func TestNodeWatchGetsItsPodsEvents(t *testing.T) {
	onBackends(t, func(t *testing.T, r *testRegistry) {
		nodeA, nodeB, all := r.watchPods("spec.nodeName=node-a"), r.watchPods("spec.nodeName=node-b"), r.watchPods("")
		r.mustCreate("pods", "default", podDoc("p1", "node-a"))
		r.mustCreate("pods", "default", podDoc("p2", ""))
		r.changePod("p2", func(pod *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(pod.Object, "node-b", "spec", "nodeName")
		})
		r.changePod("p1", func(pod *unstructured.Unstructured) { pod.SetLabels(map[string]string{"changed": "yes"}) })
		// kube's validation keeps a pod on its node; a move without it is how a pod leaves a
		// node's selection and stays.
		r.changePod("p1", func(pod *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(pod.Object, "node-b", "spec", "nodeName")
		})
		noGrace := int64(0)
		r.mustDelete(r.ref("pods", "default", "p2"), &metav1.DeleteOptions{GracePeriodSeconds: &noGrace})
		r.mustDelete(r.ref("pods", "default", "p1"), &metav1.DeleteOptions{GracePeriodSeconds: &noGrace})
		r.mustCreate("pods", "default", podDoc("last", "node-a"))
		r.mustCreate("pods", "default", podDoc("last-b", "node-b"))

		wantEvents(t, "node-a", nodeA, "ADDED p1 node-a", "MODIFIED p1 node-a", "DELETED p1 node-a", "ADDED last node-a")
		// A delete without grace marks the pod deleted (MODIFIED), then deletes it, as kube does.
		wantEvents(t, "node-b", nodeB, "ADDED p2 node-b", "ADDED p1 node-b", "MODIFIED p2 node-b", "DELETED p2 node-b",
			"MODIFIED p1 node-b", "DELETED p1 node-b", "ADDED last-b node-b")
		wantEvents(t, "all pods", all, "ADDED p1 node-a", "ADDED p2 ", "MODIFIED p2 node-b", "MODIFIED p1 node-a",
			"MODIFIED p1 node-b", "MODIFIED p2 node-b", "DELETED p2 node-b", "MODIFIED p1 node-b", "DELETED p1 node-b",
			"ADDED last node-a", "ADDED last-b node-b")
	})
}

// podDoc is a pod bound to node ("" for none).
func podDoc(name, node string) string {
	return `{"metadata":{"name":"` + name + `"},"spec":{"nodeName":"` + node + `","containers":[{"name":"c","image":"i"}]}}`
}

// watchPods starts a watch of all pods through fieldSelector, which has its starting point when
// it returns.
func (r *testRegistry) watchPods(fieldSelector string) *registry.Watch {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 10*time.Second)
	r.t.Cleanup(cancel)
	w, err := r.reg.Watch(ctx, r.ref("pods", "", ""), &internalversion.ListOptions{Watch: true, FieldSelector: fields.ParseSelectorOrDie(fieldSelector)})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(w.Stop)
	if _, ok := w.Next(nil); ok || !w.Started() {
		r.t.Fatal("the watch did not start")
	}
	return w
}

// changePod changes the pod name as a pod's binding does: without its type's rules.
func (r *testRegistry) changePod(name string, change func(pod *unstructured.Unstructured)) {
	r.t.Helper()
	_, err := r.reg.GuaranteedUpdate(r.t.Context(), r.ref("pods", "default", name), false, func(pod *unstructured.Unstructured) error {
		change(pod)
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// wantEvents takes len(want) events of w, each "TYPE name nodeName", and fails unless they are
// want.
func wantEvents(t *testing.T, what string, w *registry.Watch, want ...string) {
	t.Helper()
	var got []string
	for len(got) < len(want) && !w.Done() {
		if ev, ok := w.Next(nil); ok {
			pod, err := parseObject(registry.Ref{}, string(ev.Object))
			if err != nil {
				t.Fatal(err)
			}
			node, _, _ := unstructured.NestedString(pod.Object, "spec", "nodeName")
			got = append(got, string(ev.Type)+" "+pod.GetName()+" "+node)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s's watch got\n  %q\nwant\n  %q", what, got, want)
	}
}
