package pods

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/registry"
)

// testPods are the Subresources on a real store, catalog and registry, as the server builds
// them (pods.New on its catalog and registry), with the objects of the default namespace.
type testPods struct {
	*controllertest.Env
	s *Subresources
	t *testing.T
}

func newTestPods(t *testing.T, env *controllertest.Env) testPods {
	t.Helper()
	s, err := New(env.Catalog, env.Registry)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return testPods{Env: env, s: s, t: t}
}

// backends runs fn on a testPods on SQLite and on PostgreSQL.
func backends(t *testing.T, fn func(t *testing.T, p testPods)) {
	controllertest.Backends(t, func(t *testing.T, env *controllertest.Env) { fn(t, newTestPods(t, env)) })
}

// create creates obj (a typed object of resourceName in group/v1) in the default namespace
// (none for a cluster-scoped type) through the registry.
func (p testPods) create(group, resourceName string, obj runtime.Object) {
	p.t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		p.t.Fatal(err)
	}
	ref := p.Ref(group, resourceName, "default", "")
	if !ref.Resource.Namespaced {
		ref.Namespace = ""
	}
	p.Create(ref, &unstructured.Unstructured{Object: content})
}

// createPod creates a pod of one container named name, with labels, changed by change first;
// the pod strategy makes it Pending, on no node.
func (p testPods) createPod(name string, labels map[string]string, change func(*corev1.Pod)) {
	p.t.Helper()
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	if change != nil {
		change(pod)
	}
	p.create("", "pods", pod)
}

// pod reads the stored pod name; nil if there is none.
func (p testPods) pod(name string) *corev1.Pod {
	p.t.Helper()
	pod, err := p.s.getPod(p.t.Context(), "default", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return pod
}

// update changes the stored object of ref as a V, without its type's strategy (as a kubelet or a
// controller writing status would).
func update[V any](p testPods, ref registry.Ref, change func(*V)) {
	p.t.Helper()
	_, err := p.Registry.GuaranteedUpdate(p.t.Context(), ref, false, func(obj *unstructured.Unstructured) error {
		return builtin.ChangeAs(obj, func(v *V) error { change(v); return nil })
	})
	if err != nil {
		p.t.Fatalf("updating %s %s: %v", ref.Resource.Name, ref.Name, err)
	}
}

func (p testPods) updatePod(name string, change func(*corev1.Pod)) {
	p.t.Helper()
	update(p, p.Ref("", "pods", "default", name), change)
}

// wantStatus fails unless err is the API Status want (a Failure).
func wantStatus(t *testing.T, what string, err error, want metav1.Status) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("%s: %v (%T), want the Status %q", what, err, err, want.Message)
	}
	want.Status = metav1.StatusFailure
	if diff := cmp.Diff(want, status.Status()); diff != "" {
		t.Fatalf("%s: Status (-want +got):\n%s", what, diff)
	}
}

// wantError fails unless err is a plain error (not a Status: the server answers it 500) saying
// message.
func wantError(t *testing.T, what string, err error, message string) {
	t.Helper()
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) || err.Error() != message {
		t.Fatalf("%s: %v (%T), want the error %q", what, err, err, message)
	}
}

func badRequest(message string) metav1.Status {
	return metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: message}
}

func notFound(kind, name string) metav1.Status {
	return metav1.Status{Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: kind + ` "` + name + `" not found`,
		Details: &metav1.StatusDetails{Name: name, Kind: kind}}
}

// created is the Status of a binding or an eviction that succeeded.
var created = &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated}

func binding(name, node string) *corev1.Binding {
	return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"a": "b"}},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
}

