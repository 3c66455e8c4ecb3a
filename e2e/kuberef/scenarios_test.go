package kuberef

import (
	"net/http"
	"strings"
)

// scenario is a named sequence of steps; scenarios run in order and share the servers' state,
// so each uses its own object names.
type scenario struct {
	name  string
	steps []step
}

const (
	crds    = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	widgets = "/apis/example.com/v1/namespaces/default/widgets"
	gizmos  = "/apis/example.com/v1/gizmos"
)

// widgetCRD is namespaced with a status subresource; gizmoCRD is cluster-scoped with status and
// scale.
const widgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
 "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
  "schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{"color":{"type":"string"},"size":{"type":"integer","default":1}}},
   "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}}}]}}`

const gizmoCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"gizmos.example.com"},
"spec":{"group":"example.com","scope":"Cluster",
 "names":{"plural":"gizmos","singular":"gizmo","kind":"Gizmo","listKind":"GizmoList"},
 "versions":[{"name":"v1","served":true,"storage":true,
  "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
  "schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{"replicas":{"type":"integer"}}},
   "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`

// sprocketCRD has two versions converted by a webhook nobody listens at.
const sprocketCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"sprockets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"sprockets","singular":"sprocket","kind":"Sprocket","listKind":"SprocketList"},
 "conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:1/convert"}}},
 "versions":[
  {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{"size":{"type":"string"}}}}}}},
  {"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`

const (
	sprocketsV1 = "/apis/example.com/v1/namespaces/default/sprockets"
	sprocketsV2 = "/apis/example.com/v2/namespaces/default/sprockets"
)

func widget(name string) string {
	return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":{"color":"red"}}`
}

func gizmo(name string) string {
	return `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"` + name + `"},"spec":{"replicas":1}}`
}

var handWritten = []scenario{
	{"crds", []step{
		{method: "POST", path: crds, body: widgetCRD, setup: true},
		{method: "POST", path: crds, body: gizmoCRD, setup: true},
		{method: "GET", path: widgets, setup: true, waitFor: http.StatusOK},
		{method: "GET", path: gizmos, setup: true, waitFor: http.StatusOK},
	}},
	{"widget crud", []step{
		{method: "POST", path: widgets, body: widget("crud")},
		{method: "GET", path: widgets + "/crud"},
		{method: "PUT", path: widgets + "/crud", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"crud","resourceVersion":"{{rv:crud}}"},"spec":{"color":"blue"}}`},
		{method: "PATCH", path: widgets + "/crud", body: `{"spec":{"size":3}}`, contentType: "application/merge-patch+json"},
		{method: "PATCH", path: widgets + "/crud", body: `[{"op":"replace","path":"/spec/color","value":"green"}]`, contentType: "application/json-patch+json"},
		{method: "GET", path: widgets + "/crud/status"},
		{method: "PUT", path: widgets + "/crud/status", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"crud"},"status":{"ready":true}}`},
		{method: "DELETE", path: widgets + "/crud"},
		{method: "GET", path: widgets + "/crud"},
		{method: "DELETE", path: widgets + "/crud"},
	}},
	{"create errors", []step{
		{method: "POST", path: widgets, body: widget("dup")},
		{method: "POST", path: widgets, body: widget("dup")},
		{method: "POST", path: widgets, body: `{}`},
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"}}`},
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v9","kind":"Widget","metadata":{"name":"v9"}}`},
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"Bad_Name"}}`},
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{}}`},
		{method: "POST", path: widgets, body: `{"apiVersion":`},
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"typed"},"spec":{"size":"big"}}`},
		{method: "POST", path: widgets + "/dup", body: widget("dup")},
	}},
	{"update preconditions", []step{
		{method: "POST", path: widgets, body: widget("upd")},
		{method: "PUT", path: widgets + "/upd", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"upd","uid":"6b0e7c1e-0000-4000-8000-000000000000"},"spec":{}}`},
		{method: "PUT", path: widgets + "/upd", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"upd","resourceVersion":"1"},"spec":{}}`},
		{method: "PUT", path: widgets + "/upd", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"other"},"spec":{}}`},
		{method: "PUT", path: widgets + "/missing", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"missing","resourceVersion":"5"},"spec":{}}`},
		{method: "PUT", path: widgets + "/upd/status", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"upd","uid":"6b0e7c1e-0000-4000-8000-000000000000"}}`},
	}},
	{"subresources", []step{
		{method: "POST", path: widgets, body: widget("sub")},
		{method: "GET", path: widgets + "/sub/nope"},
		{method: "GET", path: widgets + "/missing/nope"},
		{method: "DELETE", path: widgets + "/sub/status"},
		{method: "POST", path: widgets + "/sub/status", body: widget("sub")},
		{method: "GET", path: widgets + "/sub/scale"},
		{method: "POST", path: widgets + "/sub"},
		{method: "GET", path: widgets + "/missing/status"},
	}},
	{"delete preconditions", []step{
		{method: "POST", path: widgets, body: widget("pre")},
		{method: "DELETE", path: widgets + "/pre", body: `{"preconditions":{"uid":"6b0e7c1e-0000-4000-8000-000000000000"}}`},
		{method: "DELETE", path: widgets + "/pre", body: `{"preconditions":{"resourceVersion":"1"}}`},
		{method: "DELETE", path: widgets + "/pre", body: `{"preconditions":{"uid":"{{uid:pre}}","resourceVersion":"{{rv:pre}}"}}`},
	}},
	{"delete collection", []step{
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"dc","labels":{"dc":"yes"}}}`},
		{method: "DELETE", path: "/apis/example.com/v1/widgets?labelSelector=dc%3Dyes"},
		{method: "POST", path: "/apis/example.com/v1/widgets", body: widget("nowhere")},
		{method: "DELETE", path: widgets + "?labelSelector=dc%3Dyes"},
		{method: "GET", path: widgets + "?labelSelector=dc%3Dyes"},
	}},
	{"lists", []step{
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"l1","labels":{"l":"yes"}}}`},
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"l2","labels":{"l":"yes"}}}`},
		{method: "GET", path: widgets + "?labelSelector=l%3Dyes"},
		{method: "GET", path: widgets + "?labelSelector=l%3Dno"},
		{method: "GET", path: widgets + "?labelSelector=l%3Dyes&limit=1"},
		{method: "GET", path: widgets + "?labelSelector=l%3Dyes&resourceVersion=0"},
		{method: "GET", path: widgets + "?labelSelector=l%3Dyes&resourceVersion=abc"},
		{method: "GET", path: widgets + "?labelSelector=l%3D%3D%3D"},
		{method: "GET", path: widgets + "?fieldSelector=metadata.name%3Dl1"},
		{method: "GET", path: widgets + "?fieldSelector=spec.color%3Dred"},
	}},
	{"dry run and field validation", []step{
		{method: "POST", path: widgets + "?dryRun=All", body: widget("dry")},
		{method: "GET", path: widgets + "/dry"},
		{method: "POST", path: widgets + "?dryRun=Some", body: widget("dry")},
		{method: "POST", path: widgets + "?fieldValidation=Strict", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"fv"},"spec":{"extra":1}}`},
		{method: "POST", path: widgets + "?fieldValidation=Warn", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"fv"},"spec":{"extra":1}}`},
		{method: "POST", path: widgets + "?fieldValidation=Ignore", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"fv2"},"spec":{"extra":1}}`},
		{method: "POST", path: widgets + "?fieldValidation=Bogus", body: widget("fv3")},
		{method: "POST", path: widgets + "?fieldValidation=Strict", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"dupkey"},"spec":{"color":"a","color":"b"}}`},
		{method: "DELETE", path: widgets + "/fv?dryRun=All"},
		{method: "GET", path: widgets + "/fv"},
		{method: "PATCH", path: widgets + "/fv?dryRun=All", body: `{"spec":{"color":"x"}}`, contentType: "application/merge-patch+json"},
	}},
	{"patch errors", []step{
		{method: "POST", path: widgets, body: widget("pe")},
		{method: "PATCH", path: widgets + "/pe", body: `{"spec":{"color":"x"}}`},
		{method: "PATCH", path: widgets + "/pe", body: `{"spec":`, contentType: "application/merge-patch+json"},
		{method: "PATCH", path: widgets + "/pe", body: `[{"op":"test","path":"/spec/color","value":"blue"}]`, contentType: "application/json-patch+json"},
		{method: "PATCH", path: widgets + "/pe", body: `{"spec":{"color":"x"}}`, contentType: "application/strategic-merge-patch+json"},
		{method: "PATCH", path: widgets + "/missing", body: `{"spec":{"color":"x"}}`, contentType: "application/merge-patch+json"},
		{method: "PATCH", path: widgets + "/pe", body: `{"metadata":{"resourceVersion":"1"}}`, contentType: "application/merge-patch+json"},
		{method: "PATCH", path: widgets + "/pe", body: `{"metadata":{"name":"other"}}`, contentType: "application/merge-patch+json"},
		{method: "PATCH", path: widgets + "/pe", body: `{"spec":{"size":"big"}}`, contentType: "application/merge-patch+json"},
		{method: "PATCH", path: widgets + "/pe/status", body: `{"status":{"ready":true}}`, contentType: "application/merge-patch+json"},
	}},
	{"finalizers and deletion", []step{
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"fin","finalizers":["example.com/hold"]}}`},
		{method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"fin2","finalizers":["hold"]}}`},
		{method: "DELETE", path: widgets + "/fin"},
		{method: "GET", path: widgets + "/fin"},
		{method: "DELETE", path: widgets + "/fin"},
		{method: "PATCH", path: widgets + "/fin", body: `{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}`, contentType: "application/merge-patch+json"},
		{method: "PATCH", path: widgets + "/fin", body: `{"metadata":{"finalizers":null}}`, contentType: "application/merge-patch+json"},
		{method: "GET", path: widgets + "/fin"},
		{method: "DELETE", path: widgets + "/fin2", body: `{"propagationPolicy":"Orphan"}`},
		{method: "DELETE", path: widgets + "/fin2", body: `{"propagationPolicy":"Bogus"}`},
		// Compared by code only: kube's answer keeps the orphan finalizer its garbage collector
		// (which the reference does not run) would remove.
		{method: "DELETE", path: widgets + "/fin2", body: `{"gracePeriodSeconds":-5}`, setup: true},
		{method: "DELETE", path: widgets + "/fin2", body: `{"kind":`},
	}},
	{"scale", []step{
		{method: "POST", path: gizmos, body: gizmo("sc")},
		{method: "GET", path: gizmos + "/sc/scale"},
		{method: "PUT", path: gizmos + "/sc/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"sc"},"spec":{"replicas":3}}`},
		{method: "PUT", path: gizmos + "/sc/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"sc","resourceVersion":"1"},"spec":{"replicas":4}}`},
		{method: "PUT", path: gizmos + "/sc/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"sc"},"spec":{"replicas":-1}}`},
		{method: "PATCH", path: gizmos + "/sc/scale", body: `{"spec":{"replicas":5}}`, contentType: "application/merge-patch+json"},
		{method: "GET", path: gizmos + "/sc"},
		{method: "GET", path: gizmos + "/missing/scale"},
	}},
	{"conversion webhook down", []step{
		{method: "POST", path: crds, body: strings.Replace(sprocketCRD, `"webhook":{`, `"webhookX":{`, 1)},
		{method: "POST", path: crds, body: strings.Replace(sprocketCRD, `"conversionReviewVersions":["v1"]`, `"conversionReviewVersions":["v9"]`, 1)},
		{method: "POST", path: crds, body: sprocketCRD, setup: true},
		{method: "GET", path: sprocketsV2, setup: true, waitFor: http.StatusOK},
		{method: "POST", path: sprocketsV1, body: `{"apiVersion":"example.com/v1","kind":"Sprocket","metadata":{"name":"s1"},"spec":{"size":"3"}}`},
		{method: "GET", path: sprocketsV1 + "/s1"},
		{method: "GET", path: sprocketsV2 + "/s1"},
		{method: "GET", path: sprocketsV2},
		{method: "POST", path: sprocketsV2, body: `{"apiVersion":"example.com/v2","kind":"Sprocket","metadata":{"name":"s2"},"spec":{"replicas":3}}`},
		{method: "PATCH", path: sprocketsV2 + "/s1", body: `{"spec":{"replicas":4}}`, contentType: "application/merge-patch+json"},
		{method: "DELETE", path: sprocketsV2 + "/s1"},
		{method: "DELETE", path: sprocketsV1 + "/s1"},
	}},
	{"unknown paths", []step{
		{method: "GET", path: "/apis/nothing.example.com"},
		{method: "GET", path: "/apis/nothing.example.com/v1"},
		{method: "GET", path: "/apis/example.com/v9"},
		{method: "GET", path: "/apis/example.com/v1/nothings"},
		{method: "GET", path: widgets + "/a/status/more"},
		{method: "GET", path: "/apis/example.com/v1/widgets/x"},
	}},
	{"cluster scoped", []step{
		{method: "POST", path: gizmos, body: gizmo("g1")},
		{method: "GET", path: gizmos + "/g1/nope"},
		{method: "DELETE", path: gizmos + "/g1/status"},
		{method: "DELETE", path: gizmos + "/g1/scale"},
		{method: "GET", path: gizmos + "/g1/scale"},
		{method: "PUT", path: gizmos + "/g1", body: `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g1","uid":"6b0e7c1e-0000-4000-8000-000000000000"}}`},
		{method: "DELETE", path: gizmos + "/g1", body: `{"preconditions":{"uid":"6b0e7c1e-0000-4000-8000-000000000000"}}`},
		{method: "DELETE", path: gizmos + "/g1", body: `{"preconditions":{"resourceVersion":"1"}}`},
		{method: "GET", path: "/apis/example.com/v1/namespaces/default/gizmos"},
		{method: "DELETE", path: gizmos + "/g1"},
	}},
}

// allScenarios is the hand-written scenarios followed by the generated tables, with the known
// differences marked.
func allScenarios() []scenario {
	all := append([]scenario{}, handWritten...)
	for _, gen := range generated {
		all = append(all, gen()...)
	}
	return markKnown(all, knownDifferences)
}

// markKnown marks the steps that known names with their reasons.
func markKnown(all []scenario, known map[knownStep]string) []scenario {
	return markSteps(all, known, func(s *step, reason string) { s.known = reason })
}

// markSteps calls mark on each step that known names, with its reason.
func markSteps(all []scenario, known map[knownStep]string, mark func(*step, string)) []scenario {
	marked := 0
	for i, sc := range all {
		for j := range sc.steps {
			if reason, ok := known[knownStep{sc.name, j}]; ok {
				mark(&all[i].steps[j], reason)
				marked++
			}
		}
	}
	if marked != len(known) {
		panic("a known difference names a scenario step that does not exist")
	}
	return all
}
