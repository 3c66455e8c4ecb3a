package kuberef

import (
	"strings"

	"k8s.io/client-go/kubernetes/scheme"
)

// correctnessScenarios are issue 46's answers that differed from kube's: the initial namespaces
// served without their kind, the pod garbage collector's status patch of a terminating pod,
// bindings and evictions of another namespace or kind, what a /status write keeps of the
// request's metadata, streams without an Upgrade header and a node proxied at a loopback
// address, and the spellings of a watch.
func correctnessScenarios() []scenario {
	return []scenario{initialNamespacesScenario(), podGCScenario(), subresourceBodiesScenario(), statusMetadataScenario(),
		streamsAndNodeProxyScenario(), watchSpellingScenario()}
}

// initialNamespacesScenario reads the namespaces kube-apiserver creates at start (kind,
// apiVersion and the managedFields entry of its system namespaces controller's create), watches
// one, and labels it as `kubectl label ns` does.
func initialNamespacesScenario() scenario {
	const namespaces = "/api/v1/namespaces"
	steps := []step{}
	for _, name := range initialNamespaces {
		steps = append(steps, step{method: "GET", path: namespaces + "/" + name})
	}
	return scenario{"initial namespaces", append(steps,
		step{watch: "ns", method: "GET", path: namespaces + "?watch=1&fieldSelector=metadata.name%3Dkube-node-lease", events: 1},
		step{method: "PATCH", path: namespaces + "/kube-node-lease", contentType: mergePatch, body: `{"metadata":{"labels":{"issue":"46"}}}`},
		step{watch: "ns", events: 1},
		step{method: "PATCH", path: namespaces + "/kube-node-lease", contentType: mergePatch, body: `{"metadata":{"labels":{"issue":null}}}`},
	)}
}