// Log and exec of a pod on no node, and proxy to a pod without an IP, answer as
// kube-apiserver does before it would look for a kubelet.
func TestStreamsOfAnUnscheduledPod(t *testing.T) {
	backends(t, func(t *testing.T, p testPods) {
		ctx := t.Context()
		p.createPod("web", nil, nil)

		if err := p.s.Log(ctx, "default", "web", nil); err != nil {
			t.Fatalf("log of a pod on no node: %v, want no error and no content", err)
		}
		wantStatus(t, "log of another container", p.s.Log(ctx, "default", "web", url.Values{"container": {"nope"}}),
			badRequest("container nope is not valid for pod web"))
		wantStatus(t, "log of a missing pod", p.s.Log(ctx, "default", "nope", nil), notFound("pods", "nope"))
		for _, sub := range []string{"exec", "attach", "portforward"} {
			query := url.Values{"command": {"ls"}, "stdout": {"true"}, "ports": {"80"}}
			wantStatus(t, sub, p.s.Connect(ctx, "default", "web", sub, query, true), badRequest("pod web does not have a host assigned"))
			wantStatus(t, sub+" of a missing pod", p.s.Connect(ctx, "default", "nope", sub, query, true), notFound("pods", "nope"))
		}
		wantStatus(t, "exec of another container", p.s.Connect(ctx, "default", "web", "exec", url.Values{"command": {"ls"}, "stdout": {"true"}, "container": {"nope"}}, true),
			badRequest("container nope is not valid for pod web"))
		wantStatus(t, "proxy to a pod without an IP", p.s.Connect(ctx, "default", "web", "proxy", nil, false), badRequest("address not allowed"))
	})
}

// A pod bound to a node: its kubelet is looked up as kube does (the node must be stored and
// have an address); a stream that is not an upgrade is kube's 400, one that is (and a log) the
// 503 of a kubelet that does not answer. A pod with an IP has no network to proxy to: 503.
func TestStreamsOfABoundPod(t *testing.T) {
	backends(t, func(t *testing.T, p testPods) {
		ctx := t.Context()
		p.createPod("web", nil, nil)
		if _, err := p.s.Bind(ctx, "default", "web", binding("web", "node-1"), false); err != nil {
			t.Fatal(err)
		}
		streams := map[string]url.Values{
			"exec": {"command": {"ls"}, "stdout": {"true"}}, "attach": {"stdout": {"true"}}, "portforward": {"ports": {"80"}},
		}
		wantStatus(t, "log on a node not stored", p.s.Log(ctx, "default", "web", nil), notFound("pods", "node-1"))
		for sub, query := range streams {
			wantStatus(t, sub+" on a node not stored", p.s.Connect(ctx, "default", "web", sub, query, true), notFound("pods", "node-1"))
		}

		p.create("", "nodes", &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
		for sub, query := range streams {
			wantStatus(t, sub+" on a node without an address", p.s.Connect(ctx, "default", "web", sub, query, true),
				metav1.Status{Code: http.StatusInternalServerError, Message: "no preferred addresses found; known addresses: []"})
		}
		update(p, p.Ref("", "nodes", "", "node-1"), func(node *corev1.Node) {
			node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}}
		})
		noKubelet := metav1.Status{Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
			Message: "no kubelet answers at 10.0.0.7:10250: sqlkube runs no kubelets (it stores pods and runs none)"}
		wantStatus(t, "log", p.s.Log(ctx, "default", "web", url.Values{"container": {"c"}}), noKubelet)
		for sub, query := range streams {
			wantStatus(t, sub+" without an upgrade", p.s.Connect(ctx, "default", "web", sub, query, false), badRequest("Upgrade request required"))
			wantStatus(t, sub, p.s.Connect(ctx, "default", "web", sub, query, true), noKubelet)
		}

		p.updatePod("web", func(pod *corev1.Pod) { // as a kubelet writes them
			pod.Status.PodIP, pod.Status.PodIPs = "10.1.0.5", []corev1.PodIP{{IP: "10.1.0.5"}}
		})
		for _, id := range []string{"web", "web:8080", "https:web:8443"} {
			wantStatus(t, "proxy to "+id, p.s.Connect(ctx, "default", id, "proxy", nil, false), metav1.Status{
				Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
				Message: `nothing answers for pod "` + id + `": sqlkube has no cluster network (it stores pods and runs none)`})
		}
	})
}

