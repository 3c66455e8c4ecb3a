package kuberef

import (
	"fmt"
	"sort"
)

// The built-in types of issue 32 compared with the full kube-apiserver: for each, kube's
// defaults (create and read back), a few invalid objects (422 bodies), updates of immutable
// fields, status writes, table output, field selectors and deletes, and what the API server
// itself does for a type (cluster IP and node port allocation, binding, eviction, approval,
// admission: ServiceAccount, LimitRanger, ResourceQuota, Priority, DefaultIngressClass,
// TaintNodesByCondition, StorageObjectInUseProtection, CertificateSubjectRestriction).
//
// Pods name the ServiceAccount "builder", created by each scenario that needs it: sqlkube's
// controllers give every namespace a "default" ServiceAccount, kube-apiserver without
// kube-controller-manager does not, and its admission refuses a pod whose account is missing.

const (
	core       = "/api/v1/namespaces/default"
	asTable    = "application/json;as=Table;v=v1;g=meta.k8s.io"
	aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
)

// builderAccount creates the ServiceAccount the scenarios' pods run as, in namespace ns.
func builderAccount(ns string) step {
	return step{method: "POST", path: "/api/v1/namespaces/" + ns + "/serviceaccounts", setup: true,
		body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"builder"}}`}
}

// pod is a Pod named name with labels (a JSON object) and the spec fields extra (with a leading
// comma) besides one nginx container run as builder.
func pod(name, labels, extra string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","labels":` + labels + `},
	  "spec":{"serviceAccountName":"builder","containers":[{"name":"c","image":"nginx:1.27"}]` + extra + `}}`
}

func builtinScenarios() []scenario {
	return concat(podScenarios(), workloadScenarios(), serviceScenarios(), networkingScenarios(),
		autoscalingScenarios(), storageAndNodeScenarios(), policyScenarios(), certificateScenarios(),
		trustScenarios(), resourceClaimScenarios(), apiServiceScenarios(), builtinDiscoveryScenarios(), correctnessScenarios(),
		protobufScenarios())
}

