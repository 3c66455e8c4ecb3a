package kuberef

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// generated are the scenario tables built by loops over the dimensions of a behaviour.
var generated = []func() []scenario{
	dryRunScenarios, fieldValidationScenarios, listScenarios, paginationScenarios, watchScenarios,
	patchScenarios, applyScenarios, deletionScenarios, metadataScenarios, badBodyScenarios,
	methodScenarios, statusScaleScenarios, crdLifecycleScenarios, discoveryScenarios,
}

const (
	mergePatch     = "application/merge-patch+json"
	jsonPatch      = "application/json-patch+json"
	strategicPatch = "application/strategic-merge-patch+json"
	applyPatch     = "application/apply-patch+yaml"
)

// widgetWith is a Widget named name with extra metadata fields (JSON members, or "") and spec.
func widgetWith(name, meta, spec string) string {
	if meta != "" {
		meta = "," + meta
	}
	return fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":%q%s},"spec":%s}`, name, meta, spec)
}

func create(name string) step { return step{method: "POST", path: widgets, body: widget(name)} }

func get(name string) step { return step{method: "GET", path: widgets + "/" + name} }

// dryRunScenarios sends every write verb with each dryRun value, then reads what is stored.
func dryRunScenarios() []scenario {
	var out []scenario
	for i, dry := range []string{"All", "Bogus", "All&dryRun=All", "", "all"} {
		q := "?dryRun=" + dry
		n := func(verb string) string { return fmt.Sprintf("dry%d-%s", i, verb) }
		out = append(out,
			scenario{"dryRun=" + dry + " create", []step{
				{method: "POST", path: widgets + q, body: widget(n("c"))}, get(n("c")),
			}},
			scenario{"dryRun=" + dry + " update", []step{
				create(n("u")),
				{method: "PUT", path: widgets + "/" + n("u") + q, body: widgetWith(n("u"), "", `{"color":"blue"}`)},
				get(n("u")),
			}},
			scenario{"dryRun=" + dry + " merge patch", []step{
				create(n("m")),
				{method: "PATCH", path: widgets + "/" + n("m") + q, body: `{"spec":{"color":"blue"}}`, contentType: mergePatch},
				get(n("m")),
			}},
			scenario{"dryRun=" + dry + " json patch", []step{
				create(n("j")),
				{method: "PATCH", path: widgets + "/" + n("j") + q, body: `[{"op":"add","path":"/spec/size","value":7}]`, contentType: jsonPatch},
				get(n("j")),
			}},
			scenario{"dryRun=" + dry + " apply", []step{
				{method: "PATCH", path: widgets + "/" + n("a") + q + "&fieldManager=m", body: widgetWith(n("a"), "", `{"color":"blue"}`), contentType: applyPatch},
				get(n("a")),
			}},
			scenario{"dryRun=" + dry + " delete", []step{
				create(n("d")),
				{method: "DELETE", path: widgets + "/" + n("d") + q},
				get(n("d")),
			}},
			scenario{"dryRun=" + dry + " delete with a finalizer", []step{
				{method: "POST", path: widgets, body: widgetWith(n("f"), `"finalizers":["example.com/hold"]`, `{}`)},
				{method: "DELETE", path: widgets + "/" + n("f") + q},
				get(n("f")),
			}},
			scenario{"dryRun=" + dry + " delete collection", []step{
				{method: "POST", path: widgets, body: widgetWith(n("dc"), `"labels":{"dc":"`+n("dc")+`"}`, `{}`)},
				{method: "DELETE", path: widgets + q + "&labelSelector=dc%3D" + n("dc")},
				{method: "GET", path: widgets + "?labelSelector=dc%3D" + n("dc")},
			}},
			scenario{"dryRun=" + dry + " status", []step{
				create(n("s")),
				{method: "PUT", path: widgets + "/" + n("s") + "/status" + q, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + n("s") + `"},"status":{"ready":true}}`},
				{method: "PATCH", path: widgets + "/" + n("s") + "/status" + q, body: `{"status":{"ready":false}}`, contentType: mergePatch},
				get(n("s")),
			}},
			scenario{"dryRun=" + dry + " scale", []step{
				{method: "POST", path: gizmos, body: gizmo(n("sc"))},
				{method: "PUT", path: gizmos + "/" + n("sc") + "/scale" + q, body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"` + n("sc") + `"},"spec":{"replicas":3}}`},
				{method: "PATCH", path: gizmos + "/" + n("sc") + "/scale" + q, body: `{"spec":{"replicas":4}}`, contentType: mergePatch},
				{method: "GET", path: gizmos + "/" + n("sc")},
			}},
		)
	}
	return out
}

// fieldValidationScenarios sends unknown and duplicate fields with each fieldValidation value
// through each verb that decodes an object.
func fieldValidationScenarios() []scenario {
	bodies := []struct{ name, meta, spec string }{
		{"unknown spec field", "", `{"color":"a","extra":1}`},
		{"unknown metadata field", `"extra":1`, `{"color":"a"}`},
		{"duplicate spec field", "", `{"color":"a","color":"b"}`},
		{"duplicate metadata field", `"labels":{"a":"1"},"labels":{"b":"2"}`, `{"color":"a"}`},
		{"unknown and duplicate", "", `{"color":"a","extra":1,"color":"b"}`},
		{"unknown nested field", "", `{"color":"a","size":1,"nested":{"a":{"b":1}}}`},
	}
	var out []scenario
	for vi, mode := range []string{"", "Strict", "Warn", "Ignore", "strict"} {
		for bi, b := range bodies {
			n := fmt.Sprintf("fv%d-%d", vi, bi)
			q := "?fieldValidation=" + mode
			label := fmt.Sprintf("fieldValidation=%s %s ", mode, b.name)
			out = append(out,
				scenario{label + "create", []step{
					{method: "POST", path: widgets + q, body: widgetWith(n+"c", b.meta, b.spec)},
				}},
				scenario{label + "update", []step{
					create(n + "u"),
					{method: "PUT", path: widgets + "/" + n + "u" + q, body: widgetWith(n+"u", b.meta, b.spec)},
				}},
				scenario{label + "merge patch", []step{
					create(n + "m"),
					{method: "PATCH", path: widgets + "/" + n + "m" + q, body: `{"metadata":{` + b.meta + `},"spec":` + b.spec + `}`, contentType: mergePatch},
				}},
				scenario{label + "apply", []step{
					{method: "PATCH", path: widgets + "/" + n + "a" + q + "&fieldManager=m", body: widgetWith(n+"a", b.meta, b.spec), contentType: applyPatch},
				}},
			)
		}
	}
	return out
}

// listScenarios lists with each resourceVersion, resourceVersionMatch and limit.
func listScenarios() []scenario {
	out := []scenario{{"list table objects", []step{
		{method: "POST", path: widgets, body: widgetWith("lt1", `"labels":{"lt":"yes"}`, `{"color":"a"}`)},
		{method: "POST", path: widgets, body: widgetWith("lt2", `"labels":{"lt":"yes"}`, `{"color":"b"}`)},
		{method: "POST", path: widgets, body: widgetWith("lt3", `"labels":{"lt":"yes"}`, `{"color":"c"}`)},
	}}}
	for _, rv := range []string{"", "0", "{{rv:lt3}}", "abc", "-1"} {
		for _, match := range []string{"", "NotOlderThan", "Exact", "Bogus"} {
			for _, limit := range []string{"", "1", "5", "0", "-3"} {
				q := "?labelSelector=lt%3Dyes"
				for k, v := range map[string]string{"resourceVersion": rv, "resourceVersionMatch": match, "limit": limit} {
					if v != "" {
						q += "&" + k + "=" + v
					}
				}
				name := fmt.Sprintf("list rv=%q match=%q limit=%q", rv, match, limit)
				// lt3 is read first so that {{rv:lt3}} is known in the scenario.
				out = append(out, scenario{name, []step{get("lt3"), {method: "GET", path: widgets + q}}})
			}
		}
	}
	return out
}

// paginationScenarios walks pages with continue tokens, under each selector and scope.
func paginationScenarios() []scenario {
	var setup []step
	for i := range 5 {
		setup = append(setup, step{method: "POST", path: widgets, body: widgetWith(fmt.Sprintf("pg%d", i), fmt.Sprintf(`"labels":{"pg":"yes","odd":"%v"}`, i%2 == 1), `{}`)})
	}
	out := []scenario{{"pages objects", setup}}
	for _, sel := range []string{"pg%3Dyes", "pg%3Dyes,odd%3Dtrue", "pg%3Dyes,odd!%3Dtrue"} {
		for _, limit := range []int{1, 2, 3} {
			for _, scope := range []string{widgets, "/apis/example.com/v1/widgets"} {
				steps := []step{{method: "GET", path: scope + "?labelSelector=" + sel + fmt.Sprintf("&limit=%d", limit)}}
				for range 5 / limit {
					steps = append(steps, step{method: "GET", path: scope + "?labelSelector=" + sel + fmt.Sprintf("&limit=%d", limit) + "&continue={{continue}}"})
				}
				out = append(out, scenario{fmt.Sprintf("pages %s limit %d on %s", sel, limit, scope), steps})
			}
		}
	}
	out = append(out,
		scenario{"continue errors", []step{
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&limit=2"},
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&limit=2&continue={{continue}}&resourceVersion=0"},
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&limit=2&continue={{continue}}&resourceVersionMatch=Exact&resourceVersion={{listrv}}"},
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&limit=2&continue=notbase64!"},
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&limit=2&continue=e30"},
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&limit=2&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0"},
		}},
		scenario{"a page then a write", []step{
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&limit=2"},
			{method: "POST", path: widgets, body: widgetWith("pg9", `"labels":{"pg":"yes"}`, `{}`)},
			{method: "DELETE", path: widgets + "/pg0"},
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&limit=2&continue={{continue}}"},
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&limit=10&continue={{continue}}"},
		}},
		scenario{"exact list at an earlier revision", []step{
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes"},
			{method: "POST", path: widgets, body: widgetWith("pg10", `"labels":{"pg":"yes"}`, `{}`)},
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&resourceVersion={{listrv}}&resourceVersionMatch=Exact"},
			{method: "GET", path: widgets + "?labelSelector=pg%3Dyes&resourceVersion={{listrv}}&resourceVersionMatch=NotOlderThan"},
		}},
	)
	return out
}

// watchScenarios open watches from each starting point and read their events.
func watchScenarios() []scenario {
	wl := func(name, labels string) string { return widgetWith(name, `"labels":{`+labels+`}`, `{"color":"a"}`) }
	w := widgets + "?watch=1&labelSelector=wt%3D"
	out := []scenario{
		{"watch from a resourceVersion", []step{
			{method: "POST", path: widgets, body: wl("wa1", `"wt":"a"`)},
			{watch: "w", method: "GET", path: w + "a&resourceVersion={{rv:wa1}}"},
			{method: "PATCH", path: widgets + "/wa1", body: `{"spec":{"color":"b"}}`, contentType: mergePatch},
			{method: "POST", path: widgets, body: wl("wa2", `"wt":"a"`)},
			{method: "DELETE", path: widgets + "/wa1"},
			{watch: "w", events: 3},
		}},
		{"watch replays events after a resourceVersion", []step{
			{method: "POST", path: widgets, body: wl("wb1", `"wt":"b"`)},
			{method: "PATCH", path: widgets + "/wb1", body: `{"spec":{"color":"b"}}`, contentType: mergePatch},
			{method: "PATCH", path: widgets + "/wb1", body: `{"spec":{"color":"c"}}`, contentType: mergePatch},
			{method: "DELETE", path: widgets + "/wb1"},
			{watch: "w", method: "GET", path: w + "b&resourceVersion={{rv:wb1}}", events: 1},
		}},
		{"watch from 0 and from now", []step{
			{method: "POST", path: widgets, body: wl("wc1", `"wt":"c"`)},
			{method: "POST", path: widgets, body: wl("wc2", `"wt":"c"`)},
			{watch: "zero", method: "GET", path: w + "c&resourceVersion=0", events: 2},
			{watch: "now", method: "GET", path: w + "c"},
			{method: "POST", path: widgets, body: wl("wc3", `"wt":"c"`)},
			{watch: "now", events: 1},
			{watch: "zero", events: 1},
		}},
		{"watch bookmarks and initial events", []step{
			{method: "POST", path: widgets, body: wl("wd1", `"wt":"d"`)},
			{method: "POST", path: widgets, body: wl("wd2", `"wt":"d"`)},
			{watch: "i", method: "GET", path: w + "d&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", events: 3},
			{watch: "j", method: "GET", path: w + "d&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=0", events: 3},
			{watch: "k", method: "GET", path: w + "d&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={{rv:wd2}}", events: 3},
			{watch: "l", method: "GET", path: w + "d&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={{rv:wd1}}"},
			{method: "POST", path: widgets, body: wl("wd3", `"wt":"d"`)},
			{watch: "l", events: 1},
			{watch: "i", events: 1},
		}},
		{"watch parameter errors", []step{
			{watch: "e1", method: "GET", path: w + "e&sendInitialEvents=true", events: 1},
			{watch: "e2", method: "GET", path: w + "e&sendInitialEvents=true&resourceVersionMatch=Exact", events: 1},
			{watch: "e3", method: "GET", path: w + "e&resourceVersionMatch=NotOlderThan", events: 1},
			{watch: "e4", method: "GET", path: w + "e&resourceVersion=abc", events: 1},
			{watch: "e5", method: "GET", path: w + "e&resourceVersion=1", events: 1},
			{watch: "e6", method: "GET", path: w + "e&labelSelector=a%3D%3D%3D", events: 1},
			{watch: "e7", method: "GET", path: w + "e&fieldSelector=spec.color%3Da", events: 1},
			{watch: "e8", method: "GET", path: w + "e&timeoutSeconds=-1", events: 1},
			{watch: "e9", method: "GET", path: w + "e&limit=1&continue=abc", events: 1},
			{watch: "e10", method: "GET", path: widgets + "/nope?watch=1", events: 1},
		}},
		{"watch selectors", []step{
			{method: "POST", path: widgets, body: wl("wf1", `"wt":"f","tier":"x"`)},
			{watch: "lab", method: "GET", path: w + "f&labelSelector=tier%3Dy&resourceVersion={{rv:wf1}}"},
			{watch: "name", method: "GET", path: widgets + "?watch=1&fieldSelector=metadata.name%3Dwf2&resourceVersion={{rv:wf1}}"},
			{watch: "ns", method: "GET", path: widgets + "?watch=1&fieldSelector=metadata.namespace%3Ddefault,metadata.name%3Dwf1&resourceVersion={{rv:wf1}}"},
			{method: "POST", path: widgets, body: wl("wf2", `"wt":"f","tier":"y"`)},
			{method: "PATCH", path: widgets + "/wf1", body: `{"metadata":{"labels":{"tier":"y"}}}`, contentType: mergePatch},
			{method: "PATCH", path: widgets + "/wf1", body: `{"metadata":{"labels":{"tier":"z"}}}`, contentType: mergePatch},
			{method: "PATCH", path: widgets + "/wf2", body: `{"metadata":{"labels":{"tier":"z"}}}`, contentType: mergePatch},
			{watch: "lab", events: 4},
			{watch: "name", events: 2},
			{watch: "ns", events: 2},
		}},
		{"watch paths", []step{
			{method: "POST", path: widgets, body: wl("wg1", `"wt":"g"`)},
			{watch: "legacy", method: "GET", path: "/apis/example.com/v1/watch/namespaces/default/widgets?labelSelector=wt%3Dg&resourceVersion=0", events: 1},
			{watch: "one", method: "GET", path: "/apis/example.com/v1/watch/namespaces/default/widgets/wg1?resourceVersion=0", events: 1},
			{watch: "all", method: "GET", path: "/apis/example.com/v1/widgets?watch=true&labelSelector=wt%3Dg&resourceVersion=0", events: 1},
			{watch: "cluster", method: "GET", path: gizmos + "?watch=1&fieldSelector=metadata.name%3Dnone&resourceVersion=0"},
			{watch: "false", method: "GET", path: widgets + "?watch=false&labelSelector=wt%3Dg"},
			{watch: "bad", method: "GET", path: widgets + "?watch=maybe&labelSelector=wt%3Dg"},
		}},
		{"watch with a timeout", []step{
			{method: "POST", path: widgets, body: wl("wh1", `"wt":"h"`)},
			{watch: "t", method: "GET", path: w + "h&resourceVersion=0&timeoutSeconds=1", events: 2},
		}},
	}
	return out
}

// patchScenarios sends each patch type to each kind of target, valid and not.
func patchScenarios() []scenario {
	patches := []struct {
		name, contentType, body string
	}{
		{"merge", mergePatch, `{"spec":{"color":"blue"}}`},
		{"merge null", mergePatch, `{"spec":{"color":null}}`},
		{"merge labels", mergePatch, `{"metadata":{"labels":{"a":"b"}}}`},
		{"merge invalid label", mergePatch, `{"metadata":{"labels":{"a":"b c"}}}`},
		{"merge wrong type", mergePatch, `{"spec":"x"}`},
		{"merge array", mergePatch, `[1]`},
		{"merge kind", mergePatch, `{"kind":"Other"}`},
		{"merge apiVersion", mergePatch, `{"apiVersion":"example.com/v2"}`},
		{"merge uid", mergePatch, `{"metadata":{"uid":"6b0e7c1e-0000-4000-8000-000000000000"}}`},
		{"merge namespace", mergePatch, `{"metadata":{"namespace":"other"}}`},
		{"json add", jsonPatch, `[{"op":"add","path":"/spec/size","value":4}]`},
		{"json remove missing", jsonPatch, `[{"op":"remove","path":"/spec/nothing"}]`},
		{"json test ok", jsonPatch, `[{"op":"test","path":"/spec/color","value":"red"},{"op":"replace","path":"/spec/color","value":"t"}]`},
		{"json move", jsonPatch, `[{"op":"move","from":"/spec/color","path":"/metadata/labels"}]`},
		{"json copy", jsonPatch, `[{"op":"copy","from":"/metadata/name","path":"/spec/color"}]`},
		{"json bad op", jsonPatch, `[{"op":"frob","path":"/spec"}]`},
		{"json not array", jsonPatch, `{"op":"add"}`},
		{"json empty", jsonPatch, `[]`},
		{"json bad path", jsonPatch, `[{"op":"add","path":"spec","value":1}]`},
		{"strategic", strategicPatch, `{"spec":{"color":"x"}}`},
		{"unknown type", "application/x-patch", `{}`},
		{"text", "text/plain", `{}`},
		{"empty merge", mergePatch, ``},
		{"merge finalizers", mergePatch, `{"metadata":{"finalizers":["example.com/a"]}}`},
		{"merge generation", mergePatch, `{"metadata":{"generation":99}}`},
		{"merge creationTimestamp", mergePatch, `{"metadata":{"creationTimestamp":"2001-01-01T00:00:00Z"}}`},
	}
	var out []scenario
	for i, p := range patches {
		n := fmt.Sprintf("pt%d", i)
		out = append(out, scenario{"patch " + p.name, []step{
			create(n),
			{method: "PATCH", path: widgets + "/" + n, body: p.body, contentType: p.contentType},
			{method: "PATCH", path: widgets + "/" + n + "/status", body: p.body, contentType: p.contentType},
			get(n),
		}})
	}
	return out
}

// applyScenarios exercise server-side apply: ownership, conflicts and force.
func applyScenarios() []scenario {
	ap := func(name, manager, spec, extra string) step {
		return step{method: "PATCH", path: widgets + "/" + name + "?fieldManager=" + manager + extra, body: widgetWith(name, "", spec), contentType: applyPatch}
	}
	return []scenario{
		{"apply create, conflict, force", []step{
			ap("ap1", "alice", `{"color":"red"}`, ""),
			ap("ap1", "bob", `{"color":"blue"}`, ""),
			ap("ap1", "bob", `{"color":"blue"}`, "&force=true"),
			ap("ap1", "alice", `{"color":"red","size":2}`, ""),
			ap("ap1", "alice", `{"size":2}`, ""),
			get("ap1"),
		}},
		{"apply errors", []step{
			{method: "PATCH", path: widgets + "/ap2", body: widgetWith("ap2", "", `{}`), contentType: applyPatch},
			ap("ap2", "m", `{}`, "&force=maybe"),
			{method: "PATCH", path: widgets + "/ap2?fieldManager=m", body: widgetWith("other", "", `{}`), contentType: applyPatch},
			{method: "PATCH", path: widgets + "/ap2?fieldManager=m", body: `{"apiVersion":"example.com/v1","kind":"Widget"}`, contentType: applyPatch},
			{method: "PATCH", path: widgets + "/ap2?fieldManager=m", body: `apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ap2\nspec:\n  color: [`, contentType: applyPatch},
			{method: "PATCH", path: widgets + "/ap2?fieldManager=m", body: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ap2\nspec:\n  color: yaml\n", contentType: applyPatch},
			{method: "PATCH", path: widgets + "/ap2?fieldManager=m&force=true", body: `{"spec":{"color":"x"}}`, contentType: mergePatch},
			{method: "PATCH", path: widgets + "/ap2?fieldManager=" + strings.Repeat("m", 200), body: widgetWith("ap2", "", `{}`), contentType: applyPatch},
			{method: "PATCH", path: widgets + "/ap2?fieldManager=m", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"ap2","managedFields":[{"manager":"x"}]}}`, contentType: applyPatch},
			ap("ap2", "m", `{"size":"big"}`, ""),
		}},
		{"apply to status and scale", []step{
			ap("ap3", "m", `{"color":"red"}`, ""),
			{method: "PATCH", path: widgets + "/ap3/status?fieldManager=s", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"ap3"},"status":{"ready":true}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap4?fieldManager=m", body: `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"ap4"},"spec":{"replicas":1}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap4/scale?fieldManager=hpa", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ap4"},"spec":{"replicas":3}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap4?fieldManager=m", body: `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"ap4"},"spec":{"replicas":1}}`, contentType: applyPatch},
			get("ap3"),
			{method: "PATCH", path: gizmos + "/ap4/scale?fieldManager=hpa&force=true", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ap4"},"spec":{"replicas":3}}`, contentType: applyPatch},
			{method: "GET", path: gizmos + "/ap4"},
			{method: "PATCH", path: gizmos + "/ap4/scale?fieldManager=hpa", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ap4"},"spec":{"replicas":4}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap4/scale?fieldManager=other", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ap4"},"spec":{"replicas":4}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap4/scale?fieldManager=hpa", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ap4"}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap4/scale?fieldManager=hpa", body: `{"apiVersion":"apps/v1","kind":"Scale","metadata":{"name":"ap4"},"spec":{"replicas":5}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap4?fieldManager=m", body: `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"ap4"},"spec":{"replicas":1}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap6/scale?fieldManager=hpa", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ap6"},"spec":{"replicas":3}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap4/scale?fieldManager=other", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ap4"},"spec":{"replicas":1}}`, contentType: applyPatch},
			{method: "PATCH", path: gizmos + "/ap4/scale?fieldManager=other", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: ap4\nspec:\n  replicas: 1\n  replicas: 1\n", contentType: applyPatch},
			{method: "GET", path: gizmos + "/ap4"},
		}},
		{"update then apply takes ownership", []step{
			create("ap5"),
			ap("ap5", "m", `{"color":"red"}`, ""),
			{method: "PUT", path: widgets + "/ap5?fieldManager=editor", body: widgetWith("ap5", "", `{"color":"green"}`)},
			ap("ap5", "m", `{"color":"red"}`, ""),
			{method: "PATCH", path: widgets + "/ap5?fieldManager=editor", body: `{"metadata":{"managedFields":[{}]}}`, contentType: mergePatch},
			{method: "PATCH", path: widgets + "/ap5?fieldManager=editor", body: `{"metadata":{"managedFields":[]}}`, contentType: mergePatch},
		}},
	}
}

// deletionScenarios delete with each propagationPolicy and precondition, with and without
// finalizers.
func deletionScenarios() []scenario {
	var out []scenario
	opts := []string{``, `{}`, `{"propagationPolicy":"Orphan"}`, `{"propagationPolicy":"Background"}`, `{"propagationPolicy":"Foreground"}`,
		`{"orphanDependents":true}`, `{"orphanDependents":false}`, `{"orphanDependents":true,"propagationPolicy":"Background"}`,
		`{"gracePeriodSeconds":0}`, `{"gracePeriodSeconds":30}`, `{"apiVersion":"v1","kind":"DeleteOptions"}`, `{"kind":"Pod"}`,
		`{"preconditions":{"uid":""}}`, `{"dryRun":["All"]}`, `{"dryRun":["Nope"]}`, `[]`}
	for i, o := range opts {
		for _, fin := range []bool{false, true} {
			n := fmt.Sprintf("del%d-%v", i, fin)
			meta := ""
			if fin {
				meta = `"finalizers":["example.com/hold"]`
			}
			steps := []step{
				{method: "POST", path: widgets, body: widgetWith(n, meta, `{}`)},
				{method: "DELETE", path: widgets + "/" + n, body: o},
			}
			// The reference runs no garbage collector to finish orphaning and foreground
			// deletion, so what follows such a delete is not compared.
			if strings.Contains(o, "Orphan") || strings.Contains(o, "Foreground") || strings.Contains(o, "orphanDependents\":true") {
				out = append(out, scenario{fmt.Sprintf("delete %s finalizers=%v", o, fin), steps})
				continue
			}
			steps = append(steps, get(n))
			if fin {
				steps = append(steps,
					step{method: "PATCH", path: widgets + "/" + n, body: `{"metadata":{"finalizers":null}}`, contentType: mergePatch},
					get(n))
			}
			out = append(out, scenario{fmt.Sprintf("delete %s finalizers=%v", o, fin), steps})
		}
	}
	out = append(out, scenario{"delete query parameters", []step{
		create("dq1"),
		{method: "DELETE", path: widgets + "/dq1?propagationPolicy=Bogus"},
		{method: "DELETE", path: widgets + "/dq1?gracePeriodSeconds=abc"},
		{method: "DELETE", path: widgets + "/dq1?propagationPolicy=Orphan", body: `{"propagationPolicy":"Background"}`},
		create("dq1"),
		{method: "DELETE", path: widgets + "/dq1?preconditions.uid=x"},
	}})
	return out
}

// metadataScenarios create objects whose names, labels and annotations are each valid or not.
func metadataScenarios() []scenario {
	names := []string{"a", "a.b", "a-b", "-a", "a-", "A", "a_b", "a..b", strings.Repeat("a", 63), strings.Repeat("a", 64),
		strings.Repeat("a", 253), strings.Repeat("a", 254), "a/b", "a%b", "..", "a b", "1", "a.b-c.d"}
	var out []scenario
	for i, name := range names {
		out = append(out, scenario{fmt.Sprintf("name %d %q", i, name), []step{
			{method: "POST", path: widgets, body: widgetWith(name, "", `{}`)},
		}})
	}
	metas := []string{
		`"labels":{"a":"b"}`, `"labels":{"a/b/c":"x"}`, `"labels":{"example.com/x":"y"}`, `"labels":{"x":"` + strings.Repeat("v", 64) + `"}`,
		`"labels":{"x":"-v"}`, `"labels":{"":"v"}`, `"labels":{"x":1}`, `"labels":["x"]`, `"annotations":{"a":"` + strings.Repeat("v", 300000) + `"}`,
		`"annotations":{"A B":"v"}`, `"annotations":{"a":1}`, `"finalizers":["a/b"]`, `"finalizers":["a b"]`, `"finalizers":["kubernetes"]`,
		`"finalizers":["example.com/x","example.com/x"]`, `"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"6b0e7c1e-0000-4000-8000-000000000000"}]`,
		`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"c"}]`, `"generateName":"gen-"`, `"generation":7`, `"resourceVersion":"5"`,
		`"uid":"6b0e7c1e-0000-4000-8000-000000000000"`, `"namespace":"other"`, `"namespace":"default"`, `"deletionTimestamp":"2020-01-01T00:00:00Z"`,
		`"creationTimestamp":"2001-01-01T00:00:00Z"`, `"selfLink":"/x"`, `"managedFields":[{"manager":"m","operation":"Apply"}]`, `"deletionGracePeriodSeconds":5`,
	}
	for i, m := range metas {
		n := fmt.Sprintf("meta%d", i)
		out = append(out, scenario{fmt.Sprintf("metadata %d %.60s", i, m), []step{
			{method: "POST", path: widgets, body: widgetWith(n, m, `{}`)},
			create(n + "u"),
			{method: "PUT", path: widgets + "/" + n + "u", body: widgetWith(n+"u", m, `{}`)},
		}})
	}
	return out
}