// The options of log and the streams are decoded and validated as kube-apiserver does: a value
// of the wrong type is 400, an invalid log option 422 naming each field.
func TestStreamOptions(t *testing.T) {
	backends(t, func(t *testing.T, p testPods) {
		ctx := t.Context()
		p.createPod("web", nil, nil)
		wantStatus(t, "log with tailLines=x", p.s.Log(ctx, "default", "web", url.Values{"tailLines": {"x"}}),
			badRequest(`strconv.ParseInt: parsing "x": invalid syntax`))
		wantStatus(t, "portforward to a named port", p.s.Connect(ctx, "default", "web", "portforward", url.Values{"ports": {"http"}}, true),
			badRequest(`cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax`))
		invalid := func(message string, causes ...metav1.StatusCause) metav1.Status {
			return metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Message: message,
				Details: &metav1.StatusDetails{Name: "web", Kind: "PodLogOptions", Causes: causes}}
		}
		wantStatus(t, "log with negative tailLines", p.s.Log(ctx, "default", "web", url.Values{"tailLines": {"-1"}}),
			invalid(`PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`,
				metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "tailLines", Message: "Invalid value: -1: must be greater than or equal to 0"}))
		wantStatus(t, "log with no bytes since no time", p.s.Log(ctx, "default", "web", url.Values{"limitBytes": {"0"}, "sinceSeconds": {"0"}}),
			invalid(`PodLogOptions "web" is invalid: [limitBytes: Invalid value: 0: must be greater than 0, sinceSeconds: Invalid value: 0: must be greater than 0]`,
				metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "limitBytes", Message: "Invalid value: 0: must be greater than 0"},
				metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "sinceSeconds", Message: "Invalid value: 0: must be greater than 0"}))
	})
}

// A binding sets spec.nodeName, the Binding's annotations and the PodScheduled condition, once;
// what kube refuses is refused with kube's answer, and the pod is left as it was.
func TestBind(t *testing.T) {
	backends(t, func(t *testing.T, p testPods) {
		ctx := t.Context()
		p.createPod("web", map[string]string{"app": "web"}, nil)
		p.createPod("gated", nil, func(pod *corev1.Pod) { pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}} })

		stored := p.pod("web")
		if status, err := p.s.Bind(ctx, "default", "web", binding("web", "node-1"), true); err != nil || !cmp.Equal(status, created) {
			t.Fatalf("dry-run Bind = %+v, %v", status, err)
		}
		if pod := p.pod("web"); pod.ResourceVersion != stored.ResourceVersion || pod.Spec.NodeName != "" {
			t.Fatalf("pod after a dry-run binding: nodeName %q, resourceVersion %s (was %s)", pod.Spec.NodeName, pod.ResourceVersion, stored.ResourceVersion)
		}
		// kube's storage precondition failure, quoted in a 409 on pods.
		preconditionFailed := func(message string) metav1.Status {
			return metav1.Status{Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
				Message: `Operation cannot be fulfilled on pods "web": StorageError: invalid object, Code: 4, Key: /registry/pods/default/web, ` +
					`ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ` + message,
				Details: &metav1.StatusDetails{Name: "web", Kind: "pods"}}
		}
		other := binding("web", "node-1")
		other.UID = "other"
		_, err := p.s.Bind(ctx, "default", "web", other, false)
		wantStatus(t, "binding with another uid", err, preconditionFailed("UID in precondition: other, UID in object meta: "+string(stored.UID)))
		stale := binding("web", "node-1")
		stale.ResourceVersion = "1"
		_, err = p.s.Bind(ctx, "default", "web", stale, false)
		wantStatus(t, "binding of another resourceVersion", err,
			preconditionFailed("ResourceVersion in precondition: 1, ResourceVersion in object meta: "+stored.ResourceVersion))

		status, err := p.s.Bind(ctx, "default", "web", binding("web", "node-1"), false)
		if err != nil || !cmp.Equal(status, created) {
			t.Fatalf("Bind = %+v, %v", status, err)
		}
		pod := p.pod("web")
		if pod.Spec.NodeName != "node-1" || pod.Annotations["a"] != "b" || len(pod.Status.Conditions) != 1 ||
			pod.Status.Conditions[0].Type != corev1.PodScheduled || pod.Status.Conditions[0].Status != corev1.ConditionTrue {
			t.Fatalf("bound pod: nodeName %q, annotations %v, conditions %+v", pod.Spec.NodeName, pod.Annotations, pod.Status.Conditions)
		}

		conflict := func(name, message string) metav1.Status {
			return metav1.Status{Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
				Message: `Operation cannot be fulfilled on pods/binding "` + name + `": ` + message,
				Details: &metav1.StatusDetails{Name: name, Kind: "pods/binding"}}
		}
		_, err = p.s.Bind(ctx, "default", "web", binding("web", "node-2"), false)
		wantStatus(t, "a second binding", err, conflict("web", `pod web is already assigned to node "node-1"`))
		_, err = p.s.Bind(ctx, "default", "gated", binding("gated", "node-1"), false)
		wantStatus(t, "binding a gated pod", err, conflict("gated", "pod gated has non-empty .spec.schedulingGates"))
		_, err = p.s.Bind(ctx, "default", "web", binding("other", "node-1"), false)
		wantStatus(t, "a binding named otherwise", err, badRequest("name in URL does not match name in Binding object"))
		elsewhere := binding("web", "node-1")
		elsewhere.Namespace = "other"
		_, err = p.s.Bind(ctx, "default", "web", elsewhere, false)
		wantStatus(t, "a binding of another namespace", err, badRequest("the namespace of the provided object does not match the namespace sent on the request"))
		_, err = p.s.Bind(ctx, "default", "gated", binding("gated", ""), false)
		wantError(t, "a binding without a target", err, "target.name: Required value")
		_, err = p.s.Bind(ctx, "default", "nope", binding("nope", "node-1"), false)
		wantStatus(t, "binding a missing pod", err, notFound("pods", "nope"))
		if pod := p.pod("web"); pod.Spec.NodeName != "node-1" {
			t.Fatalf("refused bindings changed the pod: nodeName %q", pod.Spec.NodeName)
		}
		if pod := p.pod("gated"); pod.Spec.NodeName != "" {
			t.Fatalf("refused bindings changed the gated pod: nodeName %q", pod.Spec.NodeName)
		}
	})
}