func podScenarios() []scenario {
	pods := core + "/pods"
	return []scenario{
		{"pods with kube's rules", []step{
			builderAccount("default"),
			{method: "POST", path: pods, body: pod("web", `{"app":"web"}`, "")},
			{method: "GET", path: pods + "/web"},
			{method: "POST", path: pods, body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"},"spec":{"serviceAccountName":"builder",
			  "restartPolicy":"Sometimes","containers":[{"name":"C_1","ports":[{"containerPort":70000}]}]}}`},
			{method: "POST", path: pods, body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"empty"},"spec":{"serviceAccountName":"builder","containers":[]}}`},
			{method: "POST", path: pods, body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"orphan"},"spec":{"serviceAccountName":"nobody","containers":[{"name":"c","image":"nginx"}]}}`},
			{method: "PATCH", path: pods + "/web", contentType: strategicPatch, body: `{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80}]}]}}`},
			{method: "PATCH", path: pods + "/web", contentType: strategicPatch, body: `{"spec":{"containers":[{"name":"c","image":"nginx:1.28"}]}}`},
			{method: "PATCH", path: pods + "/web/status", contentType: mergePatch,
				body: `{"status":{"phase":"Running","podIP":"10.244.0.5","podIPs":[{"ip":"10.244.0.5"}]}}`},
			{method: "GET", path: pods + "?fieldSelector=status.phase%3DRunning"},
			{method: "GET", path: pods + "?fieldSelector=spec.nodeName%3D"},
			{method: "GET", path: pods + "?fieldSelector=spec.bogus%3Dx"},
			{method: "GET", path: pods, accept: asTable},
			{method: "GET", path: pods + "/web/log"},
			{method: "POST", path: pods + "/web/binding",
				body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"apiVersion":"v1","kind":"Node","name":"node-1"}}`},
			{method: "POST", path: pods + "/web/binding",
				body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"apiVersion":"v1","kind":"Node","name":"node-2"}}`},
			{method: "GET", path: pods + "/web"},
			{method: "GET", path: pods + "?fieldSelector=spec.nodeName%3Dnode-1", accept: asTable},
			{method: "GET", path: pods + "/web/log"},
			{method: "POST", path: pods + "/web/exec?command=ls&stdout=true"},
			{method: "DELETE", path: pods + "/web"},
			{method: "GET", path: pods + "/web"},
			{method: "DELETE", path: pods + "/web", body: `{"gracePeriodSeconds":0}`},
			{method: "GET", path: pods + "/web"},
		}},
		{"pod templates and replication controllers", []step{
			{method: "POST", path: core + "/podtemplates", body: `{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"tpl"},
			  "template":{"metadata":{"labels":{"app":"tpl"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}`},
			{method: "GET", path: core + "/podtemplates", accept: asTable},
			{method: "POST", path: core + "/replicationcontrollers", body: `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc"},
			  "spec":{"template":{"metadata":{"labels":{"app":"rc"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`},
			{method: "POST", path: core + "/replicationcontrollers", body: `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"bad"},
			  "spec":{"selector":{"app":"x"},"template":{"metadata":{"labels":{"app":"y"}},"spec":{"containers":[]}}}}`},
			{method: "PATCH", path: core + "/replicationcontrollers/rc/scale", contentType: mergePatch, body: `{"spec":{"replicas":3}}`},
			{method: "GET", path: core + "/replicationcontrollers", accept: asTable},
			{method: "DELETE", path: core + "/replicationcontrollers/rc"},
			{method: "DELETE", path: core + "/podtemplates/tpl"},
		}},
	}
}

func workloadScenarios() []scenario {
	const apps, batch = "/apis/apps/v1/namespaces/default", "/apis/batch/v1/namespaces/default"
	template := `"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"c","image":"postgres:17"}]}}`
	job := func(name, spec string) string {
		return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	jobSpec := `{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"pi","image":"perl:5.40","command":["perl","-e","print 1"]}]}}}`
	cronJob := func(name, schedule, extra string) string {
		return `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"` + name + `"},"spec":{"schedule":"` + schedule + `"` + extra +
			`,"jobTemplate":` + jobSpec + `}}`
	}
	return []scenario{
		{"statefulsets and daemonsets: updates and errors", []step{
			{method: "POST", path: apps + "/statefulsets", body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},
			  "spec":{"serviceName":"db","selector":{"matchLabels":{"app":"db"}},` + template + `,
			  "volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`},
			{method: "PATCH", path: apps + "/statefulsets/db", contentType: mergePatch, body: `{"spec":{"serviceName":"other"}}`},
			{method: "PATCH", path: apps + "/statefulsets/db", contentType: mergePatch, body: `{"spec":{"podManagementPolicy":"Parallel"}}`},
			{method: "PATCH", path: apps + "/statefulsets/db", contentType: strategicPatch,
				body: `{"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"postgres:18"}]}}}}`},
			{method: "PATCH", path: apps + "/statefulsets/db/status", contentType: mergePatch,
				body: `{"status":{"replicas":1,"readyReplicas":1,"currentReplicas":1,"observedGeneration":2}}`},
			{method: "POST", path: apps + "/statefulsets", body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"bad"},
			  "spec":{"podManagementPolicy":"Bogus","updateStrategy":{"type":"Bogus"},"selector":{"matchLabels":{"app":"db"}},` + template + `}}`},
			{method: "GET", path: apps + "/statefulsets", accept: asTable},
			{method: "POST", path: apps + "/daemonsets", body: `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent"},
			  "spec":{"selector":{"matchLabels":{"app":"db"}},` + template + `}}`},
			{method: "PATCH", path: apps + "/daemonsets/agent", contentType: mergePatch, body: `{"spec":{"selector":{"matchLabels":{"app":"other"}}}}`},
			{method: "PATCH", path: apps + "/daemonsets/agent", contentType: mergePatch,
				body: `{"spec":{"updateStrategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":0}}}}`},
			{method: "PATCH", path: apps + "/daemonsets/agent/status", contentType: mergePatch,
				body: `{"status":{"currentNumberScheduled":1,"desiredNumberScheduled":1,"numberMisscheduled":0,"numberReady":1}}`},
			{method: "GET", path: apps + "/daemonsets", accept: asTable},
			{method: "DELETE", path: apps + "/statefulsets/db"},
			{method: "DELETE", path: apps + "/daemonsets/agent"},
		}},
		{"jobs with kube's rules", []step{
			{method: "POST", path: batch + "/jobs", body: job("pi", jobSpec)},
			{method: "GET", path: batch + "/jobs/pi"},
			{method: "POST", path: batch + "/jobs", body: job("bad", `{"completions":-1,"parallelism":-1,"template":{"spec":{"restartPolicy":"Always","containers":[{"name":"c","image":"perl"}]}}}`)},
			{method: "POST", path: batch + "/jobs", body: job("manual", `{"manualSelector":true,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"perl"}]}}}`)},
			{method: "PATCH", path: batch + "/jobs/pi", contentType: strategicPatch, body: `{"spec":{"template":{"spec":{"containers":[{"name":"pi","image":"perl:5.42"}]}}}}`},
			{method: "PATCH", path: batch + "/jobs/pi", contentType: mergePatch, body: `{"spec":{"suspend":true}}`},
			{method: "PATCH", path: batch + "/jobs/pi/status", contentType: mergePatch, body: `{"status":{"active":1,"ready":0,"startTime":"2026-01-01T00:00:00Z"}}`},
			{method: "PATCH", path: batch + "/jobs/pi/status", contentType: mergePatch, body: `{"status":{"succeeded":-1}}`},
			{method: "GET", path: batch + "/jobs?fieldSelector=status.successful%3D0"},
			{method: "GET", path: batch + "/jobs", accept: asTable},
			{method: "DELETE", path: batch + "/jobs/pi"},
			{method: "POST", path: batch + "/jobs", body: job("pi2", jobSpec)},
			{method: "DELETE", path: batch + "/jobs/pi2", body: `{"propagationPolicy":"Background"}`},
			{method: "GET", path: batch + "/jobs/pi2"},
		}},
		{"cronjobs with kube's rules", []step{
			{method: "POST", path: batch + "/cronjobs", body: cronJob("nightly", "0 3 * * *", "")},
			{method: "GET", path: batch + "/cronjobs/nightly"},
			{method: "POST", path: batch + "/cronjobs", body: cronJob("bad", "61 * * * *", `,"timeZone":"Mars/Phobos","concurrencyPolicy":"Sometimes"`)},
			{method: "POST", path: batch + "/cronjobs", body: cronJob("a-name-that-is-much-too-long-for-a-cronjob-to-carry-1", "@daily", "")},
			{method: "PATCH", path: batch + "/cronjobs/nightly", contentType: mergePatch, body: `{"spec":{"schedule":"@hourly","suspend":true}}`},
			{method: "PATCH", path: batch + "/cronjobs/nightly/status", contentType: mergePatch, body: `{"status":{"lastScheduleTime":"2026-01-01T03:00:00Z"}}`},
			{method: "GET", path: batch + "/cronjobs", accept: asTable},
			{method: "GET", path: batch + "/cronjobs?fieldSelector=metadata.name%3Dnightly"},
			{method: "DELETE", path: batch + "/cronjobs/nightly"},
		}},
	}
}

// serviceScenarios allocate cluster IPs and node ports: chosen by the server (compared as
// tokens that must lie in the range and differ from each other), asked for, taken, out of range,
// and released on delete.
func serviceScenarios() []scenario {
	services := core + "/services"
	service := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	const port = `"ports":[{"port":80,"targetPort":8080}],"selector":{"app":"web"}`
	return []scenario{{"services and their cluster IPs and node ports", []step{
		{method: "GET", path: services + "/kubernetes"},
		{method: "POST", path: services, body: service("auto", `{`+port+`}`)},
		{method: "POST", path: services, body: service("fixed", `{"clusterIP":"10.0.0.10",`+port+`}`)},
		{method: "POST", path: services, body: service("taken", `{"clusterIP":"10.0.0.10",`+port+`}`)},
		{method: "POST", path: services, body: service("outside", `{"clusterIP":"10.1.0.5",`+port+`}`)},
		{method: "POST", path: services, body: service("nodeport", `{"type":"NodePort","ports":[{"name":"a","port":80,"nodePort":30080},{"name":"b","port":81}]}`)},
		{method: "POST", path: services, body: service("nodeport-taken", `{"type":"NodePort","ports":[{"port":80,"nodePort":30080}]}`)},
		{method: "POST", path: services, body: service("nodeport-outside", `{"type":"NodePort","ports":[{"port":80,"nodePort":80}]}`)},
		{method: "POST", path: services, body: service("headless", `{"clusterIP":"None",`+port+`}`)},
		{method: "POST", path: services, body: service("external", `{"type":"ExternalName","externalName":"example.com"}`)},
		{method: "POST", path: services, body: service("lb", `{"type":"LoadBalancer","externalTrafficPolicy":"Local",`+port+`}`)},
		{method: "POST", path: services, body: service("bad", `{"type":"Bogus","ports":[{"port":0,"protocol":"ICMP"}]}`)},
		{method: "PATCH", path: services + "/fixed", contentType: mergePatch, body: `{"spec":{"clusterIP":"10.0.0.11","clusterIPs":["10.0.0.11"]}}`},
		{method: "PATCH", path: services + "/auto", contentType: mergePatch, body: `{"spec":{"type":"NodePort"}}`},
		{method: "PATCH", path: services + "/lb/status", contentType: mergePatch, body: `{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.1","ipMode":"VIP"}]}}}`},
		{method: "GET", path: services + "?fieldSelector=spec.type%3DNodePort"},
		{method: "GET", path: services, accept: asTable},
		{method: "GET", path: "/apis/networking.k8s.io/v1/ipaddresses/10.0.0.10"},
		{method: "GET", path: "/apis/networking.k8s.io/v1/servicecidrs/kubernetes"},
		{method: "DELETE", path: services + "/fixed"},
		{method: "GET", path: "/apis/networking.k8s.io/v1/ipaddresses/10.0.0.10", waitFor: 404},
		{method: "POST", path: services, body: service("taken", `{"clusterIP":"10.0.0.10",`+port+`}`)},
		{method: "DELETE", path: services + "/nodeport"},
		{method: "POST", path: services, body: service("nodeport-taken", `{"type":"NodePort","ports":[{"port":80,"nodePort":30080}]}`)},
		{method: "DELETE", path: services + "/auto"},
		{method: "DELETE", path: services + "/taken"},
		{method: "DELETE", path: services + "/nodeport-taken"},
		{method: "DELETE", path: services + "/headless"},
		{method: "DELETE", path: services + "/external"},
		{method: "DELETE", path: services + "/lb"},
	}}}
}

