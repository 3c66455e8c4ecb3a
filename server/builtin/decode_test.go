package builtin

import (
	"encoding/json"
	"fmt"
	"github.com/sqlkube/sqlkube/server/resource"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/yaml"
)

func TestBuiltinDecode(t *testing.T) {
	for _, tc := range []struct {
		name, resource, body string
		want                 string   // the object as decoded, YAML
		strict               []string // the strict errors
		err                  string
	}{{
		name:     "unknown fields are dropped and reported in document order",
		resource: "configmaps",
		body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","colour":"red"},"data":{"a":"1"},"Data":{"b":"2"},"extra":1}`,
		want:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"1\"}\n",
		strict:   []string{`unknown field "metadata.colour"`, `unknown field "Data"`, `unknown field "extra"`},
	}, {
		name:     "duplicate and unknown fields mixed in document order",
		resource: "configmaps",
		body:     `{"extra":1,"data":{"a":"1","a":"2"},"metadata":{"name":"c","x":{"y":1,"y":2}},"metadata":{"labels":{"l":"v"}},"extra":2}`,
		want:     "metadata: {name: c, labels: {l: v}}\ndata: {a: \"2\"}\n",
		// A duplicated struct field decodes into what its first occurrence set, as in
		// kube-apiserver; duplicates inside unknown fields, and unknown fields, are reported once.
		strict: []string{`unknown field "extra"`, `duplicate field "data.a"`, `unknown field "metadata.x"`, `duplicate field "metadata"`},
	}, {
		name:     "a field of the wrong type",
		resource: "configmaps",
		body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":1}}`,
		err:      "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
	}, {
		name:     "a duplicate of the wrong type, though the last one is right",
		resource: "configmaps",
		body:     `{"data":{"a":1,"a":"1"}}`,
		err:      "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
	}, {
		name:     "1.0 in an integer field",
		resource: "events",
		body:     `{"metadata":{"name":"e"},"count":1.0}`,
		err:      "json: cannot unmarshal number 1.0 into Go struct field Event.count of type int32",
	}, {
		name:     "stringData goes into data, type defaults to Opaque",
		resource: "secrets",
		body:     `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"a":"YQ==","b":"Yg=="},"stringData":{"b":"B"}}`,
		want:     "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: YQ==, b: Qg==}\ntype: Opaque\n",
	}, {
		name:     "timestamps and integers",
		resource: "leases." + CoordinationGroup,
		body:     `{"metadata":{"name":"l","creationTimestamp":"2024-01-02T03:04:05+02:00","generation":3},"spec":{"leaseDurationSeconds":15,"renewTime":"2024-01-02T03:04:05.123456Z"}}`,
		want:     "metadata: {name: l, creationTimestamp: \"2024-01-02T01:04:05Z\", generation: 3}\nspec: {leaseDurationSeconds: 15, renewTime: \"2024-01-02T03:04:05.123456Z\"}\n",
	}, {
		name:     "CRD defaults",
		resource: CRDStorageName,
		body:     widgetCRDYAML,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			content, strictErrs, err := decodeBuiltinYAML(t, tc.resource, tc.body)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := errorTexts(strictErrs); !slices.Equal(got, tc.strict) {
				t.Errorf("strict errors %q, want %q", got, tc.strict)
			}
			if tc.want != "" {
				if want := testContent(t, tc.want); !reflect.DeepEqual(content, want) {
					t.Errorf("decoded\n%v\nwant\n%v", content, want)
				}
			}
			if tc.resource == CRDStorageName {
				if kind, _, _ := unstructured.NestedString(content, "spec", "names", "listKind"); kind != "WidgetList" {
					t.Errorf("CRD defaults not applied: %v", content["spec"])
				}
			}
		})
	}
}

// decodeBuiltinYAML decodes a test body, JSON or YAML, with the Decode of the strategy of the
// built-in stored under storageName.
func decodeBuiltinYAML(t *testing.T, storageName, body string) (map[string]any, []error, error) {
	t.Helper()
	return builtinResource(t, storageName).Typed().Decode(testJSON(t, body))
}