// podGCScenario sends what kube-controller-manager's pod garbage collector sends for a
// terminating pod whose node is gone (utilpod.PatchPodStatus's strategic merge patch of
// pods/status: phase Failed and a DisruptionTarget condition, the uid as a precondition), then
// its delete with grace period 0.
func podGCScenario() scenario {
	pods := core + "/pods"
	return scenario{"pod garbage collector's status patch of a terminating pod", []step{
		builderAccount("default"),
		{method: "POST", path: pods, body: pod("gc-orphan", `{"app":"gc"}`, "")},
		{method: "POST", path: pods + "/gc-orphan/binding",
			body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"gc-orphan"},"target":{"apiVersion":"v1","kind":"Node","name":"gone-node"}}`},
		{method: "DELETE", path: pods + "/gc-orphan"},
		{method: "PATCH", path: pods + "/gc-orphan/status", contentType: strategicPatch, body: `{"metadata":{"uid":"{{uid:gc-orphan}}"},"status":{
		  "$setElementOrder/conditions":[{"type":"PodScheduled"},{"type":"DisruptionTarget"}],
		  "conditions":[{"type":"DisruptionTarget","status":"True","reason":"DeletionByPodGC","message":"PodGC: node no longer exists","lastTransitionTime":"2026-11-29T07:00:00Z"}],
		  "phase":"Failed"}}`},
		{method: "GET", path: pods + "/gc-orphan"},
		{method: "DELETE", path: pods + "/gc-orphan", body: `{"gracePeriodSeconds":0}`},
		{method: "GET", path: pods + "/gc-orphan"},
	}}
}

// subresourceBodiesScenario sends bindings and evictions whose body names another namespace or
// is of another kind, in JSON and in protobuf; the pod is read back unchanged. A kind that kube's
// scheme does not have in its version is left out: the reference binary, built in module mode,
// names kube's scheme "pkg/runtime/scheme.go:111" in that error where a release build of
// kube-apiserver, as sqlkube, says "pkg/api/legacyscheme/scheme.go:30" (server's
// TestPodSubresourceBodiesOfAnotherNamespaceOrKind checks it).
func subresourceBodiesScenario() scenario {
	pods := core + "/pods"
	binding := func(extra, kind, apiVersion string) string {
		return `{"apiVersion":"` + apiVersion + `","kind":"` + kind + `","metadata":{"name":"bodies"` + extra + `},"target":{"name":"node-9"}}`
	}
	return scenario{"bindings and evictions of another namespace or kind", []step{
		builderAccount("default"),
		{method: "POST", path: pods, body: pod("bodies", `{"app":"bodies"}`, "")},
		{method: "POST", path: pods + "/bodies/binding", body: binding(`,"namespace":"other"`, "Binding", "v1")},
		{method: "POST", path: core + "/bindings", body: binding(`,"namespace":"other"`, "Binding", "v1")},
		{method: "POST", path: pods + "/bodies/eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"bodies","namespace":"other"}}`},
		{method: "POST", path: pods + "/bodies/binding", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bodies"}}`},
		{method: "POST", path: pods + "/bodies/eviction", body: binding("", "Binding", "v1")},
		{method: "POST", path: pods + "/bodies/eviction", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bodies"}}`},
		{method: "POST", path: pods + "/bodies/binding", contentType: protobufMediaType,
			body: protobufBody(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bodies"}}`)},
		{method: "POST", path: pods + "/bodies/eviction", contentType: protobufMediaType,
			body: protobufBody(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"bodies"},"target":{"name":"node-9"}}`)},
		{method: "GET", path: pods + "/bodies"},
		{method: "POST", path: pods + "/bodies/eviction", body: `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"bodies","namespace":"default"}}`},
		{method: "GET", path: pods + "/bodies"},
	}}
}

// statusMetadataScenario writes labels and annotations through /status of the types whose
// status strategies keep the request's metadata (services, pods, nodes, jobs, PDBs, PVs, CSRs)
// and of one that resets the labels (deployments).
func statusMetadataScenario() scenario {
	const meta = `"metadata":{"labels":{"via":"status"},"annotations":{"note":"via-status"}}`
	batch, policy, apps := "/apis/batch/v1/namespaces/default", "/apis/policy/v1/namespaces/default", "/apis/apps/v1/namespaces/default"
	csrs := "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	write := func(path, status string) step {
		return step{method: "PATCH", path: path + "/status", contentType: mergePatch, body: `{` + meta + `,"status":` + status + `}`}
	}
	return scenario{"labels and annotations through /status", []step{
		builderAccount("default"),
		{method: "POST", path: core + "/services", body: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"meta-svc"},"spec":{"type":"LoadBalancer","ports":[{"port":80}]}}`},
		write(core+"/services/meta-svc", `{"loadBalancer":{"ingress":[{"ip":"192.0.2.46","ipMode":"VIP"}]}}`),
		{method: "POST", path: core + "/pods", body: pod("meta-pod", `{"app":"meta"}`, "")},
		write(core+"/pods/meta-pod", `{"phase":"Running"}`),
		{method: "POST", path: "/api/v1/nodes", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"meta-node"}}`},
		write("/api/v1/nodes/meta-node", `{"capacity":{"pods":"110"}}`),
		{method: "POST", path: batch + "/jobs", body: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"meta-job"},
		  "spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"perl:5.40"}]}}}}`},
		write(batch+"/jobs/meta-job", `{"active":1,"ready":0,"startTime":"2026-01-01T00:00:00Z"}`),
		{method: "POST", path: policy + "/poddisruptionbudgets", body: `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"meta-pdb"},
		  "spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"meta"}}}}`},
		write(policy+"/poddisruptionbudgets/meta-pdb", `{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}`),
		{method: "POST", path: "/api/v1/persistentvolumes", body: `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"meta-pv"},
		  "spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"}}}`},
		write("/api/v1/persistentvolumes/meta-pv", `{"phase":"Available"}`),
		{method: "POST", path: csrs, body: `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"meta-csr"},
		  "spec":{"request":"` + aliceCSR + `","signerName":"example.com/signer","usages":["client auth"]}}`},
		write(csrs+"/meta-csr", `{}`),
		{method: "POST", path: apps + "/deployments", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"meta-deploy","labels":{"app":"meta"}},
		  "spec":{"selector":{"matchLabels":{"app":"meta"}},"template":{"metadata":{"labels":{"app":"meta"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`},
		write(apps+"/deployments/meta-deploy", `{"replicas":1}`),
		{method: "DELETE", path: core + "/services/meta-svc"},
		{method: "DELETE", path: core + "/pods/meta-pod"},
		{method: "DELETE", path: "/api/v1/nodes/meta-node"},
		{method: "DELETE", path: batch + "/jobs/meta-job", body: `{"propagationPolicy":"Background"}`},
		{method: "DELETE", path: policy + "/poddisruptionbudgets/meta-pdb"},
		{method: "DELETE", path: "/api/v1/persistentvolumes/meta-pv"},
		{method: "PATCH", path: "/api/v1/persistentvolumes/meta-pv", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{method: "DELETE", path: csrs + "/meta-csr"},
		{method: "DELETE", path: apps + "/deployments/meta-deploy"},
	}}
}

// streamsAndNodeProxyScenario asks a pod's streams without an Upgrade header (kube finds the
// kubelet first: a node without an address fails there) and proxies to a node at a loopback
// address.
func streamsAndNodeProxyScenario() scenario {
	pods := core + "/pods"
	streams := []string{"/streamed/exec?command=ls&stdout=true", "/streamed/attach?stdout=true", "/streamed/portforward?ports=80"}
	steps := []step{
		builderAccount("default"),
		{method: "POST", path: "/api/v1/nodes", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"stream-node"}}`},
		{method: "POST", path: pods, body: pod("streamed", `{"app":"streamed"}`, "")},
		{method: "POST", path: pods + "/streamed/binding",
			body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"streamed"},"target":{"apiVersion":"v1","kind":"Node","name":"stream-node"}}`},
	}
	for _, stream := range streams {
		steps = append(steps, step{method: "POST", path: pods + stream})
	}
	steps = append(steps, step{method: "PATCH", path: "/api/v1/nodes/stream-node/status", contentType: mergePatch,
		body: `{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.46"}]}}`})
	for _, stream := range streams {
		steps = append(steps, step{method: "POST", path: pods + stream})
	}
	return scenario{"streams without an upgrade and a node proxied at a loopback address", append(steps,
		step{method: "PATCH", path: "/api/v1/nodes/stream-node/status", contentType: mergePatch,
			body: `{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}]}}`},
		step{method: "GET", path: "/api/v1/nodes/stream-node/proxy/healthz"},
		step{method: "GET", path: "/api/v1/nodes/https:stream-node:10250/proxy/healthz"},
		step{method: "DELETE", path: pods + "/streamed", body: `{"gracePeriodSeconds":0}`},
		step{method: "DELETE", path: "/api/v1/nodes/stream-node"},
	)}
}

// watchSpellingScenario watches with the spelling of true the Python client sends, which the
// server serves (and ends at shutdown) as a watch.
func watchSpellingScenario() scenario {
	cms := core + "/configmaps"
	return scenario{"a watch spelled True", []step{
		{watch: "spelled", method: "GET", path: cms + "?watch=True&fieldSelector=metadata.name%3Dspelled"},
		{method: "POST", path: cms, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"spelled"}}`},
		{watch: "spelled", until: "spelled"},
		{method: "DELETE", path: cms + "/spelled"},
	}}
}

const protobufMediaType = "application/vnd.kubernetes.protobuf"

// protobufBody is the object doc (JSON) in Kubernetes' protobuf encoding, as client-go's typed
// clients send built-ins.
func protobufBody(doc string) string {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
	if err != nil {
		panic(err) // the scenarios' own documents decode
	}
	for _, info := range scheme.Codecs.SupportedMediaTypes() {
		if info.MediaType == protobufMediaType {
			var b strings.Builder
			if err := info.Serializer.Encode(obj, &b); err != nil {
				panic(err)
			}
			return b.String()
		}
	}
	panic("client-go's scheme has no protobuf serializer")
}