func networkingScenarios() []scenario {
	const networking = "/apis/networking.k8s.io/v1"
	ingresses := networking + "/namespaces/default/ingresses"
	policies := networking + "/namespaces/default/networkpolicies"
	slices := "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
	ingress := func(name, rule string) string {
		return `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"` + name + `"},"spec":{"rules":[` + rule + `]}}`
	}
	policy := func(name, spec string) string {
		return `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	slice := func(name, addressType, address string) string {
		return `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"` + name + `","labels":{"kubernetes.io/service-name":"web"}},
		  "addressType":"` + addressType + `","endpoints":[{"addresses":["` + address + `"]}],"ports":[{"name":"http","port":80}]}`
	}
	return []scenario{
		{"ingresses and the default ingress class", []step{
			{method: "POST", path: networking + "/ingressclasses", body: `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass",
			  "metadata":{"name":"standard","annotations":{"ingressclass.kubernetes.io/is-default-class":"true"}},"spec":{"controller":"example.com/ingress"}}`},
			{method: "POST", path: networking + "/ingressclasses", body: `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass","metadata":{"name":"bad"},"spec":{"controller":"no slash"}}`},
			{method: "POST", path: ingresses, body: ingress("site", `{"host":"example.com","http":{"paths":[{"path":"/","pathType":"Prefix",
			  "backend":{"service":{"name":"web","port":{"number":80}}}}]}}`)},
			{method: "POST", path: ingresses, body: ingress("bad", `{"host":"Bad_Host","http":{"paths":[{"path":"relative","backend":{"service":{"name":"web"}}}]}}`)},
			{method: "PATCH", path: ingresses + "/site/status", contentType: mergePatch, body: `{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.2"}]}}}`},
			{method: "GET", path: ingresses, accept: asTable},
			{method: "GET", path: networking + "/ingressclasses", accept: asTable},
			{method: "PATCH", path: networking + "/ingressclasses/standard", contentType: mergePatch, body: `{"spec":{"controller":"example.com/other"}}`},
			{method: "DELETE", path: ingresses + "/site"},
			{method: "DELETE", path: networking + "/ingressclasses/standard"},
		}},
		{"network policies", []step{
			{method: "POST", path: policies, body: policy("deny", `{"podSelector":{},"ingress":[{"ports":[{"port":8000,"endPort":8080}]}]}`)},
			{method: "POST", path: policies, body: policy("egress", `{"podSelector":{"matchLabels":{"app":"web"}},"egress":[{"to":[{"ipBlock":{"cidr":"10.0.0.0/8","except":["10.1.0.0/16"]}}]}]}`)},
			{method: "POST", path: policies, body: policy("bad", `{"podSelector":{},"policyTypes":["Bogus"],"ingress":[{"ports":[{"port":8080,"endPort":80}],
			  "from":[{"ipBlock":{"cidr":"not-a-cidr"}}]}]}`)},
			{method: "GET", path: policies + "/deny"},
			{method: "GET", path: policies, accept: asTable},
			{method: "DELETE", path: policies + "/deny"},
			{method: "DELETE", path: policies + "/egress"},
		}},
		{"endpoint slices and endpoints", []step{
			{method: "POST", path: slices, body: slice("web-a", "IPv4", "10.244.0.5")},
			{method: "POST", path: slices, body: slice("bad", "Bogus", "not-an-ip")},
			{method: "POST", path: slices, body: slice("web-b", "IPv4", "not-an-ip")},
			{method: "PATCH", path: slices + "/web-a", contentType: mergePatch, body: `{"addressType":"IPv6"}`},
			{method: "GET", path: slices + "?labelSelector=kubernetes.io%2Fservice-name%3Dweb"},
			{method: "GET", path: slices + "?labelSelector=kubernetes.io%2Fservice-name%3Dweb", accept: asTable},
			{method: "POST", path: core + "/endpoints", body: `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"web"},
			  "subsets":[{"addresses":[{"ip":"10.244.0.5"}],"ports":[{"name":"http","port":80}]}]}`},
			{method: "POST", path: core + "/endpoints", body: `{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"bad"},
			  "subsets":[{"addresses":[{"ip":"127.0.0.1"}],"ports":[{"port":0}]}]}`},
			{method: "GET", path: core + "/endpoints?fieldSelector=metadata.name%3Dweb", accept: asTable},
			{method: "DELETE", path: core + "/endpoints/web"},
			{method: "DELETE", path: slices + "/web-a"},
		}},
	}
}

