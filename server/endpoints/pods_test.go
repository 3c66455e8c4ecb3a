package endpoints_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/endpoints"
)

const podsPath = "/api/v1/namespaces/default/pods"

func podJSON(name, labels string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","labels":{` + labels + `}},
		"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
}

func createPod(t *testing.T, api *testAPI, name, labels string) map[string]any {
	t.Helper()
	return api.do("POST", podsPath, podJSON(name, labels)).expect(t, http.StatusCreated).object(t)
}

// createDefaultServiceAccount creates what kube's ServiceAccount controller would (the test
// servers run without it): kube's ServiceAccount admission refuses pods without it.
func createDefaultServiceAccount(t *testing.T, api *testAPI) {
	t.Helper()
	api.do("POST", "/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"default"}}`).expect(t, http.StatusCreated)
}

// podNames lists the names of the default namespace's pods that query selects.
func podNames(t *testing.T, api *testAPI, query string) string {
	t.Helper()
	var names []string
	for _, item := range api.do("GET", podsPath+"?"+query, "").expect(t, http.StatusOK).object(t)["items"].([]any) {
		names = append(names, str(item.(map[string]any), "metadata", "name"))
	}
	return strings.Join(names, ",")
}

// TestPodsWithKubesRules: a pod gets kube's defaults and status, what kube's default
// admission plugins add (its ServiceAccount's token volume, tolerations), kube's field
// selectors, and
// its binding sets spec.nodeName once; log and exec answer as kube-apiserver does without a
// kubelet; a scheduled pod's delete waits its grace period (until a delete with
// gracePeriodSeconds=0), an unscheduled one's does not.
func TestPodsWithKubesRules(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do("POST", podsPath, podJSON("web", "")).expectStatus(t, metav1.Status{
			Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: `pods "web" is forbidden: error looking up service account default/default: serviceaccount "default" not found`,
			Details: &metav1.StatusDetails{Name: "web", Kind: "pods"}})
		createDefaultServiceAccount(t, api)
		pod := createPod(t, api, "web", `"app":"web"`)
		for path, want := range map[string]any{
			"spec.restartPolicy": "Always", "spec.dnsPolicy": "ClusterFirst", "spec.terminationGracePeriodSeconds": float64(30),
			"spec.schedulerName": "default-scheduler", "status.phase": "Pending", "status.qosClass": "BestEffort",
		} {
			if got := nested(pod, strings.Split(path, ".")...); got != want {
				t.Errorf("%s: %v, want %v", path, got, want)
			}
		}
		// kube's default admission plugins: ServiceAccount and DefaultTolerationSeconds.
		volumes, _ := nested(pod, "spec", "volumes").([]any)
		mounts, _ := nested(pod, "spec", "containers").([]any)[0].(map[string]any)["volumeMounts"].([]any)
		tolerations, _ := nested(pod, "spec", "tolerations").([]any)
		if str(pod, "spec", "serviceAccountName") != "default" || len(volumes) != 1 || len(mounts) != 1 || len(tolerations) != 2 ||
			!strings.HasPrefix(str(volumes[0].(map[string]any), "name"), "kube-api-access-") ||
			str(mounts[0].(map[string]any), "mountPath") != "/var/run/secrets/kubernetes.io/serviceaccount" ||
			str(tolerations[0].(map[string]any), "key") != "node.kubernetes.io/not-ready" || nested(tolerations[1].(map[string]any), "tolerationSeconds") != float64(300) {
			t.Errorf("admitted pod's spec: %v", pod["spec"])
		}
		createPod(t, api, "other", `"app":"other"`)

		api.do("GET", podsPath+"/web/log", "").expect(t, http.StatusNoContent)
		api.do("GET", podsPath+"/web/log?container=nope", "").expectStatus(t, metav1.Status{
			Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: "container nope is not valid for pod web"})
		api.do("POST", podsPath+"/web/exec?command=ls&stdout=true", "").expectStatus(t, metav1.Status{
			Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: "pod web does not have a host assigned"})
		api.do("GET", podsPath+"/web/proxy/index.html", "").expectStatus(t, metav1.Status{
			Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: "address not allowed"})

		binding := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web","annotations":{"a":"b"}},"target":{"name":"node-1"}}`
		created := api.do("POST", podsPath+"/web/binding", binding).expect(t, http.StatusCreated).object(t)
		if created["status"] != "Success" {
			t.Fatalf("binding answered %v", created)
		}
		api.do("POST", podsPath+"/web/binding", binding).expectStatus(t, metav1.Status{
			Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
			Message: `Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "node-1"`,
			Details: &metav1.StatusDetails{Name: "web", Kind: "pods/binding"}})
		api.do("POST", podsPath+"/web/binding", `{"target":"node-1"}`).expectStatus(t, metav1.Status{
			Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: `Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal string into Go struct field Binding.target of type v1.ObjectReference`})
		api.do("POST", podsPath+"/other/binding", binding).expectStatus(t, metav1.Status{
			Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: "name in URL does not match name in Binding object"})
		bound := api.do("GET", podsPath+"/web", "").expect(t, http.StatusOK).object(t)
		conditions, _ := nested(bound, "status", "conditions").([]any)
		if str(bound, "spec", "nodeName") != "node-1" || str(bound, "metadata", "annotations", "a") != "b" || len(conditions) != 1 ||
			conditions[0].(map[string]any)["type"] != "PodScheduled" || conditions[0].(map[string]any)["status"] != "True" {
			t.Fatalf("bound pod %v", bound)
		}
		// ephemeralcontainers takes only spec.ephemeralContainers from the pod it is given.
		debugged := api.do("PATCH", podsPath+"/web/ephemeralcontainers", `{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox"}],
			"containers":[{"name":"c","image":"changed"}]}}`, "Content-Type: application/strategic-merge-patch+json").expect(t, http.StatusOK).object(t)
		ephemeral, _ := nested(debugged, "spec", "ephemeralContainers").([]any)
		if len(ephemeral) != 1 || str(ephemeral[0].(map[string]any), "terminationMessagePolicy") != "File" ||
			str(nested(debugged, "spec", "containers").([]any)[0].(map[string]any), "image") != "nginx" {
			t.Fatalf("pod after /ephemeralcontainers: %v", debugged["spec"])
		}
		api.do("POST", podsPath+"/web/exec?command=ls&stdout=true", "").expectStatus(t, metav1.Status{
			Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: `pods "node-1" not found`,
			Details: &metav1.StatusDetails{Name: "node-1", Kind: "pods"}})

		for query, want := range map[string]string{
			"fieldSelector=spec.nodeName=node-1": "web", "fieldSelector=spec.host=node-1": "web",
			"fieldSelector=spec.nodeName=": "other", "fieldSelector=spec.hostNetwork=false": "other,web",
			"fieldSelector=status.phase=Pending,spec.restartPolicy=Always": "other,web", "fieldSelector=status.podIPs=": "other,web",
		} {
			if got := podNames(t, api, query); got != want {
				t.Errorf("%s: %q, want %q", query, got, want)
			}
		}
		api.do("GET", podsPath+"?fieldSelector=spec.containers=c", "").expectStatus(t, metav1.Status{
			Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: "field label not supported: spec.containers"})

		deleting := api.do("DELETE", podsPath+"/web", "").expect(t, http.StatusOK).object(t)
		if nested(deleting, "metadata", "deletionGracePeriodSeconds") != float64(30) || str(deleting, "metadata", "deletionTimestamp") == "" {
			t.Fatalf("a scheduled pod's delete: %v", deleting)
		}
		api.do("GET", podsPath+"/web", "").expect(t, http.StatusOK)
		api.do("DELETE", podsPath+"/web", `{"gracePeriodSeconds":0}`).expect(t, http.StatusOK)
		api.do("GET", podsPath+"/web", "").expect(t, http.StatusNotFound)
		// kube's pod storage answers a delete with the deleted pod (ReturnDeletedObject).
		if deleted := api.do("DELETE", podsPath+"/other", "").expect(t, http.StatusOK).object(t); deleted["kind"] != "Pod" ||
			nested(deleted, "metadata", "deletionGracePeriodSeconds") != float64(0) {
			t.Fatalf("an unscheduled pod's delete: %v", deleted)
		}
		api.do("GET", podsPath+"/other", "").expect(t, http.StatusNotFound)
	})
}