// testJSON is a test body as JSON: a JSON one as it is (with its duplicate fields), a YAML one
// converted.
func testJSON(t testing.TB, body string) []byte {
	t.Helper()
	if json.Valid([]byte(body)) {
		return []byte(body)
	}
	data, err := yaml.YAMLToJSON([]byte(body))
	if err != nil {
		t.Fatalf("test body: %v", err)
	}
	return data
}

// testContent is a test object's content as the server decodes JSON, whole numbers as int64.
func testContent(t *testing.T, body string) map[string]any {
	t.Helper()
	var content map[string]any
	if err := utiljson.Unmarshal(testJSON(t, body), &content); err != nil {
		t.Fatalf("test object: %v", err)
	}
	return content
}

func errorTexts(errs []error) []string {
	var texts []string
	for _, err := range errs {
		texts = append(texts, err.Error())
	}
	return texts
}

// randomObjects fills built-ins' typed objects at random from seed: all fields set (a fifth of
// the optional ones nil), timestamps with sub-second parts, and a ControllerRevision's data any
// JSON object (the meta fuzzer's would need a scheme).
func randomObjects(seed int64) *randfill.Filler {
	return fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), serializer.NewCodecFactory(runtime.NewScheme())).
		NilChance(0.2).MaxDepth(8).Funcs(
		func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.NewTime(randomTime(c)) },
		func(tm *metav1.MicroTime, c randfill.Continue) { *tm = metav1.NewMicroTime(randomTime(c)) },
		func(e *runtime.RawExtension, c randfill.Continue) {
			e.Raw = []byte(fmt.Sprintf(`{"n":%d,"s":%q}`, c.Int63(), c.String(8)))
		})
}

// TestContentConverter checks that the built-ins' typed objects become exactly the content
// their JSON decodes to, whichever way contentConverter picks: random objects of each type (all
// fields set, timestamps with sub-second parts, bytes) are compared both ways.
func TestContentConverter(t *testing.T) {
	filler := randomObjects(1)
	for _, r := range Resources(func(*resource.Resource) {}, nil) {
		goType := r.GoType()
		if r.StorageName == CRDStorageName {
			if !hasFloat(goType, map[reflect.Type]bool{}) {
				t.Errorf("%v has float fields (its schemas' maximum, ...): it must be re-encoded", goType)
			}
			continue
		}
		convert := contentConverter(goType)
		for range 200 {
			typed := reflect.New(goType).Interface()
			filler.Fill(typed)
			got, err := convert(typed)
			if err != nil {
				t.Fatalf("%v: %v", goType, err)
			}
			want, err := reencode(typed)
			if err != nil {
				t.Fatalf("%v: %v", goType, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%v converted to\n%#v\nJSON decodes to\n%#v", goType, got, want)
			}
		}
	}
}

func randomTime(c randfill.Continue) time.Time {
	return time.Unix(c.Int63n(1<<33), c.Int63n(1e9)).In(time.FixedZone("", 3600*(c.Intn(25)-12)))
}

// widgetCRDYAML is a CRD whose decoding adds defaults.
const widgetCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// TestDecodeTyped checks that a built-in's DecodeTyped, given the Go type a patched object is
// converted to, makes the content its Decode makes of that object's JSON (what the strategic
// merge patch did before, encoding the converted object and decoding it again): random objects
// of each type, defaults and internal round trips included.
func TestDecodeTyped(t *testing.T) {
	filler := randomObjects(2)
	for _, r := range Resources(func(*resource.Resource) {}, nil) {
		goType := r.GoType()
		for range 20 {
			typed := reflect.New(goType).Interface()
			filler.Fill(typed)
			data, err := json.Marshal(typed)
			if err != nil {
				t.Fatalf("%v: %v", goType, err)
			}
			want, _, wantErr := r.Typed().Decode(data)
			var content map[string]any
			if err := utiljson.Unmarshal(data, &content); err != nil {
				t.Fatalf("%v: %v", goType, err)
			}
			converted := reflect.New(goType).Interface()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, converted); err != nil {
				t.Fatalf("%v: %v", goType, err)
			}
			got, gotErr := r.Typed().DecodeTyped(converted)
			if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%v: DecodeTyped made\n%#v (%v)\nDecode made\n%#v (%v)", goType, got, gotErr, want, wantErr)
			}
		}
	}
}