// autoscalingScenarios read one HorizontalPodAutoscaler through autoscaling/v1 and v2.
func autoscalingScenarios() []scenario {
	const v1, v2 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
	target := `"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"}`
	return []scenario{{"horizontal pod autoscalers in v1 and v2", []step{
		{method: "POST", path: v2, body: `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"web"},"spec":{` + target + `,
		  "maxReplicas":5,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":60}}},
		  {"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"500Mi"}}}]}}`},
		{method: "GET", path: v1 + "/web"},
		{method: "POST", path: v1, body: `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"api"},"spec":{` + target + `,
		  "maxReplicas":3,"targetCPUUtilizationPercentage":70}}`},
		{method: "GET", path: v2 + "/api"},
		{method: "POST", path: v2, body: `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"bad"},"spec":{` + target + `,
		  "minReplicas":0,"maxReplicas":0,"metrics":[{"type":"Bogus"}]}}`},
		{method: "POST", path: v1, body: `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"bad"},"spec":{
		  "scaleTargetRef":{"name":""},"maxReplicas":1,"minReplicas":2,"targetCPUUtilizationPercentage":-5}}`},
		{method: "PATCH", path: v2 + "/web/status", contentType: mergePatch, body: `{"status":{"currentReplicas":2,"desiredReplicas":3,
		  "currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":80,"averageValue":"200m"}}}]}}`},
		{method: "GET", path: v1 + "/web"},
		{method: "PATCH", path: v1 + "/api", contentType: mergePatch, body: `{"spec":{"maxReplicas":4}}`},
		{method: "GET", path: v2 + "/api"},
		{method: "GET", path: v2, accept: asTable},
		{method: "GET", path: v1, accept: asTable},
		{method: "DELETE", path: v2 + "/web"},
		{method: "DELETE", path: v1 + "/api"},
	}}}
}