// TestPodEviction: an eviction honours the pod's PodDisruptionBudget as stored: none allowed
// is 429 with kube's cause for a ready pod; one allowed is taken (the budget records the pod)
// and the pod is deleted; a pending pod is evicted without a budget check.
func TestPodEviction(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		const pdbsPath = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
		createDefaultServiceAccount(t, api)
		createPod(t, api, "a", `"app":"x"`)
		api.do("PATCH", podsPath+"/a/status", `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
		api.do("POST", pdbsPath, `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"budget"},
			"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"x"}}}}`).expect(t, http.StatusCreated)
		setBudget := func(allowed int) {
			api.do("PATCH", pdbsPath+"/budget/status", `{"status":{"observedGeneration":1,"disruptionsAllowed":`+string(rune('0'+allowed))+
				`,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
		}
		setBudget(0)
		eviction := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"a"}}`
		api.do("POST", podsPath+"/a/eviction", eviction).expectStatus(t, metav1.Status{
			Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
			Message: "Cannot evict pod as it would violate the pod's disruption budget.",
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "DisruptionBudget", Message: "The disruption budget budget needs 1 healthy pods and has 1 currently"}}}})
		setBudget(1)
		if evicted := api.do("POST", podsPath+"/a/eviction", eviction).expect(t, http.StatusCreated).object(t); evicted["status"] != "Success" {
			t.Fatalf("eviction answered %v", evicted)
		}
		api.do("GET", podsPath+"/a", "").expect(t, http.StatusNotFound)
		budget := api.do("GET", pdbsPath+"/budget", "").expect(t, http.StatusOK).object(t)
		if nested(budget, "status", "disruptionsAllowed") != float64(0) || nested(budget, "status", "disruptedPods", "a") == nil {
			t.Fatalf("budget after the eviction: %v", budget["status"])
		}
		// As kube's eviction (its loopback client's UpdateStatus), kube-apiserver manages what it wrote.
		entries := nested(budget, "metadata", "managedFields").([]any)
		last := entries[len(entries)-1].(map[string]any)
		if last["manager"] != "kube-apiserver" || last["operation"] != "Update" || last["subresource"] != "status" ||
			nested(last, "fieldsV1", "f:status", "f:disruptedPods", "f:a") == nil || nested(last, "fieldsV1", "f:status", "f:disruptionsAllowed") == nil {
			t.Errorf("the eviction's managedFields entry: %v", last)
		}

		createPod(t, api, "pending", `"app":"x"`)
		api.do("POST", podsPath+"/pending/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"pending"}}`).expect(t, http.StatusCreated)
		api.do("GET", podsPath+"/pending", "").expect(t, http.StatusNotFound)
	})
}

