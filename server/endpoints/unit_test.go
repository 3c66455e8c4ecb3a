package endpoints

import (
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestNegotiateOutput(t *testing.T) {
	tests := []struct {
		accept string
		list   bool
		want   output
		ok     bool
	}{
		{"", false, output{}, true},
		{"*/*", false, output{}, true},
		{"application/*", false, output{}, true},
		{"application/json;charset=utf-8", false, output{}, true},
		{"application/yaml", true, output{yaml: true}, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", true, output{view: viewTable, metaVersion: "v1"}, true},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", false, output{view: viewTable, metaVersion: "v1beta1"}, true},
		{"application/json;as=Table;v=v2;g=meta.k8s.io", false, output{}, false},
		{"application/json;as=Table;v=v1", false, output{}, false},
		{"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", false, output{view: viewPartial, metaVersion: "v1"}, true},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", true, output{view: viewPartial, metaVersion: "v1"}, true},
		{"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", true, output{}, false},
		{"application/vnd.kubernetes.protobuf, application/json;q=0.5", false, output{}, true},
		{"text/html", false, output{}, false},
		{"application/yaml;q=0.1, application/json;as=Table;v=v1;g=meta.k8s.io", false, output{view: viewTable, metaVersion: "v1"}, true},
	}
	for _, tt := range tests {
		r := &http.Request{Header: http.Header{"Accept": {tt.accept}}}
		got, err := negotiateOutput(r, tt.list)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("Accept %q (list %v): got %+v, %v; want %+v, ok %v", tt.accept, tt.list, got, err, tt.want, tt.ok)
		}
		if err != nil && !apierrors.IsNotAcceptable(err) {
			t.Errorf("Accept %q: %v is not 406", tt.accept, err)
		}
	}
}