func storageAndNodeScenarios() []scenario {
	pvs, pvcs := "/api/v1/persistentvolumes", core+"/persistentvolumeclaims"
	return []scenario{
		{"persistent volumes and claims", []step{
			{method: "POST", path: pvs, body: `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-1"},
			  "spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data"}}}`},
			{method: "POST", path: pvs, body: `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"bad"},"spec":{"accessModes":["Sometimes"],"hostPath":{"path":"data"}}}`},
			{method: "POST", path: pvcs, body: `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"claim"},
			  "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`},
			{method: "POST", path: pvcs, body: `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"bad"},"spec":{"resources":{"requests":{"storage":"-1"}}}}`},
			{method: "PATCH", path: pvcs + "/claim", contentType: mergePatch, body: `{"spec":{"accessModes":["ReadWriteMany"]}}`},
			{method: "PATCH", path: pvcs + "/claim/status", contentType: mergePatch, body: `{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"}}}`},
			{method: "PATCH", path: pvs + "/pv-1/status", contentType: mergePatch, body: `{"status":{"phase":"Available"}}`},
			{method: "GET", path: pvcs, accept: asTable},
			{method: "GET", path: pvs, accept: asTable},
			{method: "DELETE", path: pvcs + "/claim"},
			{method: "GET", path: pvcs + "/claim"},
			{method: "PATCH", path: pvcs + "/claim", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
			{method: "GET", path: pvcs + "/claim"},
			{method: "DELETE", path: pvs + "/pv-1"},
			{method: "PATCH", path: pvs + "/pv-1", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		}},
		{"nodes", []step{
			{method: "POST", path: "/api/v1/nodes", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1","labels":{"kubernetes.io/hostname":"node-1"}}}`},
			{method: "POST", path: "/api/v1/nodes", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"Bad_Node"},"spec":{"podCIDR":"nonsense"}}`},
			{method: "PATCH", path: "/api/v1/nodes/node-1/status", contentType: mergePatch, body: `{"status":{"capacity":{"cpu":"2","memory":"4Gi","pods":"110"},
			  "allocatable":{"cpu":"2","memory":"4Gi","pods":"110"},"nodeInfo":{"kubeletVersion":"v1.37.2"},
			  "conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"ready","lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`},
			{method: "GET", path: "/api/v1/nodes/node-1"},
			{method: "GET", path: "/api/v1/nodes", accept: asTable},
			{method: "PATCH", path: "/api/v1/nodes/node-1", contentType: mergePatch, body: `{"spec":{"unschedulable":true,"podCIDR":"10.244.0.0/24"}}`},
			{method: "GET", path: "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue", accept: asTable},
			{method: "PATCH", path: "/api/v1/nodes/node-1", contentType: mergePatch, body: `{"spec":{"podCIDR":"10.244.1.0/24"}}`},
			{method: "GET", path: "/api/v1/nodes/node-1/proxy/healthz"},
			{method: "DELETE", path: "/api/v1/nodes/node-1"},
		}},
	}
}

// policyScenarios cover PodDisruptionBudgets and eviction, LimitRanges and ResourceQuotas (by
// kube's admission) and PriorityClasses.
func policyScenarios() []scenario {
	pdbs := "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
	pods := core + "/pods"
	eviction := func(name string) string {
		return `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `"}}`
	}
	const quota = "/api/v1/namespaces/quota"
	priorityClasses := "/apis/scheduling.k8s.io/v1/priorityclasses"
	container := func(resources string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"serviceAccountName":"builder","containers":[{"name":"c","image":"nginx","resources":` + resources + `}]}}`
	}
	return []scenario{
		{"pod disruption budgets and eviction", []step{
			builderAccount("default"),
			{method: "POST", path: pdbs, body: `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"guard"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"guarded"}}}}`},
			{method: "POST", path: pdbs, body: `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"bad"},"spec":{"minAvailable":"150%","maxUnavailable":1}}`},
			{method: "POST", path: pods, body: pod("guarded-1", `{"app":"guarded"}`, "")},
			// A pending pod is evicted whatever its budget says: this one runs.
			{method: "PATCH", path: pods + "/guarded-1/status", contentType: mergePatch,
				body: `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`},
			{method: "POST", path: pods + "/guarded-1/eviction", body: eviction("guarded-1")},
			{method: "PATCH", path: pdbs + "/guard/status", contentType: mergePatch,
				body: `{"status":{"observedGeneration":1,"disruptionsAllowed":1,"currentHealthy":2,"desiredHealthy":1,"expectedPods":2}}`},
			{method: "POST", path: pods + "/guarded-1/eviction", body: eviction("other")},
			{method: "POST", path: pods + "/guarded-1/eviction", body: eviction("guarded-1")},
			{method: "GET", path: pdbs + "/guard"},
			{method: "GET", path: pods + "/guarded-1"},
			{method: "POST", path: pods + "/missing/eviction", body: eviction("missing")},
			{method: "GET", path: pdbs, accept: asTable},
			{method: "DELETE", path: pdbs + "/guard"},
		}},
		{"limit ranges and resource quotas", []step{
			{method: "POST", path: "/api/v1/namespaces", setup: true, body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"quota"}}`},
			builderAccount("quota"),
			{method: "POST", path: quota + "/limitranges", body: `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"limits"},"spec":{"limits":[{"type":"Container",
			  "default":{"cpu":"500m","memory":"256Mi"},"defaultRequest":{"cpu":"100m"},"max":{"cpu":"1"}}]}}`},
			{method: "POST", path: quota + "/limitranges", body: `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"bad"},"spec":{"limits":[{"type":"Container",
			  "defaultRequest":{"cpu":"2"},"max":{"cpu":"1"}}]}}`},
			{method: "POST", path: quota + "/pods", body: fmt.Sprintf(container(`{}`), "limited")},
			{method: "POST", path: quota + "/pods", body: fmt.Sprintf(container(`{"limits":{"cpu":"2"}}`), "greedy")},
			{method: "POST", path: quota + "/resourcequotas", body: `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"pods"},"spec":{"hard":{"pods":"2","requests.cpu":"1"}}}`},
			{method: "GET", path: quota + "/resourcequotas/pods"},
			{method: "POST", path: quota + "/pods", body: fmt.Sprintf(container(`{}`), "counted")},
			{method: "PATCH", path: quota + "/resourcequotas/pods/status", contentType: mergePatch,
				body: `{"status":{"hard":{"pods":"2","requests.cpu":"1"},"used":{"pods":"1","requests.cpu":"100m"}}}`},
			{method: "POST", path: quota + "/pods", body: fmt.Sprintf(container(`{}`), "counted-2")},
			{method: "GET", path: quota + "/resourcequotas/pods"},
			{method: "POST", path: quota + "/pods", body: fmt.Sprintf(container(`{}`), "over")},
			{method: "POST", path: quota + "/resourcequotas", body: `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"bad"},"spec":{"hard":{"bogus":"1"}}}`},
			{method: "GET", path: quota + "/limitranges", accept: asTable},
			{method: "GET", path: quota + "/resourcequotas", accept: asTable},
			{method: "DELETE", path: "/api/v1/namespaces/quota"},
		}},
		{"priority classes", []step{
			builderAccount("default"),
			{method: "GET", path: priorityClasses + "/system-cluster-critical"},
			{method: "GET", path: priorityClasses + "/system-node-critical"},
			{method: "POST", path: priorityClasses, body: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000000,"description":"important"}`},
			{method: "POST", path: priorityClasses, body: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"system-mine"},"value":10}`},
			{method: "POST", path: priorityClasses, body: `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"huge"},"value":2000000000,"preemptionPolicy":"Sometimes"}`},
			{method: "PATCH", path: priorityClasses + "/high", contentType: mergePatch, body: `{"value":5}`},
			{method: "POST", path: pods, body: pod("prioritized", `{}`, `,"priorityClassName":"high"`)},
			{method: "POST", path: pods, body: pod("unprioritized", `{}`, `,"priorityClassName":"missing"`)},
			{method: "GET", path: priorityClasses, accept: asTable},
			{method: "DELETE", path: pods + "/prioritized"},
			{method: "DELETE", path: priorityClasses + "/high"},
			{method: "DELETE", path: priorityClasses + "/system-node-critical"},
		}},
	}
}