// budget creates the PodDisruptionBudget name selecting app=x, with its status as a disruption
// controller would write it: disruptionsAllowed allowed, one pod healthy of one desired.
func (p testPods) budget(name string, allowed int32, change func(*policyv1.PodDisruptionBudget)) {
	p.t.Helper()
	minAvailable := intstr.FromInt32(1)
	p.create("policy", "poddisruptionbudgets", &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}},
	})
	update(p, p.Ref("policy", "poddisruptionbudgets", "default", name), func(pdb *policyv1.PodDisruptionBudget) {
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
			CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
		if change != nil {
			change(pdb)
		}
	})
}

func (p testPods) getBudget(name string) *policyv1.PodDisruptionBudget {
	p.t.Helper()
	ref := p.Ref("policy", "poddisruptionbudgets", "default", name)
	obj, err := p.s.getObject(p.t.Context(), ref)
	if err != nil {
		p.t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pdb); err != nil {
		p.t.Fatal(err)
	}
	return pdb
}

// createRunning creates a pod labelled app=x that runs and is ready (unless not ready).
func (p testPods) createRunning(name string, ready bool) {
	p.t.Helper()
	p.createPod(name, map[string]string{"app": "x"}, nil)
	p.updatePod(name, func(pod *corev1.Pod) {
		pod.Status.Phase = corev1.PodRunning
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	})
}

