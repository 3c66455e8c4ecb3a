package endpoints_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// duplicateFieldsCase is a type's body with a duplicated field and a duplicated unknown one, in
// JSON and YAML, with the strict errors kube-apiserver reports for each: a built-in's typed
// decoder reports a duplicated unknown field in JSON only as unknown.
type duplicateFieldsCase struct {
	kind, path string
	// json and yaml are bodies for the object named by their first %s, with the
	// resourceVersion (possibly "") of their second.
	json, yaml string
	// lastPath is the duplicated field, whose last value, lastValue, is the one kept.
	lastPath                   []string
	lastValue                  string
	jsonStrict, yamlStrict     string   // the strict decoding errors, as the Status words them
	jsonWarnings, yamlWarnings []string // the Warning headers under Warn
}

var duplicateFieldsCases = []duplicateFieldsCase{{
	kind: "ConfigMap", path: "/api/v1/namespaces/default/configmaps",
	json:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","resourceVersion":"%s"},"data":{"a":"1","a":"2"},"extra":1,"extra":2}`,
	yaml:     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  resourceVersion: \"%s\"\ndata:\n  a: \"1\"\n  a: \"2\"\nextra: 1\nextra: 2\n",
	lastPath: []string{"data", "a"}, lastValue: "2",
	jsonStrict:   `duplicate field "data.a", unknown field "extra"`,
	yamlStrict:   "yaml: unmarshal errors:\n  line 8: key \"a\" already set in map\n  line 10: key \"extra\" already set in map, unknown field \"extra\"",
	jsonWarnings: []string{`299 - "duplicate field \"data.a\""`, `299 - "unknown field \"extra\""`},
	yamlWarnings: []string{`299 - "line 8: key \"a\" already set in map"`, `299 - "line 10: key \"extra\" already set in map"`, `299 - "unknown field \"extra\""`},
}, {
	// An unknown field before a duplicate one: a built-in's JSON body reports them in document
	// order; a YAML body's duplicate keys come first, found before decoding.
	kind: "ConfigMap", path: "/api/v1/namespaces/default/configmaps",
	json:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","resourceVersion":"%s"},"extra":1,"data":{"a":"1","a":"2"}}`,
	yaml:     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  resourceVersion: \"%s\"\nextra: 1\ndata:\n  a: \"1\"\n  a: \"2\"\n",
	lastPath: []string{"data", "a"}, lastValue: "2",
	jsonStrict:   `unknown field "extra", duplicate field "data.a"`,
	yamlStrict:   "yaml: unmarshal errors:\n  line 9: key \"a\" already set in map, unknown field \"extra\"",
	jsonWarnings: []string{`299 - "unknown field \"extra\""`, `299 - "duplicate field \"data.a\""`},
	yamlWarnings: []string{`299 - "line 9: key \"a\" already set in map"`, `299 - "unknown field \"extra\""`},
}, {
	kind: "Widget", path: widgets,
	json:     `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"%s","resourceVersion":"%s"},"spec":{"color":"red","color":"blue","extra":1,"extra":2}}`,
	yaml:     "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: %s\n  resourceVersion: \"%s\"\nspec:\n  color: red\n  color: blue\n  extra: 1\n  extra: 2\n",
	lastPath: []string{"spec", "color"}, lastValue: "blue",
	jsonStrict:   `duplicate field "spec.color", duplicate field "spec.extra", unknown field "spec.extra"`,
	yamlStrict:   "yaml: unmarshal errors:\n  line 8: key \"color\" already set in map\n  line 10: key \"extra\" already set in map, unknown field \"spec.extra\"",
	jsonWarnings: []string{`299 - "duplicate field \"spec.color\""`, `299 - "duplicate field \"spec.extra\""`, `299 - "unknown field \"spec.extra\""`},
	yamlWarnings: []string{`299 - "line 8: key \"color\" already set in map"`, `299 - "line 10: key \"extra\" already set in map"`, `299 - "unknown field \"spec.extra\""`},
}}

// TestDuplicateFields checks creates and updates whose bodies repeat a field, under every
// fieldValidation level: Strict answers kube-apiserver's 400, Warn (the default) sends a Warning
// for each duplicate and unknown field, Ignore nothing; the last occurrence is the one kept.
func TestDuplicateFields(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
		for i, tc := range duplicateFieldsCases {
			for _, format := range []string{"json", "yaml"} {
				name := fmt.Sprintf("dup%d-%s", i, format)
				t.Run(tc.kind+"/"+format, func(t *testing.T) { tc.check(t, api, name, format) })
			}
		}
	})
}

func (tc duplicateFieldsCase) check(t *testing.T, api *testAPI, name, format string) {
	body, contentType, strictErrs, warnings := tc.json, "application/json", tc.jsonStrict, tc.jsonWarnings
	if format == "yaml" {
		body, contentType, strictErrs, warnings = tc.yaml, "application/yaml", tc.yamlStrict, tc.yamlWarnings
	}
	send := func(method, path, fieldValidation, rv string) response {
		if fieldValidation != "" {
			path += "?fieldValidation=" + fieldValidation
		}
		return api.do(method, path, fmt.Sprintf(body, name, rv), "Content-Type: "+contentType)
	}
	strict := metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: fmt.Sprintf("%s in version \"v1\" cannot be handled as a %s: strict decoding error: %s", tc.kind, tc.kind, strictErrs)}

	send("POST", tc.path, "Strict", "").expectStatus(t, strict)
	created := send("POST", tc.path, "Ignore", "").expect(t, http.StatusCreated)
	tc.checkKept(t, created, nil)
	rv := str(created.object(t), "metadata", "resourceVersion")
	send("PUT", tc.path+"/"+name, "Strict", rv).expectStatus(t, strict)
	for _, fieldValidation := range []string{"", "Warn"} {
		updated := send("PUT", tc.path+"/"+name, fieldValidation, rv).expect(t, http.StatusOK)
		tc.checkKept(t, updated, warnings)
		rv = str(updated.object(t), "metadata", "resourceVersion")
	}
	api.do("DELETE", tc.path+"/"+name, "").expect(t, http.StatusOK)
	tc.checkKept(t, send("POST", tc.path, "", "").expect(t, http.StatusCreated), warnings)
}

// checkKept checks that a write kept the duplicated field's last value and sent the warnings.
func (tc duplicateFieldsCase) checkKept(t *testing.T, resp response, warnings []string) {
	t.Helper()
	if got := str(resp.object(t), tc.lastPath...); got != tc.lastValue {
		t.Errorf("%v = %q, want %q", tc.lastPath, got, tc.lastValue)
	}
	if got := resp.header.Values("Warning"); !slices.Equal(got, warnings) {
		t.Errorf("warnings\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(warnings, "\n"))
	}
}