// Certificate requests for CN=alice,O=developers and CN=mallory,O=system:masters (P-256 keys
// thrown away), base64 as a CertificateSigningRequest carries them.
const (
	aliceCSR   = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIZk1JR0hBZ0VBTUNVeERqQU1CZ05WQkFNTUJXRnNhV05sTVJNd0VRWURWUVFLREFwa1pYWmxiRzl3WlhKegpNRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUVwbHpoUlAyYjQ1U1pFV1J2LzFzM1BnWC9oanU1CmdiWGJpTlhubGdyNkF2a0xpcHA0dGJVTUdTMGxoN3lZNSs5S0U3RWxHR3M0WXBQMnJtd0tITStLZzZBQU1Bb0cKQ0NxR1NNNDlCQU1DQTBjQU1FUUNJSHN1NU95SHQzRUdhUElmcEcxZS80UlhZb1NSNEpGZzNJNHlFTUJQWFpnbgpBaUFUb0FueHJaZWllaVl4S0xFRUpycTlNSXpYdVJRZVAxOVZxNm5xOHFsMGx3PT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg=="
	mastersCSR = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIbU1JR05BZ0VBTUNzeEVEQU9CZ05WQkFNTUIyMWhiR3h2Y25reEZ6QVZCZ05WQkFvTURuTjVjM1JsYlRwdApZWE4wWlhKek1Ga3dFd1lIS29aSXpqMENBUVlJS29aSXpqMERBUWNEUWdBRXU5SEFUdVZ3aXBSL0dUZVJNWWZyCnlVVXZaLzhMdzhTbS9ObERyUy80UE4yNlJtU3hIT1Q3ODJKZ2Fyd09oRlJ2RnBFdlk4OWRJQ0toZEk0MUIvYm4KZ2FBQU1Bb0dDQ3FHU000OUJBTUNBMGdBTUVVQ0lBL2ZxMlQ1UG5OUzFMRTBaaDhCdWM1NW1paTcxMkxhMmQ4OAovVHZlM1lEREFpRUExVFBkcTV5UUdKdmtYSCtWWitNS01tRWhYeDJwcU41K0hmZ2pYakJXNkxrPQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K"
)