// badBodyScenarios send bodies that are not a Widget, by create and update.
func badBodyScenarios() []scenario {
	bodies := []struct{ body, contentType string }{
		{``, ""}, {`null`, ""}, {`[]`, ""}, {`"x"`, ""}, {`1`, ""}, {`{"kind":"Widget"}`, ""}, {`{"apiVersion":"example.com/v1"}`, ""},
		{`{"apiVersion":"v1","kind":"Widget","metadata":{"name":"x"}}`, ""}, {`{"apiVersion":"example.com/v1","kind":"Widget","metadata":"x"}`, ""},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"},"spec":[]}`, ""},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"},"spec":{"color":1}}`, ""},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}} trailing`, ""},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}{}`, ""},
		{"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: bby\n", "application/yaml"},
		{"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: [\n", "application/yaml"},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"bbt"}}`, "text/plain"},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"bbj"}}`, "application/json; charset=utf-8"},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}`, ""},
		{`{"apiVersion":"example.com/v1","kind":"WidgetList","items":[]}`, ""},
		{`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"bbn","namespace":"other"}}`, ""},
	}
	var out []scenario
	for i, b := range bodies {
		n := fmt.Sprintf("bb%d", i)
		out = append(out, scenario{fmt.Sprintf("bad body %d %.50s %s", i, b.body, b.contentType), []step{
			{method: "POST", path: widgets, body: b.body, contentType: b.contentType},
			create(n),
			{method: "PUT", path: widgets + "/" + n, body: b.body, contentType: b.contentType},
		}})
	}
	return out
}

