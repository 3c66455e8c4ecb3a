package selection

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"

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

var pods = builtinResource("pods")

// The attributes a write reads from the object it stores select as its stored bytes do, and
// are filed under the same keys.
func TestAttributesSelectAsDecoded(t *testing.T) {
	objects := []string{
		`{"metadata":{"name":"p","namespace":"n","labels":{"app":"x"}},"spec":{"nodeName":"node-1","hostNetwork":true},"status":{"phase":"Running"}}`,
		`{"metadata":{"name":"q","namespace":"n"},"spec":{}}`,
		`{"metadata":{"name":"r","namespace":"n"},"spec":{"nodeName":7}}`,
		`{"metadata":{"name":"s","namespace":"n"},"spec":{"nodeName":1234567.5},"status":"Running"}`,
	}
	selections := [][2]string{
		{"", "spec.nodeName=node-1"}, {"", "spec.host=node-1"}, {"", "spec.nodeName="}, {"", "spec.nodeName=7"},
		{"", "spec.nodeName=1234567.5"}, {"", "spec.hostNetwork=false"}, {"", "status.phase=Running"},
		{"app=x", ""}, {"app in (x)", "metadata.name=p"}, {"", "status.podIPs="}, {"!app", "spec.restartPolicy="},
	}
	for _, value := range objects {
		attached := Of(pods, sqlstore.Object{Value: []byte(value), Attached: AttributesOf(pods, objectOf(t, []byte(value)))})
		decoded := Decode(pods, []byte(value))
		if got, want := slices.Sorted(slices.Values(attached.AppendKeys(nil))), slices.Sorted(slices.Values(decoded.AppendKeys(nil))); !slices.Equal(got, want) {
			t.Errorf("%s: attributes filed under %q, the bytes under %q", value, got, want)
		}
		for _, s := range selections {
			sel := mustSelect(t, pods, s[0], s[1], nil)
			if a, d := sel.Matches(attached), sel.Matches(decoded); a != d {
				t.Errorf("%s through %q %q: the attributes say %v, the bytes %v", value, s[0], s[1], a, d)
			}
		}
	}
}

// A selection that pins a value has a key, and every object it selects is filed under that key.
func TestIndexKey(t *testing.T) {
	tests := []struct {
		labels, fields, want string
	}{
		{"", "spec.nodeName=node-1", "f:spec.nodeName=node-1"},
		{"app=x", "spec.nodeName==node-1,metadata.name=p", "f:metadata.name=p"},
		{"app in (x)", "status.phase!=Failed", "l:app=x"},
		{"app in (x,y),tier", "", ""},
		{"", "spec.nodeName!=node-1", ""},
		{"", "metadata.namespace=n", ""},
	}
	object := []byte(`{"metadata":{"name":"p","namespace":"n","labels":{"app":"x"}},"spec":{"nodeName":"node-1"},"status":{"phase":"Running"}}`)
	for _, tt := range tests {
		sel := mustSelect(t, pods, tt.labels, tt.fields, nil)
		key, ok := sel.IndexKey()
		if key != tt.want || ok != (tt.want != "") {
			t.Errorf("%q %q: key %q %v, want %q", tt.labels, tt.fields, key, ok, tt.want)
		}
		if d := Decode(pods, object); ok && sel.Matches(d) && !slices.Contains(d.AppendKeys(nil), key) {
			t.Errorf("%q %q selects an object not filed under %q", tt.labels, tt.fields, key)
		}
	}
	if key, ok := mustSelect(t, widgets(t), "", "spec.color=red", nil).IndexKey(); ok {
		t.Errorf("a custom resource's field is a key: %q", key)
	}
}

// A Decoded read for core events does not serve events.k8s.io's selections, whose field labels
// differ, nor their attributes core's.
func TestDecodedServesResourcesReadingItsFields(t *testing.T) {
	var eventsV1 *resource.Resource
	for _, res := range builtin.Resources(func(*resource.Resource) {}, nil) {
		if res.Group == "events.k8s.io" && res.Name == "events" {
			eventsV1 = res
		}
	}
	value := []byte(`{"metadata":{"name":"e"},"involvedObject":{"kind":"Pod"}}`)
	if Decode(events, value).ReadFor(eventsV1) || !Decode(events, value).ReadFor(events) {
		t.Error("a Decoded of core events serves events.k8s.io's selections, or not core's")
	}
	obj := objectOf(t, value)
	d := Of(events, sqlstore.Object{Value: value, Attached: AttributesOf(eventsV1, obj)})
	if !d.ReadFor(events) || !mustSelect(t, events, "", "involvedObject.kind=Pod", nil).Matches(d) {
		t.Error("core events read from events.k8s.io's attributes")
	}
	if !Of(widgets(t), sqlstore.Object{Value: value, Attached: AttributesOf(widgets(t), obj)}).ReadFor(widgets(t)) {
		t.Error("a custom resource's attributes do not serve another generation of its type")
	}
}

// objectOf is value decoded as the registry decodes objects: whole numbers as int64.
func objectOf(t *testing.T, value []byte) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(value, &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj
}