func certificateScenarios() []scenario {
	csrs := "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	csr := func(name, request, signer string) string {
		return `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"` + name + `"},
		  "spec":{"request":"` + request + `","signerName":"` + signer + `","usages":["client auth"]}}`
	}
	condition := func(kind string) string {
		return `{"status":{"conditions":[{"type":"` + kind + `","status":"True","reason":"Kuberef","message":"decided"}]}}`
	}
	return []scenario{{"certificate signing requests and their approval", []step{
		{method: "POST", path: csrs, body: csr("alice", aliceCSR, "kubernetes.io/kube-apiserver-client")},
		{method: "GET", path: csrs + "/alice"},
		{method: "POST", path: csrs, body: csr("bad", "bm90IGEgcmVxdWVzdA==", "")},
		{method: "POST", path: csrs, body: csr("mallory", mastersCSR, "kubernetes.io/kube-apiserver-client")},
		{method: "PATCH", path: csrs + "/alice/approval", contentType: mergePatch, body: condition("Approved")},
		{method: "PATCH", path: csrs + "/alice/approval", contentType: jsonPatch,
			body: `[{"op":"add","path":"/status/conditions/-","value":{"type":"Denied","status":"True","reason":"Kuberef"}}]`},
		{method: "POST", path: csrs, body: csr("denied", aliceCSR, "example.com/signer")},
		{method: "PATCH", path: csrs + "/denied/approval", contentType: mergePatch, body: condition("Denied")},
		{method: "PATCH", path: csrs + "/alice/status", contentType: mergePatch, body: `{"status":{"certificate":"bm90IGEgY2VydGlmaWNhdGU="}}`},
		{method: "GET", path: csrs, accept: asTable},
		{method: "DELETE", path: csrs + "/alice"},
		{method: "DELETE", path: csrs + "/denied"},
	}}}
}

// kuberefRoot is a self-signed CA certificate (CN=kuberef-root, P-256, key thrown away), as a
// JSON string.
const kuberefRoot = `-----BEGIN CERTIFICATE-----\nMIIBhDCCASugAwIBAgIUVCu8berSOb/wrBS99PWQ2eojiMAwCgYIKoZIzj0EAwIwFzEVMBMGA1UEAwwMa3ViZXJlZi1yb290MCAXDTI2MTEyODA3MTc0OVoYDzIxMjYxMTA0MDcxNzQ5WjAXMRUwEwYDVQQDDAxrdWJlcmVmLXJvb3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASZ9x/NqWaabzbe19foSfh88CKDuTwJ/QYlPhaKcwuxLQ8wFbruK0aBLwirwHcVT9A+t1Qe+57TkT/xs2ePwgeqo1MwUTAdBgNVHQ4EFgQUfUAucPtNwfLYUxTwiHf468LLpOEwHwYDVR0jBBgwFoAUfUAucPtNwfLYUxTwiHf468LLpOEwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiAHyLMrEGiehhaZ/tJEcTnp+q3LUEM2ofhNFqu3TPnyIAIgJTvQLLb/Ocbp7IZNRKk/wh/kcFqYkSPsYCsy/Rhjgbk=\n-----END CERTIFICATE-----\n`

// trustScenarios cover ClusterTrustBundles and PodCertificateRequests (whose valid creates need a
// pod's key and proof of possession: only refusals and the empty table are compared).
func trustScenarios() []scenario {
	bundles, pcrs := "/apis/certificates.k8s.io/v1/clustertrustbundles", "/apis/certificates.k8s.io/v1/namespaces/default/podcertificaterequests"
	bundle := func(name, extra string) string {
		return `{"apiVersion":"certificates.k8s.io/v1","kind":"ClusterTrustBundle","metadata":{"name":"` + name + `"},"spec":{` + extra + `}}`
	}
	return []scenario{{"cluster trust bundles and pod certificate requests", []step{
		{method: "POST", path: bundles, body: bundle("kuberef-roots", `"trustBundle":"`+kuberefRoot+`"`)},
		{method: "POST", path: bundles, body: bundle("bad", `"trustBundle":"not a certificate"`)},
		{method: "POST", path: bundles, body: bundle("example.com:signer:roots", `"signerName":"example.com/other","trustBundle":"`+kuberefRoot+`"`)},
		{method: "PATCH", path: bundles + "/kuberef-roots", contentType: mergePatch, body: `{"spec":{"signerName":"example.com/signer"}}`},
		{method: "GET", path: bundles, accept: asTable},
		{method: "GET", path: bundles + "?fieldSelector=spec.signerName%3Dexample.com%2Fsigner"},
		{method: "DELETE", path: bundles + "/kuberef-roots"},
		{method: "POST", path: pcrs, body: `{"apiVersion":"certificates.k8s.io/v1","kind":"PodCertificateRequest","metadata":{"name":"bad"},
		  "spec":{"signerName":"example.com/signer","podName":"web","nodeName":"node-1","serviceAccountName":"builder"}}`},
		{method: "GET", path: pcrs, accept: asTable},
	}}}
}

// resourceClaimScenarios cover ResourceClaims and their templates: kube's defaults, refusals, the
// admin access check against the namespace's label, a status write and the tables.
func resourceClaimScenarios() []scenario {
	claims, templates := "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"
	request := func(extra string) string {
		return `{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"` + extra + `}}]}}`
	}
	return []scenario{{"resource claims and templates", []step{
		{method: "POST", path: claims, body: `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"gpu"},"spec":` + request("") + `}`},
		{method: "POST", path: claims, body: `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"bad"},
		  "spec":{"devices":{"requests":[{"name":"Not_A_Name","exactly":{"deviceClassName":""}}]}}}`},
		{method: "POST", path: claims, body: `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"admin"},"spec":` + request(`,"adminAccess":true`) + `}`},
		{method: "PATCH", path: claims + "/gpu", contentType: mergePatch, body: `{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"other.example.com"}}]}}}`},
		{method: "PATCH", path: claims + "/gpu/status", contentType: mergePatch, body: `{"status":{"allocation":{"devices":{"results":[
		  {"request":"gpu","driver":"gpu.example.com","pool":"node-1","device":"gpu-0"}]}}}}`},
		{method: "GET", path: claims + "/gpu"},
		{method: "GET", path: claims, accept: asTable},
		{method: "POST", path: templates, body: `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"gpu"},"spec":{"spec":` + request("") + `}}`},
		{method: "PATCH", path: templates + "/gpu", contentType: mergePatch, body: `{"spec":{"spec":{"devices":{"requests":null}}}}`},
		{method: "GET", path: templates, accept: asTable},
		{method: "DELETE", path: templates + "/gpu"},
		{method: "DELETE", path: claims + "/gpu"},
	}}}
}