// methodScenarios send each method to each kind of path.
func methodScenarios() []scenario {
	paths := []string{widgets, widgets + "/mt", widgets + "/mt/status", gizmos + "/mtg/scale", "/apis/example.com/v1/widgets", gizmos, widgets + "/mt/finalize"}
	var out []scenario
	for i, p := range paths {
		var steps []step
		if i == 0 {
			steps = append(steps, create("mt"), step{method: "POST", path: gizmos, body: gizmo("mtg")})
		}
		for _, m := range []string{"GET", "PUT", "PATCH", "DELETE", "POST", "OPTIONS", "CONNECT", "TRACE", "FROB"} {
			if m == "DELETE" && (p == widgets+"/mt" || p == widgets || p == gizmos) {
				continue
			}
			contentType := ""
			if m == "PATCH" {
				contentType = mergePatch
			}
			// The selector keeps a list to the scenario's own objects (none).
			steps = append(steps, step{method: m, path: p + "?labelSelector=mt%3Dnone", body: `{}`, contentType: contentType})
		}
		out = append(out, scenario{"methods on " + p, steps})
	}
	return out
}

// statusScaleScenarios write through /status and /scale what each ignores or rejects.
func statusScaleScenarios() []scenario {
	return []scenario{
		{"status ignores spec, main ignores status", []step{
			create("ss1"),
			{method: "PUT", path: widgets + "/ss1/status", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"ss1","labels":{"x":"y"}},"spec":{"color":"z"},"status":{"ready":true}}`},
			{method: "PUT", path: widgets + "/ss1", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"ss1"},"spec":{"color":"q"},"status":{"ready":false}}`},
			{method: "PATCH", path: widgets + "/ss1/status", body: `{"status":{"ready":"yes"}}`, contentType: mergePatch},
			{method: "PATCH", path: widgets + "/ss1/status", body: `[{"op":"replace","path":"/status/ready","value":false}]`, contentType: jsonPatch},
			{method: "PUT", path: widgets + "/ss1/status", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"ss1","resourceVersion":"1"},"status":{}}`},
			{method: "PUT", path: widgets + "/ss1/status", body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"other"},"status":{}}`},
			get("ss1"),
		}},
		{"scale errors", []step{
			{method: "POST", path: gizmos, body: gizmo("ss2")},
			{method: "PUT", path: gizmos + "/ss2/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"other"},"spec":{"replicas":3}}`},
			{method: "PUT", path: gizmos + "/ss2/scale", body: `{"apiVersion":"apps/v1","kind":"Scale","metadata":{"name":"ss2"},"spec":{"replicas":3}}`},
			{method: "PUT", path: gizmos + "/ss2/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ss2"},"spec":{"replicas":"x"}}`},
			{method: "PUT", path: gizmos + "/ss2/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ss2"},"spec":{}}`},
			{method: "PATCH", path: gizmos + "/ss2/scale", body: `[{"op":"replace","path":"/spec/replicas","value":2}]`, contentType: jsonPatch},
			{method: "PATCH", path: gizmos + "/ss2/scale", body: `{"spec":{"replicas":null}}`, contentType: mergePatch},
			{method: "PUT", path: gizmos + "/ss2/status", body: `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"ss2"},"status":{"replicas":2}}`},
			{method: "GET", path: gizmos + "/ss2/scale"},
			{method: "PUT", path: gizmos + "/new/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"new"},"spec":{"replicas":3}}`},
			{method: "PUT", path: gizmos + "/ss2/scale?fieldValidation=Strict", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ss2"},"spec":{"replicas":3,"extra":1}}`},
			{method: "PUT", path: gizmos + "/ss2/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"ss2"},"spec":{"replicas":4,"extra":1}}`},
			{method: "PATCH", path: gizmos + "/ss2/scale", body: `{"spec":{"replicas":"x"}}`, contentType: mergePatch},
			{method: "PATCH", path: gizmos + "/ss2/scale", body: `{"apiVersion":"apps/v1"}`, contentType: mergePatch},
		}},
	}
}

