package server

import (
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"testing"
)

func TestBuiltinDecode(t *testing.T) {
	for _, tc := range []struct {
		name, resource, body string
		want                 string // the object as decoded, YAML
		unknown              []string
		err                  string
	}{{
		name:     "unknown fields are dropped and reported",
		resource: "configmaps",
		body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","colour":"red"},"data":{"a":"1"},"Data":{"b":"2"},"extra":1}`,
		want:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"1\"}\n",
		unknown:  []string{"Data", "extra", "metadata.colour"}, // in key order: the body was parsed already
	}, {
		name:     "a field of the wrong type",
		resource: "configmaps",
		body:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":1}}`,
		err:      "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
	}, {
		name:     "stringData goes into data, type defaults to Opaque",
		resource: "secrets",
		body:     `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"a":"YQ==","b":"Yg=="},"stringData":{"b":"B"}}`,
		want:     "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: YQ==, b: Qg==}\ntype: Opaque\n",
	}, {
		name:     "CRD defaults",
		resource: crdStorageName,
		body:     crdYAML("widgets", "Widget", "v1"),
		unknown:  nil,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obj := fromYAML(t, tc.body)
			unknown, err := builtinDecoders[tc.resource](obj)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(unknown, tc.unknown) {
				t.Errorf("unknown fields %q, want %q", unknown, tc.unknown)
			}
			if tc.want != "" {
				if want := fromYAML(t, tc.want); !reflect.DeepEqual(obj.Object, want.Object) {
					t.Errorf("decoded\n%v\nwant\n%v", obj.Object, want.Object)
				}
			}
			if tc.resource == crdStorageName {
				if kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "listKind"); kind != "WidgetList" {
					t.Errorf("CRD defaults not applied: %v", obj.Object["spec"])
				}
			}
		})
	}
}
