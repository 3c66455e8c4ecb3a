package selection

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/crdschema"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// The built-in types the tests select, with their strategies.
var configMaps, secrets, events, namespaces = builtinResource("configmaps"), builtinResource("secrets"), builtinResource("events"), builtinResource("namespaces")

func builtinResource(name string) *resource.Resource {
	for _, res := range builtin.Resources(func(*resource.Resource) {}, nil) {
		if res.Name == name {
			return res
		}
	}
	panic("no built-in " + name)
}

// mustSelect is the selection of res by the label and field selectors given as query strings.
func mustSelect(t *testing.T, res *resource.Resource, labelSelector, fieldSelector string, served ServedDecoder) *Selection {
	t.Helper()
	parsed, err := labels.Parse(labelSelector)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := New(res, &internalversion.ListOptions{LabelSelector: parsed, FieldSelector: fields.ParseSelectorOrDie(fieldSelector)}, served)
	if err != nil {
		t.Fatalf("New(%s, %q, %q): %v", res.Name, labelSelector, fieldSelector, err)
	}
	return sel
}

// selects reports whether sel selects value, both as a list's Filter and as a watch's Matches
// see it; the test fails if they disagree.
func selects(t *testing.T, sel *Selection, res *resource.Resource, value string) bool {
	t.Helper()
	filtered := sel.Filter()(sqlstore.Object{Value: []byte(value)})
	if matched := sel.Matches(Decode(res, []byte(value))); matched != filtered {
		t.Fatalf("%s: Filter says %v, Matches says %v", value, filtered, matched)
	}
	return filtered
}

func TestSelectsByLabelsAndFields(t *testing.T) {
	event := `{"metadata":{"name":"e1","namespace":"default","labels":{"app":"x"}},"involvedObject":{"kind":"Pod","resourceVersion":7},"source":{"component":"kubelet"},"type":"Normal"}`
	tests := []struct {
		res            *resource.Resource
		labels, fields string
		value          string
		want           bool
	}{
		{configMaps, "", "", `{"metadata":{"name":"a"}}`, true},
		{configMaps, "env in (prod,dev)", "", `{"metadata":{"name":"a","labels":{"env":"dev"}}}`, true},
		{configMaps, "env in (prod,dev)", "", `{"metadata":{"name":"a"}}`, false},
		{configMaps, "!tier", "metadata.name=a", `{"metadata":{"name":"a","namespace":"n"}}`, true},
		{configMaps, "", "metadata.namespace!=n", `{"metadata":{"name":"a","namespace":"n"}}`, false},
		{configMaps, "", "", `{"metadata":7}`, false}, // an object that does not decode, never
		{configMaps, "env", "", `{"metadata":7}`, false},
		{configMaps, "", "metadata.name=a", `not json`, false},
		{secrets, "", "type=kubernetes.io/tls", `{"metadata":{"name":"s"},"type":"kubernetes.io/tls"}`, true},
		{secrets, "", "type=", `{"metadata":{"name":"s"}}`, true}, // a missing field is ""
		{namespaces, "", "status.phase=Active", `{"metadata":{"name":"n"},"status":{"phase":"Active"}}`, true},
		{namespaces, "", "status.phase=Active", `{"metadata":{"name":"n"},"status":"Active"}`, false},
		{events, "app=x", "source=kubelet,type=Normal", event, true},
		{events, "", "involvedObject.resourceVersion=7", event, true}, // numbers as printed
		{events, "", "involvedObject.kind=Pod,type=Warning", event, false},
		{events, "", "metadata.namespace=default,reason=", event, true},
	}
	for _, tt := range tests {
		sel := mustSelect(t, tt.res, tt.labels, tt.fields, nil)
		if got := selects(t, sel, tt.res, tt.value); got != tt.want {
			t.Errorf("%s %q %q selects %s: %v, want %v", tt.res.Name, tt.labels, tt.fields, tt.value, got, tt.want)
		}
	}
}

// A Filter reuses its decoded metadata from object to object: nothing of one object may leak
// into the next.
func TestFilterForgetsThePreviousObject(t *testing.T) {
	filter := mustSelect(t, configMaps, "env", "metadata.namespace=", nil).Filter()
	if !filter(sqlstore.Object{Value: []byte(`{"metadata":{"name":"a","labels":{"env":"x"}}}`)}) {
		t.Fatal("the first object is not selected")
	}
	if filter(sqlstore.Object{Value: []byte(`{"metadata":{"name":"b","namespace":""}}`)}) {
		t.Error("the second object is selected with the first one's labels")
	}
}

