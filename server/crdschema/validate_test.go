package crdschema

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// messages renders errors as kube-apiserver words each Status cause ("field: message"),
// sorted: the schema validator reports properties in map order.
func messages(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	slices.Sort(out)
	return out
}

func assertMessages(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := messages(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

const celSkipped = `<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`

func TestValidateCreate(t *testing.T) {
	s := compileWidgets(t)
	tests := []struct {
		name string
		spec string
		want []string
	}{
		{name: "valid", spec: `size: 3, name: abc, since: "2024-01-02T03:04:05Z", port: http, tags: [a, b], ports: [{name: a}, {name: b}], template: {apiVersion: v1, kind: Pod, metadata: {name: p}}`},
		{name: "int-or-string takes an integer", spec: `size: 3, port: 8080`},
		{name: "nullable accepts null", spec: `size: 3, note: null`},
		{name: "type", spec: `size: "string"`, want: []string{
			`spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`,
			celSkipped,
		}},
		{name: "required", spec: `color: red`, want: []string{`spec.size: Required value`, celSkipped}},
		{name: "minimum, maximum, exclusiveMaximum", spec: `size: 0, replicas: -1, ratio: 1`, want: []string{
			`spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`,
			`spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
			`spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1`,
			// the scale subresource's own check of specReplicasPath
			`.spec.replicas: Invalid value: -1: should be a non-negative integer`,
			// minimum is not a blocking error: CEL rules still run
			`spec.minReplicas: Invalid value: minReplicas must not exceed replicas`,
		}},
		{name: "maximum", spec: `size: 11`, want: []string{
			`spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10`,
		}},
		{name: "enum", spec: `size: 1, color: purple`, want: []string{
			`spec.color: Unsupported value: "purple": supported values: "red", "green", "blue"`, celSkipped,
		}},
		{name: "minLength is reported before pattern", spec: `size: 1, name: "A"`, want: []string{
			`spec.name: Invalid value: "A": spec.name in body should be at least 3 chars long`,
		}},
		{name: "pattern", spec: `size: 1, name: "ABC"`, want: []string{
			`spec.name: Invalid value: "ABC": spec.name in body should match '^[a-z]+$'`,
		}},
		{name: "maxLength", spec: `size: 1, name: abcdefghij`, want: []string{
			`spec.name: Too long: may not be more than 8 bytes`, celSkipped,
		}},
		{name: "format", spec: `size: 1, since: yesterday`, want: []string{
			`spec.since: Invalid value: "yesterday": spec.since in body must be of type date-time: "yesterday"`, celSkipped,
		}},
		{name: "int-or-string rejects others", spec: `size: 1, port: 1.5`, want: []string{
			`spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"`, celSkipped,
		}},
		// kube-apiserver's decoder drops it (PruneAndDefault), so it is valid
		{name: "null where not nullable", spec: `size: 1, name: null`},
		{name: "minItems", spec: `size: 1, tags: []`, want: []string{
			`spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items`,
		}},
		{name: "maxItems", spec: `size: 1, tags: [a, b, c, d]`, want: []string{
			`spec.tags: Too many: 4: must have at most 3 items`, celSkipped,
		}},
		{name: "maxProperties", spec: `size: 1, labels: {a: x, b: x, c: x}`, want: []string{
			`spec.labels: Too many: 3: must have at most 2 items`, celSkipped,
		}},
		{name: "list-type set", spec: `size: 1, tags: [a, a]`, want: []string{
			`spec.tags[1]: Duplicate value: "a"`,
		}},
		{name: "list-type map keys", spec: `size: 1, ports: [{name: a}, {name: a, port: 1}, {port: 2}]`, want: []string{
			`spec.ports[1]: Duplicate value: {"name":"a"}`,
			`spec.ports[2].name: Required value`,
			celSkipped,
		}},
		{name: "embedded resource needs apiVersion and kind", spec: `size: 1, template: {metadata: {name: p}}`, want: []string{
			`spec.template.apiVersion: Required value`, `spec.template.kind: Required value`, celSkipped,
		}},
		{name: "embedded resource metadata", spec: `size: 1, template: {apiVersion: v1, kind: Pod, metadata: {name: "a/b", labels: {"a b": c}}}`, want: []string{
			`spec.template.metadata.name: Invalid value: "a/b": may not contain '/'`,
			`spec.template.metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		}},
		{name: "embedded resource kind", spec: `size: 1, template: {apiVersion: v1, kind: "a.b"}`, want: []string{
			`spec.template.kind: Invalid value: "a.b": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
		}},
		{name: "CEL rule with fieldPath", spec: `size: 1, replicas: 1, minReplicas: 2`, want: []string{
			`spec.minReplicas: Invalid value: minReplicas must not exceed replicas`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := widget(t, tt.spec)
			if _, err := s.PruneAndDefault(u); err != nil {
				t.Fatal(err)
			}
			assertMessages(t, s.Validate(context.Background(), u, nil), tt.want...)
		})
	}
}

func TestValidateCreateTypeAndObjectMeta(t *testing.T) {
	s := compileWidgets(t)
	u := object(t, `{apiVersion: example.com/v2, kind: Gadget, metadata: {name: "Bad_Name", labels: {"a b": c}}, spec: {size: 1}}`)
	if _, err := s.PruneAndDefault(u); err != nil {
		t.Fatal(err)
	}
	// Type meta errors stop the ObjectMeta and schema checks, as in kube-apiserver; the CEL rules
	// still run, on an object of another kind, which is not defaulted.
	assertMessages(t, s.Validate(context.Background(), u, nil),
		`kind: Invalid value: "Gadget": must be Widget`,
		`apiVersion: Invalid value: "example.com/v2": must be example.com/v1`,
		`spec: Invalid value: "object": no such key: minReplicas evaluating rule: minReplicas must not exceed replicas`)

	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	assertMessages(t, s.Validate(context.Background(), u, nil),
		`metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`metadata.namespace: Required value`,
		`metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		celSkipped,
	)
}

// stored is a Widget as it would come back from storage.
func stored(t *testing.T, s *Schema, spec string) *unstructured.Unstructured {
	t.Helper()
	u := widget(t, spec)
	u.SetResourceVersion("7")
	if err := s.ReadStored(u); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestValidateUpdate(t *testing.T) {
	s := compileWidgets(t)
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{name: "unchanged", old: `size: 2`, new: `size: 2`},
		{name: "transition rule", old: `size: 2`, new: `size: 3`, want: []string{
			`spec.size: Invalid value: 3: size is immutable`,
		}},
		{name: "ratcheting keeps an unchanged invalid value", old: `size: 2, color: purple, name: "X"`, new: `size: 2, color: purple, name: "X", replicas: 3`},
		{name: "ratcheting stops at changed values", old: `size: 2, color: purple`, new: `size: 2, color: pink`, want: []string{
			`spec.color: Unsupported value: "pink": supported values: "red", "green", "blue"`, celSkipped,
		}},
		{name: "list-type invariants ratchet", old: `size: 2, tags: [a, a]`, new: `size: 2, tags: [a, a, b]`},
		{name: "list-type invariants checked when old was valid", old: `size: 2, tags: [a]`, new: `size: 2, tags: [a, a]`, want: []string{
			`spec.tags[1]: Duplicate value: "a"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(t, s, tt.old)
			u := widget(t, tt.new)
			u.SetResourceVersion("7")
			if _, err := s.PruneAndDefault(u); err != nil {
				t.Fatal(err)
			}
			u.SetGeneration(old.GetGeneration()) // what rest.BeforeUpdate does first
			s.PrepareForUpdate(u, old)
			assertMessages(t, s.Validate(context.Background(), u, old), tt.want...)
		})
	}
}

func TestPrepareForUpdateKeepsStatusAndBumpsGeneration(t *testing.T) {
	s := compileWidgets(t)
	old := stored(t, s, `size: 2`)
	old.SetGeneration(4)
	old.Object["status"] = map[string]any{"phase": "Pending"}
	u := widget(t, `size: 2, replicas: 3`)
	u.Object["status"] = map[string]any{"phase": "Running"}
	s.PrepareForUpdate(u, old)
	if u.GetGeneration() != 5 || u.Object["status"].(map[string]any)["phase"] != "Pending" {
		t.Errorf("generation %d, status %v; want 5 and the stored status", u.GetGeneration(), u.Object["status"])
	}

	created := widget(t, `size: 2`)
	created.Object["status"] = map[string]any{"phase": "Running"}
	s.PrepareForCreate(created)
	if _, has := created.Object["status"]; has || created.GetGeneration() != 1 {
		t.Errorf("after PrepareForCreate: %v", created.Object)
	}
}

func TestValidateStatus(t *testing.T) {
	s := compileWidgets(t)
	if !s.HasStatus() {
		t.Fatal("HasStatus() = false")
	}
	old := stored(t, s, `size: 2, replicas: 0`)
	u := widget(t, `size: 9, replicas: 1`)
	u.SetResourceVersion("7")
	u.Object["status"] = map[string]any{"phase": "Running", "replicas": int64(0)}
	s.PrepareForStatusUpdate(u, old)
	if got := u.Object["spec"].(map[string]any)["size"]; got != int64(2) {
		t.Errorf("/status changed spec.size to %v", got)
	}
	assertMessages(t, s.ValidateStatus(context.Background(), u, old),
		`status: Invalid value: a running widget has replicas`)

	u.Object["status"] = map[string]any{"phase": "Done"}
	assertMessages(t, s.ValidateStatus(context.Background(), u, old),
		`status.phase: Unsupported value: "Done": supported values: "Pending", "Running"`, celSkipped)
}

func TestCELCostLimit(t *testing.T) {
	s, err := Compile(loadCRD(t, "testdata/costly.yaml"), "v1")
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 300)
	for i := range items {
		items[i] = "abc"
	}
	u := object(t, `{apiVersion: example.com/v1, kind: List, metadata: {name: l}}`)
	u.Object["spec"] = map[string]any{"items": items}

	start := time.Now()
	errs := s.Validate(context.Background(), u, nil)
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("validation took %v", elapsed)
	}
	assertMessages(t, errs,
		`spec: Invalid value: "object": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.items.all(x, self.items.all(y, self.items.all(z, x + y + z != '')))`)
}

// A stored CRD can hold a rule that no longer compiles; its objects then fail validation
// with the compile error instead of crashing.
func TestRuleThatDoesNotCompile(t *testing.T) {
	crd := loadCRD(t, "testdata/widgets.yaml")
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].XValidations[0].Rule = "self.minReplicas <="
	s, err := Compile(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	u := widget(t, `size: 1`)
	if _, err := s.PruneAndDefault(u); err != nil {
		t.Fatal(err)
	}
	errs := s.Validate(context.Background(), u, nil)
	const prefix = `spec: Invalid value: "object": rule compile error: compilation failed: ERROR: <input>:1:20: Syntax error`
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), prefix) {
		t.Errorf("errors %q, want one starting %q", messages(errs), prefix)
	}
}