// TestPodSubresourceBodiesOfAnotherNamespaceOrKind: a binding or an eviction whose body names
// another namespace, or is of another kind (JSON or protobuf), is kube's 400, and the pod is
// left as it was: neither bound nor deleted.
func TestPodSubresourceBodiesOfAnotherNamespaceOrKind(t *testing.T) {
	api := sqliteAPI(t)
	createDefaultServiceAccount(t, api)
	createPod(t, api, "web", `"app":"web"`)
	badRequest := func(message string) metav1.Status {
		return metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: message}
	}
	const otherNamespace = "the namespace of the provided object does not match the namespace sent on the request"
	for _, c := range []struct {
		path, body string
		want       metav1.Status
	}{
		{podsPath + "/web/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web","namespace":"other"},"target":{"name":"node-1"}}`,
			badRequest(otherNamespace)},
		{"/api/v1/namespaces/default/bindings", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web","namespace":"other"},"target":{"name":"node-1"}}`,
			badRequest(otherNamespace)},
		{podsPath + "/web/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web","namespace":"other"}}`,
			badRequest(otherNamespace)},
		{podsPath + "/web/binding", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"target":{"name":"node-1"}}`,
			badRequest(`Pod in version "v1" cannot be handled as a Binding: converting (v1.Pod) to (core.Binding): unknown conversion`)},
		{podsPath + "/web/binding", `{"apiVersion":"policy/v1","kind":"Binding","metadata":{"name":"web"},"target":{"name":"node-1"}}`,
			badRequest(`Binding in version "v1" cannot be handled as a Binding: no kind "Binding" is registered for version "policy/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"`)},
		{podsPath + "/web/eviction", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"}}`,
			badRequest(`Binding in version "v1" cannot be handled as a Eviction: converting (v1.Binding) to (policy.Eviction): unknown conversion`)},
	} {
		api.do("POST", c.path, c.body).expectStatus(t, c.want)
	}
	var pod bytes.Buffer
	if err := endpoints.ProtobufDecoder.Encode(&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "web"}}, &pod); err != nil {
		t.Fatal(err)
	}
	api.do("POST", podsPath+"/web/binding", pod.String(), "Content-Type: "+endpoints.MediaTypeProtobuf).expectStatus(t,
		badRequest(`Pod in version "v1" cannot be handled as a Binding: converting (v1.Pod) to (core.Binding): unknown conversion`))
	// A v1beta1 Eviction is one kube reads.
	if stored := api.do("GET", podsPath+"/web", "").expect(t, http.StatusOK).object(t); str(stored, "spec", "nodeName") != "" || nested(stored, "metadata", "deletionTimestamp") != nil {
		t.Fatalf("pod after refused subresource writes: %v", stored)
	}
	api.do("POST", podsPath+"/web/eviction", `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"web","namespace":"default"}}`).expect(t, http.StatusCreated)
}

