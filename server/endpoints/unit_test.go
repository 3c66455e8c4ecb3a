package endpoints

import (
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sqlkube/sqlkube/server/resource"
)

func TestNegotiateOutput(t *testing.T) {
	tests := []struct {
		accept string
		list   bool
		want   output
		ok     bool
		cr     bool // the request is a custom resource's
	}{
		{"", false, output{}, true, false},
		{"*/*", false, output{}, true, false},
		{"application/*", false, output{}, true, false},
		{"application/json;charset=utf-8", false, output{}, true, false},
		{"application/yaml", true, output{format: formatYAML}, true, false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", true, output{view: viewTable, metaVersion: "v1"}, true, false},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", false, output{view: viewTable, metaVersion: "v1beta1"}, true, false},
		{"application/json;as=Table;v=v2;g=meta.k8s.io", false, output{}, false, false},
		{"application/json;as=Table;v=v1", false, output{}, false, false},
		{"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", false, output{view: viewPartial, metaVersion: "v1"}, true, false},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", true, output{view: viewPartial, metaVersion: "v1"}, true, false},
		{"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", true, output{}, false, false},
		{"application/vnd.kubernetes.protobuf, application/json;q=0.5", false, output{format: formatProtobuf}, true, false},
		{"application/vnd.kubernetes.protobuf, application/json;q=0.5", false, output{}, true, true},
		{"application/vnd.kubernetes.protobuf", true, output{}, false, true},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", true,
			output{format: formatProtobuf, view: viewPartial, metaVersion: "v1"}, true, true},
		{"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1", true, output{}, false, false},
		{"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json", true, output{}, true, false},
		{"text/html", false, output{}, false, false},
		{"application/yaml;q=0.1, application/json;as=Table;v=v1;g=meta.k8s.io", false, output{view: viewTable, metaVersion: "v1"}, true, false},
	}
	for _, tt := range tests {
		r := &http.Request{Header: http.Header{"Accept": {tt.accept}}}
		req := &request{res: &resource.Resource{}}
		if tt.cr {
			req.res.CRDName = "widgets.example.com"
		}
		got, err := negotiateOutput(r, req, tt.list)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("Accept %q (list %v): got %+v, %v; want %+v, ok %v", tt.accept, tt.list, got, err, tt.want, tt.ok)
		}
		if err != nil && !apierrors.IsNotAcceptable(err) {
			t.Errorf("Accept %q: %v is not 406", tt.accept, err)
		}
	}
}

// A Status is in the first format named, clauses asking for a view skipped, as kube-apiserver
// negotiates errors; JSON if none is named, not negotiated.
func TestStatusOutput(t *testing.T) {
	for accept, want := range map[string]format{
		"": formatJSON, "text/html": formatJSON, "application/yaml": formatYAML,
		"application/vnd.kubernetes.protobuf, application/json":                                                formatProtobuf,
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json": formatJSON,
		"application/json;as=Table;g=meta.k8s.io;v=v1,application/yaml":                                        formatYAML,
	} {
		got, ok := statusOutput(&http.Request{Header: http.Header{"Accept": {accept}}}, true)
		if got != (output{format: want}) || ok != (accept != "text/html") {
			t.Errorf("Accept %q: %+v %v, want format %v", accept, got, ok, want)
		}
	}
	// Discovery's errors are never protobuf.
	if got, _ := statusOutput(&http.Request{Header: http.Header{"Accept": {"application/vnd.kubernetes.protobuf, application/yaml"}}}, false); got.format != formatYAML {
		t.Errorf("discovery: %+v", got)
	}
}