// apiServiceScenarios cover APIServices: the local ones kube's aggregator registers for its
// group versions (waited for: they are written in the background), user-created ones, kube-
// aggregator's validation and the table.
func apiServiceScenarios() []scenario {
	apiServices := "/apis/apiregistration.k8s.io/v1/apiservices"
	apiService := func(name, group, version, extra string) string {
		return `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"` + name + `"},
		  "spec":{"group":"` + group + `","version":"` + version + `","groupPriorityMinimum":1000,"versionPriority":15` + extra + `}}`
	}
	return []scenario{{"api services", []step{
		{method: "GET", path: apiServices + "/v1.apps", waitFor: 200},
		{method: "GET", path: apiServices + "/v1.", waitFor: 200},
		{method: "GET", path: apiServices + "/v2.autoscaling", accept: asTable, waitFor: 200},
		{method: "POST", path: apiServices, body: apiService("v1alpha1.kuberef.example.com", "kuberef.example.com", "v1alpha1", "")},
		{method: "POST", path: apiServices, body: apiService("v1beta1.kuberef.example.com", "kuberef.example.com", "v1beta1",
			`,"service":{"namespace":"default","name":"kuberef-api","port":443},"insecureSkipTLSVerify":true`)},
		{method: "POST", path: apiServices, body: apiService("bad", "kuberef.example.com", "v1", `,"service":{"name":"x"}`)},
		{method: "PATCH", path: apiServices + "/v1alpha1.kuberef.example.com", contentType: mergePatch, body: `{"spec":{"versionPriority":0}}`},
		{method: "DELETE", path: apiServices + "/v1alpha1.kuberef.example.com"},
		{method: "DELETE", path: apiServices + "/v1beta1.kuberef.example.com"},
	}}}
}

// builtinGroupVersions are the group versions kube-apiserver v1.37 serves by default.
var builtinGroupVersions = []string{
	"admissionregistration.k8s.io/v1", "apiextensions.k8s.io/v1", "apiregistration.k8s.io/v1", "apps/v1",
	"authentication.k8s.io/v1", "authorization.k8s.io/v1", "autoscaling/v1", "autoscaling/v2", "batch/v1",
	"certificates.k8s.io/v1", "coordination.k8s.io/v1", "discovery.k8s.io/v1", "events.k8s.io/v1",
	"flowcontrol.apiserver.k8s.io/v1", "networking.k8s.io/v1", "node.k8s.io/v1", "policy/v1",
	"rbac.authorization.k8s.io/v1", "resource.k8s.io/v1", "scheduling.k8s.io/v1", "storage.k8s.io/v1",
}

// builtinDiscoveryScenarios read the discovery documents (legacy and aggregated) and the
// OpenAPI v3 root; each group version's document is its own step, so a difference names it.
func builtinDiscoveryScenarios() []scenario {
	steps := []step{
		{method: "GET", path: "/api"},
		{method: "GET", path: "/apis"},
		{method: "GET", path: "/api/v1", pick: sortedResources},
	}
	for _, gv := range builtinGroupVersions {
		steps = append(steps, step{method: "GET", path: "/apis/" + gv, pick: sortedResources})
	}
	steps = append(steps,
		step{method: "GET", path: "/apis/autoscaling"},
		step{method: "GET", path: "/api", accept: aggregated, pick: sortedAggregated},
		step{method: "GET", path: "/apis", accept: aggregated, pick: sortedAggregated},
		step{method: "GET", path: "/openapi/v3", pick: openAPIPaths},
		// Documents of endpoints that serve no resources, as kube builds them from its routes.
		step{method: "GET", path: "/openapi/v3/api"},
		step{method: "GET", path: "/openapi/v3/apis/apps"},
		step{method: "GET", path: "/openapi/v3/version"},
		step{method: "GET", path: "/openapi/v3/openid/v1/jwks"},
	)
	return []scenario{{"discovery of the built-in groups", steps}}
}

// sortedAggregated sorts the resources of every version of an aggregated discovery document by
// name, as sortedResources does for one group version's.
func sortedAggregated(v any) any {
	doc, _ := v.(map[string]any)
	items, _ := doc["items"].([]any)
	for _, item := range items {
		group, _ := item.(map[string]any)
		versions, _ := group["versions"].([]any)
		for _, version := range versions {
			version, _ := version.(map[string]any)
			list, _ := version["resources"].([]any)
			sortByKey(list, "resource")
		}
	}
	return doc
}

// openAPIPaths picks the group versions the OpenAPI v3 root lists (the hashes in their URLs are
// each server's encoding's).
func openAPIPaths(v any) any {
	obj, _ := v.(map[string]any)
	paths, _ := obj["paths"].(map[string]any)
	names := make([]string, 0, len(paths))
	for name := range paths {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