func eviction(name string) *policyv1.Eviction {
	return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// wantTooManyRequests is kube's 429 for an eviction its budget forbids, with the budget's reason.
func wantTooManyRequests(cause string, retryAfter int32) metav1.Status {
	return metav1.Status{Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
		Message: "Cannot evict pod as it would violate the pod's disruption budget.",
		Details: &metav1.StatusDetails{RetryAfterSeconds: retryAfter, Causes: []metav1.StatusCause{{Type: policyv1.DisruptionBudgetCause, Message: cause}}}}
}

// An eviction takes a disruption its pod's budget allows, recording the pod in it, and deletes
// the pod; one the budget does not allow is kube's 429, and changes nothing; a dry run checks
// the budget and changes nothing.
func TestEvictHonoursTheBudget(t *testing.T) {
	backends(t, func(t *testing.T, p testPods) {
		ctx := t.Context()
		p.createRunning("a", true)
		p.budget("budget", 0, nil)
		_, err := p.s.Evict(ctx, "default", "a", eviction("a"), nil)
		wantStatus(t, "eviction no disruption allows", err, wantTooManyRequests("The disruption budget budget needs 1 healthy pods and has 1 currently", 0))
		_, err = p.s.Evict(ctx, "default", "a", eviction("a"), []string{metav1.DryRunAll})
		wantStatus(t, "dry-run eviction no disruption allows", err, wantTooManyRequests("The disruption budget budget needs 1 healthy pods and has 1 currently", 0))

		update(p, p.Ref("policy", "poddisruptionbudgets", "default", "budget"), func(pdb *policyv1.PodDisruptionBudget) { pdb.Status.DisruptionsAllowed = 1 })
		before := p.getBudget("budget")
		status, err := p.s.Evict(ctx, "default", "a", eviction("a"), []string{metav1.DryRunAll})
		if err != nil || !cmp.Equal(status, created) {
			t.Fatalf("dry-run Evict = %+v, %v", status, err)
		}
		if pod := p.pod("a"); pod == nil || len(pod.Status.Conditions) != 1 || pod.DeletionTimestamp != nil {
			t.Fatalf("pod after a dry-run eviction: %+v", pod)
		}
		if after := p.getBudget("budget"); after.ResourceVersion != before.ResourceVersion {
			t.Fatalf("budget after a dry-run eviction: %+v", after.Status)
		}

		status, err = p.s.Evict(ctx, "default", "a", eviction("a"), nil)
		if err != nil || !cmp.Equal(status, created) {
			t.Fatalf("Evict = %+v, %v", status, err)
		}
		if pod := p.pod("a"); pod != nil {
			t.Fatalf("evicted pod still stored: %+v", pod)
		}
		after := p.getBudget("budget")
		_, recorded := after.Status.DisruptedPods["a"]
		allowed := apimeta.FindStatusCondition(after.Status.Conditions, policyv1.DisruptionAllowedCondition)
		if after.Status.DisruptionsAllowed != 0 || len(after.Status.DisruptedPods) != 1 || !recorded ||
			allowed == nil || allowed.Status != metav1.ConditionFalse || allowed.Reason != policyv1.InsufficientPodsReason {
			t.Fatalf("budget after the eviction: %+v", after.Status)
		}
	})
}

// A pod with a finalizer is evicted as kube does: it gets the DisruptionTarget condition and
// is being deleted. A pending pod is evicted without its budget, and so is a pod that is not
// ready when the budget's policy lets unhealthy pods go.
func TestEvictWithoutTheBudget(t *testing.T) {
	backends(t, func(t *testing.T, p testPods) {
		ctx := t.Context()
		p.budget("budget", 0, func(pdb *policyv1.PodDisruptionBudget) {
			policy := policyv1.AlwaysAllow
			pdb.Spec.UnhealthyPodEvictionPolicy = &policy
		})
		p.createPod("pending", map[string]string{"app": "x"}, func(pod *corev1.Pod) { pod.Finalizers = []string{"example.com/keep"} })
		if _, err := p.s.Evict(ctx, "default", "pending", eviction("pending"), nil); err != nil {
			t.Fatalf("evicting a pending pod: %v", err)
		}
		pod := p.pod("pending")
		if pod == nil || pod.DeletionTimestamp == nil || len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0].Type != corev1.DisruptionTarget ||
			pod.Status.Conditions[0].Status != corev1.ConditionTrue || pod.Status.Conditions[0].Reason != "EvictionByEvictionAPI" ||
			pod.Status.Conditions[0].Message != "Eviction API: evicting" {
			t.Fatalf("evicted pod with a finalizer: %+v", pod)
		}
		p.createRunning("unready", false)
		if _, err := p.s.Evict(ctx, "default", "unready", eviction("unready"), nil); err != nil {
			t.Fatalf("evicting an unready pod: %v", err)
		}
		if pod := p.pod("unready"); pod != nil {
			t.Fatalf("evicted unready pod still stored: %+v", pod)
		}
		if budget := p.getBudget("budget"); budget.Status.DisruptionsAllowed != 0 || len(budget.Status.DisruptedPods) != 0 {
			t.Fatalf("budget after evictions without it: %+v", budget.Status)
		}
	})
}

