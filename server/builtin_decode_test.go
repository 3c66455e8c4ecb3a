package server

import (
	"cmp"
	"encoding/json"
	"math/rand"
	"net/http"
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
		resource: "leases." + coordinationGroup,
		body:     `{"metadata":{"name":"l","creationTimestamp":"2024-01-02T03:04:05+02:00","generation":3},"spec":{"leaseDurationSeconds":15,"renewTime":"2024-01-02T03:04:05.123456Z"}}`,
		want:     "metadata: {name: l, creationTimestamp: \"2024-01-02T01:04:05Z\", generation: 3}\nspec: {leaseDurationSeconds: 15, renewTime: \"2024-01-02T03:04:05.123456Z\"}\n",
	}, {
		name:     "CRD defaults",
		resource: crdStorageName,
		body:     crdYAML("widgets", "Widget", "v1"),
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
			if tc.resource == crdStorageName {
				if kind, _, _ := unstructured.NestedString(content, "spec", "names", "listKind"); kind != "WidgetList" {
					t.Errorf("CRD defaults not applied: %v", content["spec"])
				}
			}
		})
	}
}

// decodeBuiltinYAML decodes a test body, JSON or YAML, with resource's Decode hook.
func decodeBuiltinYAML(t *testing.T, resource, body string) (map[string]any, []error, error) {
	t.Helper()
	return builtinDecoders[resource](testJSON(t, body))
}

// testJSON is a test body as JSON: a JSON one as it is (with its duplicate fields), a YAML one
// converted.
func testJSON(t *testing.T, body string) []byte {
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

// TestContentConverter checks that the built-ins' typed objects become exactly the content
// their JSON decodes to, whichever way contentConverter picks: random objects of each type (all
// fields set, timestamps with sub-second parts, bytes) are compared both ways.
func TestContentConverter(t *testing.T) {
	filler := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(1), serializer.NewCodecFactory(runtime.NewScheme())).
		NilChance(0.2).MaxDepth(8).Funcs(
		func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.NewTime(randomTime(c)) },
		func(tm *metav1.MicroTime, c randfill.Continue) { *tm = metav1.NewMicroTime(randomTime(c)) })
	for name, goType := range builtinGoTypes {
		if name == crdStorageName {
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

// TestBuiltinBodyErrors checks the answers to built-in bodies that do not decode as their type,
// or are of another type, as kube-apiserver words them.
func TestBuiltinBodyErrors(t *testing.T) {
	api := sqliteAPI(t)
	const leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	badRequest := func(message string) metav1.Status {
		return metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: message}
	}
	for _, tc := range []struct {
		name, path, body, contentType string
		want                          metav1.Status
	}{{
		name: "1.0 in an integer field", path: leases,
		body: `{"metadata":{"name":"l"},"spec":{"leaseDurationSeconds":15.0}}`,
		want: badRequest(`Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number 15.0 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32`),
	}, {
		name: "metadata of the wrong type", path: cmPath,
		body: `{"metadata":{"name":7}}`,
		want: badRequest(`ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string`),
	}, {
		name: "a duplicate of the wrong type", path: cmPath,
		body: `{"metadata":{"name":"c"},"data":{"a":1,"a":"1"}}`,
		want: badRequest(`ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string`),
	}, {
		name: "null", path: cmPath, body: `null`,
		want: badRequest(`the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: not an object (6e756c6c)`),
	}, {
		name: "a kind that is not a string", path: cmPath, body: `{"kind":1,"data":{"a":1}}`,
		want: badRequest(`the object provided is unrecognized (must be of type ConfigMap): kind must be a string ({"kind":1,"data":{"a":1}})`),
	}, {
		name: "another kind, with fields the type does not know", path: cmPath + "?fieldValidation=Strict",
		body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"type":"Opaque"}`,
		want: badRequest(`Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`),
	}, {
		name: "another kind, that does not decode as the type", path: cmPath,
		body: "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: [1]}\n", contentType: "application/yaml",
		want: badRequest(`Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`),
	}, {
		name: "another group", path: cmPath + "?fieldValidation=Strict",
		body: `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"c"},"extra":1}`,
		want: badRequest(`ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"`),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			api.do("POST", tc.path, tc.body, "Content-Type: "+cmp.Or(tc.contentType, "application/json")).expectStatus(t, tc.want)
		})
	}
	t.Run("1.0 in an integer field of a YAML body", func(t *testing.T) {
		// YAML has no integer 1.0: converted to JSON, it is 1, as in kube-apiserver.
		created := api.do("POST", leases, "metadata: {name: l}\nspec: {leaseDurationSeconds: 15.0}\n", "Content-Type: application/yaml").expect(t, http.StatusCreated)
		if got := nested(created.object(t), "spec", "leaseDurationSeconds"); got != float64(15) {
			t.Errorf("leaseDurationSeconds = %v", got)
		}
	})
}