// lifecycleCRD has two versions, defaults, printer columns, selectable fields and status.
const lifecycleCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"things.life.example.com"},
"spec":{"group":"life.example.com","scope":"Namespaced",
 "names":{"plural":"things","singular":"thing","kind":"Thing","shortNames":["th"],"categories":["all","stuff"]},
 "versions":[
  {"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "selectableFields":[{"jsonPath":".spec.color"}],
   "additionalPrinterColumns":[{"name":"Color","type":"string","jsonPath":".spec.color"},{"name":"Size","type":"integer","jsonPath":".spec.size","priority":1}],
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"color":{"type":"string","default":"grey","enum":["grey","red","blue"]},"size":{"type":"integer","default":1,"minimum":0},"tags":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"}}},
    "status":{"type":"object","properties":{"conditions":{"type":"array","items":{"type":"object","required":["type","status"],"properties":{"type":{"type":"string"},"status":{"type":"string"},"lastTransitionTime":{"type":"string","format":"date-time"}}},"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["type"]}}}}}}},
  {"name":"v2","served":false,"storage":false,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

const things = "/apis/life.example.com/v1/namespaces/default/things"

// crdLifecycleScenarios create a CRD with the features of kube's CRDs, use them, change the CRD
// and delete it.
func crdLifecycleScenarios() []scenario {
	thing := func(name, spec string) string {
		return `{"apiVersion":"life.example.com/v1","kind":"Thing","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	table := "application/json;as=Table;v=v1;g=meta.k8s.io"
	return []scenario{
		{"crd lifecycle", []step{
			{method: "POST", path: crds, body: lifecycleCRD, setup: true},
			{method: "GET", path: things, setup: true, waitFor: http.StatusOK},
			{method: "POST", path: things, body: thing("t1", `{}`)},
			{method: "POST", path: things, body: thing("t2", `{"color":"red","size":3,"tags":["a","b"]}`)},
			{method: "POST", path: things, body: thing("t3", `{"color":"green"}`)},
			{method: "POST", path: things, body: thing("t4", `{"size":-1,"tags":["a","a"]}`)},
			{method: "GET", path: things + "?fieldSelector=spec.color%3Dred"},
			{method: "GET", path: things + "?fieldSelector=spec.color!%3Dred"},
			{method: "GET", path: things + "?fieldSelector=spec.size%3D3"},
			{method: "GET", path: things, accept: table},
			{method: "GET", path: things + "/t2", accept: table},
			{method: "GET", path: things + "?includeObject=None", accept: table},
			{method: "GET", path: things + "?includeObject=Object&limit=1", accept: table},
			{method: "GET", path: things, accept: "application/json;as=Table;v=v1beta1;g=meta.k8s.io"},
			{method: "GET", path: things, accept: "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"},
			{method: "GET", path: things + "/t1", accept: "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"},
			{method: "GET", path: things, accept: "text/html"},
			{method: "PUT", path: things + "/t1/status", body: `{"apiVersion":"life.example.com/v1","kind":"Thing","metadata":{"name":"t1"},"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z"},{"type":"Ready","status":"False"}]}}`},
			{method: "PUT", path: things + "/t1/status", body: `{"apiVersion":"life.example.com/v1","kind":"Thing","metadata":{"name":"t1"},"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}`},
			{method: "PATCH", path: things + "/t1/status?fieldManager=c", body: `{"apiVersion":"life.example.com/v1","kind":"Thing","metadata":{"name":"t1"},"status":{"conditions":[{"type":"Synced","status":"True"}]}}`, contentType: applyPatch},
			{method: "GET", path: "/apis/life.example.com/v2/namespaces/default/things"},
			{method: "GET", path: crds + "/things.life.example.com", pick: crdSpec},
			{method: "PATCH", path: crds + "/things.life.example.com", body: `[{"op":"replace","path":"/spec/versions/1/served","value":true}]`, contentType: jsonPatch, setup: true},
			{method: "GET", path: "/apis/life.example.com/v2/namespaces/default/things", setup: true, waitFor: http.StatusOK},
			{method: "GET", path: "/apis/life.example.com/v2/namespaces/default/things/t2"},
			{method: "PATCH", path: things + "/t2", body: `{"apiVersion":"life.example.com/v2","spec":{"extra":1}}`, contentType: mergePatch},
			{method: "PATCH", path: things + "/t1/status", body: `{"apiVersion":"life.example.com/v2","spec":{"extra":1}}`, contentType: mergePatch},
			{method: "GET", path: crds + "/things.life.example.com", pick: crdSpec},
			{method: "DELETE", path: crds + "/things.life.example.com", setup: true},
			{method: "GET", path: things, setup: true, waitFor: http.StatusNotFound},
			{method: "GET", path: things + "/t1"},
		}},
		{"crd errors", []step{
			{method: "POST", path: crds, body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"bad"},"spec":{}}`},
			{method: "POST", path: crds, body: strings.Replace(lifecycleCRD, "things.life", "stuff.life", 1)},
			{method: "POST", path: crds, body: strings.Replace(lifecycleCRD, `"storage":false`, `"storage":true`, 1)},
			{method: "POST", path: crds, body: strings.Replace(lifecycleCRD, `"jsonPath":".spec.color"}]`, `"jsonPath":".spec.tags"}]`, 1)},
			{method: "POST", path: crds, body: strings.Replace(lifecycleCRD, `"default":"grey"`, `"default":"pink"`, 1)},
			{method: "POST", path: crds, body: strings.Replace(lifecycleCRD, `"type":"object","properties":{
    "spec"`, `"properties":{
    "spec"`, 1)},
		}},
	}
}

// crdSpec picks a CRD's spec: its status and metadata are each server's own.
func crdSpec(v any) any {
	obj, _ := v.(map[string]any)
	return obj["spec"]
}

// sortedResources sorts a discovery resource list by name: kube lists a group version's
// resources in no fixed order.
func sortedResources(v any) any {
	obj, _ := v.(map[string]any)
	list, _ := obj["resources"].([]any)
	sortByKey(list, "name")
	return obj
}

// sortByKey sorts a list of objects by their key's values.
func sortByKey(list []any, key string) {
	sort.Slice(list, func(i, j int) bool {
		a, _ := list[i].(map[string]any)
		b, _ := list[j].(map[string]any)
		return fmt.Sprint(a[key]) < fmt.Sprint(b[key])
	})
}

// discoveryScenarios read the discovery and OpenAPI v3 documents of a custom resource group.
// /apis itself, OpenAPI v2 and an unknown group version's OpenAPI v3 are not compared:
// kube-apiserver's aggregator serves them (and renames what v2 merges), not
// apiextensions-apiserver.
func discoveryScenarios() []scenario {
	return []scenario{{"discovery", []step{
		{method: "GET", path: "/apis/example.com"},
		{method: "GET", path: "/apis/example.com/v1", pick: sortedResources},
		{method: "GET", path: "/apis/example.com/v1", accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", pick: sortedResources},
		{method: "GET", path: "/apis/example.com", accept: "application/yaml"},
		{method: "GET", path: "/apis/life.example.com"},
	}}, {"openapi", []step{
		{method: "GET", path: "/openapi/v3/apis/example.com/v1"},
		{method: "GET", path: "/openapi/v3", pick: examplePaths},
	}}}
}

// examplePaths picks the example.com group versions the OpenAPI v3 root lists (the others are
// each server's own; the hashes in their URLs are each server's encoding's).
func examplePaths(v any) any {
	obj, _ := v.(map[string]any)
	paths, _ := obj["paths"].(map[string]any)
	var names []string
	for name := range paths {
		if strings.Contains(name, "example.com") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