func TestUnsupportedFieldLabels(t *testing.T) {
	tests := []struct {
		res      *resource.Resource
		selector string
		message  string
	}{
		{configMaps, "data.a=1", `"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{secrets, "data.a=1", "field label not supported: data.a"},
		{namespaces, "metadata.namespace=x", "field label not supported: metadata.namespace"},
		{widgets(t), "spec.shape=round", "field label not supported: spec.shape"},
	}
	for _, tt := range tests {
		_, err := New(tt.res, &internalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie(tt.selector)}, nil)
		status, ok := err.(apierrors.APIStatus)
		if !ok {
			t.Errorf("%s %q: %v, want a Status error", tt.res.Name, tt.selector, err)
			continue
		}
		want := metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: tt.message}
		if got := status.Status(); got.Code != want.Code || got.Reason != want.Reason || got.Message != want.Message {
			t.Errorf("%s %q: %d %s %q, want %d %s %q", tt.res.Name, tt.selector, got.Code, got.Reason, got.Message, want.Code, want.Reason, want.Message)
		}
	}
}

func TestNamespacePinsNameEmpty(t *testing.T) {
	tests := []struct {
		labels, fields string
		namespace      string
		pinsName       bool
		empty          bool
	}{
		{"", "", "", false, true},
		{"a=b", "", "", false, false},
		{"", "metadata.namespace=n", "n", false, false},
		{"", "metadata.namespace!=n", "", false, false},
		{"", "metadata.name=a,metadata.namespace==n", "n", true, false},
		{"", "metadata.name!=a", "", false, false},
	}
	for _, tt := range tests {
		sel := mustSelect(t, configMaps, tt.labels, tt.fields, nil)
		if sel.Namespace() != tt.namespace || sel.PinsName() != tt.pinsName || sel.Empty() != tt.empty {
			t.Errorf("%q %q: Namespace %q PinsName %v Empty %v, want %q %v %v", tt.labels, tt.fields,
				sel.Namespace(), sel.PinsName(), sel.Empty(), tt.namespace, tt.pinsName, tt.empty)
		}
	}
}

// One Decoded serves several selections of its type, each reading the fields it selects on.
func TestDecodedIsShared(t *testing.T) {
	d := Decode(events, []byte(`{"metadata":{"name":"e"},"reason":"Started","type":"Normal"}`))
	for selector, want := range map[string]bool{"reason=Started": true, "type=Warning": false, "metadata.name=e": true} {
		if got := mustSelect(t, events, "", selector, nil).Matches(d); got != want {
			t.Errorf("%s: %v, want %v", selector, got, want)
		}
	}
}

// A custom resource's selectable fields are read from its objects as served, with the defaults
// its schema gives them.
func TestCustomResourceFields(t *testing.T) {
	res := widgets(t)
	servedWithDefault := func(value []byte) (*unstructured.Unstructured, error) {
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(value, &obj.Object); err != nil {
			return nil, err
		}
		if _, found, _ := unstructured.NestedString(obj.Object, "spec", "color"); !found {
			_ = unstructured.SetNestedField(obj.Object, "red", "spec", "color")
		}
		return obj, nil
	}
	red := mustSelect(t, res, "", "spec.color=red", servedWithDefault)
	if !selects(t, red, res, `{"metadata":{"name":"w","namespace":"n"},"spec":{}}`) {
		t.Error("a widget red by default is not selected by spec.color=red")
	}
	if selects(t, red, res, `{"metadata":{"name":"w","namespace":"n"},"spec":{"color":"blue"}}`) {
		t.Error("a blue widget is selected by spec.color=red")
	}
	notServed := func([]byte) (*unstructured.Unstructured, error) { return nil, errors.New("not decodable") }
	if selects(t, mustSelect(t, res, "", "spec.color=red", notServed), res, `{"metadata":{"name":"w"},"spec":{"color":"red"}}`) {
		t.Error("a widget that does not decode as served is selected")
	}
	// metadata fields alone read no object as served
	if !selects(t, mustSelect(t, res, "", "metadata.name=w", nil), res, `{"metadata":{"name":"w"}}`) {
		t.Error("metadata.name=w does not select w")
	}
}

// widgets is a custom resource whose schema makes spec.color selectable.
func widgets(t *testing.T) *resource.Resource {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"color": {Type: "string"}}},
					},
				}},
				SelectableFields: []apiextensionsv1.SelectableField{{JSONPath: ".spec.color"}},
			}},
		},
	}
	schema, err := crdschema.Compile(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	return &resource.Resource{Group: "example.com", Version: "v1", Name: "widgets", Kind: "Widget", ListKind: "WidgetList",
		Namespaced: true, StorageName: "widgets.example.com", StorageVersion: "v1", Schema: schema}
}