// What kube refuses of an eviction is refused with kube's answer, and the pod stays.
func TestEvictRefusals(t *testing.T) {
	backends(t, func(t *testing.T, p testPods) {
		ctx := t.Context()
		p.createRunning("a", true)
		p.budget("stale", 1, func(pdb *policyv1.PodDisruptionBudget) { pdb.Status.ObservedGeneration = 0 })
		_, err := p.s.Evict(ctx, "default", "a", eviction("a"), nil)
		wantStatus(t, "eviction with a budget not yet observed", err, wantTooManyRequests("The disruption budget stale is still being processed by the server.", 10))

		update(p, p.Ref("policy", "poddisruptionbudgets", "default", "stale"), func(pdb *policyv1.PodDisruptionBudget) {
			pdb.Status.ObservedGeneration = pdb.Generation
			pdb.Status.DisruptionsAllowed = -1
		})
		_, err = p.s.Evict(ctx, "default", "a", eviction("a"), nil)
		wantStatus(t, "eviction with negative disruptions allowed", err, metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: `poddisruptionbudget.policy "stale" is forbidden: pdb disruptions allowed is negative`,
			Details: &metav1.StatusDetails{Name: "stale", Group: "policy", Kind: "poddisruptionbudget", Causes: []metav1.StatusCause{{
				Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget stale does not allow evicting pods currently: pdb disruptions allowed is negative"}}}})

		p.budget("second", 1, nil)
		status, err := p.s.Evict(ctx, "default", "a", eviction("a"), nil)
		want := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}
		if err != nil || !cmp.Equal(status, want) {
			t.Fatalf("eviction with two budgets = %+v, %v; want %+v", status, err, want)
		}

		_, err = p.s.Evict(ctx, "default", "a", eviction("b"), nil)
		wantStatus(t, "eviction named otherwise", err, badRequest("name in URL does not match name in Eviction object"))
		elsewhere := eviction("a")
		elsewhere.Namespace = "other"
		_, err = p.s.Evict(ctx, "default", "a", elsewhere, nil)
		wantStatus(t, "eviction of another namespace", err, badRequest("the namespace of the provided object does not match the namespace sent on the request"))
		ignoring := eviction("a")
		ignoring.DeleteOptions = &metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)}
		_, err = p.s.Evict(ctx, "default", "a", ignoring, nil)
		wantStatus(t, "eviction ignoring store read errors", err, metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: `Eviction.policy "a" is invalid: deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: can not be set for pod eviction, try after removing the option`,
			Details: &metav1.StatusDetails{Name: "a", Group: "policy", Kind: "Eviction", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid,
				Field: "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential", Message: "Invalid value: true: can not be set for pod eviction, try after removing the option"}}}})
		dryRun := eviction("a")
		dryRun.DeleteOptions = &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
		_, err = p.s.Evict(ctx, "default", "a", dryRun, []string{"Other"})
		wantError(t, "eviction with two dry runs", err, "Non-matching dry-run options in request and content: [Other] and [All]")
		_, err = p.s.Evict(ctx, "default", "nope", eviction("nope"), nil)
		wantStatus(t, "eviction of a missing pod", err, notFound("pods", "nope"))
		if pod := p.pod("a"); pod == nil || pod.DeletionTimestamp != nil {
			t.Fatalf("pod after refused evictions: %+v", pod)
		}
	})
}
