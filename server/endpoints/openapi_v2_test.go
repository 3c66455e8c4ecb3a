package endpoints_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestOpenAPIV2(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)

	resp := api.do("GET", "/openapi/v2", "", "Accept: application/json").expect(t, http.StatusOK)
	if ct := resp.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var doc spec.Swagger
	if err := json.Unmarshal(resp.body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"io.k8s.api.core.v1.ConfigMap", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "com.example.v1.Widget", "com.example.v2.Widget"} {
		if _, ok := doc.Definitions[name]; !ok {
			t.Errorf("no definition %s", name)
		}
	}
	if spec := doc.Definitions["io.k8s.api.apps.v1.DeploymentSpec"]; !slices.Equal(spec.Required, []string{"selector", "template"}) {
		t.Errorf("DeploymentSpec %+v, want kube's (selector and template required)", spec)
	}
	if _, ok := doc.Paths.Paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]; !ok {
		t.Error("no path for a widget")
	}
	// A built-in's PATCH takes fieldValidation, as kubectl checks before validating itself.
	patch := doc.Paths.Paths["/api/v1/namespaces/{namespace}/configmaps/{name}"].Patch
	if patch == nil || !slices.ContainsFunc(patch.Parameters, func(p spec.Parameter) bool { return p.Name == "fieldValidation" && p.In == "query" }) ||
		!equalJSON(patch.Extensions["x-kubernetes-group-version-kind"], map[string]string{"group": "", "version": "v1", "kind": "ConfigMap"}) {
		t.Errorf("configmap PATCH operation %+v", patch)
	}
	if strings.Contains(string(resp.body), "#/components/schemas/") {
		t.Error("references to OpenAPI v3 components in the v2 document")
	}

	etag := resp.header.Get("ETag")
	api.do("GET", "/openapi/v2", "", "Accept: application/json", "If-None-Match: "+etag).expect(t, http.StatusNotModified)
	// A new CRD changes the document.
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", sprocketCRD).expect(t, http.StatusCreated)
	changed := api.do("GET", "/openapi/v2", "", "Accept: application/json", "If-None-Match: "+etag).expect(t, http.StatusOK)
	if !strings.Contains(string(changed.body), `"com.example.v1.Sprocket"`) {
		t.Error("the new CRD is not in the document")
	}
	api.do("POST", "/openapi/v2", "").expect(t, http.StatusMethodNotAllowed)

	// client-go reads the protobuf encoding.
	client := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: api.http.URL})
	proto, err := client.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	if proto.Swagger != "2.0" || len(proto.Definitions.AdditionalProperties) == 0 {
		t.Fatalf("protobuf document: swagger %q, %d definitions", proto.Swagger, len(proto.Definitions.AdditionalProperties))
	}
}