// TestPodStreamsNeedAnUpgrade: exec, attach and portforward of a pod whose node is stored find
// its kubelet as kube does, then refuse a request that is not a protocol upgrade with kube's
// 400, before answering one that is with the 503 of a kubelet that does not answer; a node
// without an address is kube's 500.
func TestPodStreamsNeedAnUpgrade(t *testing.T) {
	api := sqliteAPI(t)
	createDefaultServiceAccount(t, api)
	createPod(t, api, "web", `"app":"web"`)
	api.do("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1"}}`).expect(t, http.StatusCreated)
	api.do("POST", podsPath+"/web/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"name":"node-1"}}`).expect(t, http.StatusCreated)
	streams := []string{"/web/exec?command=ls&stdout=true", "/web/attach?stdout=true", "/web/portforward?ports=80"}
	for _, stream := range streams {
		api.do("POST", podsPath+stream, "").expectStatus(t, metav1.Status{Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown,
			Message: "no preferred addresses found; known addresses: []"})
	}
	api.do("PATCH", "/api/v1/nodes/node-1/status", `{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.7"}]}}`,
		"Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
	for _, stream := range streams {
		api.do("POST", podsPath+stream, "").expectStatus(t, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
			Message: "Upgrade request required"})
		api.do("POST", podsPath+stream, "", "Connection: Upgrade", "Upgrade: SPDY/3.1").expectStatus(t, metav1.Status{
			Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
			Message: "no kubelet answers at 10.0.0.7:10250: sqlkube runs no kubelets (it stores pods and runs none)"})
	}
}

// TestReplicationControllerScale: a ReplicationController's /scale shows its map selector.
func TestReplicationControllerScale(t *testing.T) {
	api := sqliteAPI(t)
	const rcsPath = "/api/v1/namespaces/default/replicationcontrollers"
	api.do("POST", rcsPath, `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc"},
		"spec":{"selector":{"app":"x","tier":"web"},"template":{"metadata":{"labels":{"app":"x","tier":"web"}},
		"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`).expect(t, http.StatusCreated)
	scale := decodeScaleResponse(t, api.do("PATCH", rcsPath+"/rc/scale", `{"spec":{"replicas":3}}`,
		"Content-Type: application/merge-patch+json").expect(t, http.StatusOK))
	if scale.Spec.Replicas != 3 || scale.Status.Selector != "app=x,tier=web" {
		t.Fatalf("scale %+v", scale)
	}
	rcs := api.do("GET", rcsPath+"?fieldSelector=status.replicas=0", "").expect(t, http.StatusOK).object(t)
	if items := rcs["items"].([]any); len(items) != 1 {
		t.Fatalf("rcs with status.replicas=0: %v", items)
	}
}
