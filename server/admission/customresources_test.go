package admission

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/admission/admissiontest"
	"github.com/sqlkube/sqlkube/server/registry"
)

// widgetCRD has two versions, v1 stored, with strategy None: equivalent resources.
const widgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
 "versions":[
  {"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
     "spec":{"type":"object","properties":{"color":{"type":"string"}}},
     "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}}},
  {"name":"v2","served":true,"storage":false,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

// sprocketCRD has a scale subresource.
const sprocketCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"sprockets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"sprockets","singular":"sprocket","kind":"Sprocket","listKind":"SprocketList"},
 "versions":[{"name":"v1","served":true,"storage":true,
   "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
     "spec":{"type":"object","properties":{"replicas":{"type":"integer"}}},
     "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`

var (
	widgetsV1 = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetsV2 = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}
)

func widget(version, name, color string) string {
	return `{"apiVersion":"example.com/` + version + `","kind":"Widget","metadata":{"name":"` + name + `"},"spec":{"color":"` + color + `"}}`
}

// A policy on custom resources sees them in the version requested, on every write path;
// the status subresource is admitted with the object as it would be stored.
func TestValidatingAdmissionPolicyOnCustomResources(t *testing.T) {
	h := newHarness(t, harnessConfig{crds: []string{widgetCRD}, objects: []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"no-black"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":["example.com"],"apiVersions":["*"],"operations":["*"],"resources":["widgets","widgets/status"]}]},
		"validations":[{"expression":"request.operation == 'DELETE' || object.spec.color != 'black'","messageExpression":"'no black ' + request.kind.version"}]}}`,
		admissiontest.Binding("no-black", "no-black", `["Deny"]`)}})
	ctx := asAlice(t.Context())
	for _, gvr := range []schema.GroupVersionResource{widgetsV1, widgetsV2} {
		_, err := h.create(ctx, gvr, widget(gvr.Version, "b", "black"), true)
		if status := statusOf(t, err); status.Code != http.StatusUnprocessableEntity || !strings.HasSuffix(status.Message, "no black "+gvr.Version) {
			t.Errorf("create through %s: %v, want the policy's denial in %s", gvr.Version, status, gvr.Version)
		}
	}
	w, err := h.create(ctx, widgetsV1, widget("v1", "w", "red"), false)
	if err != nil {
		t.Fatal(err)
	}
	// The status strategy keeps the spec: the policy sees red.
	status := object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"`+w.GetResourceVersion()+`"},"spec":{"color":"black"},"status":{"ready":true}}`)
	ref := registry.Ref{Resource: h.resource("example.com", "v1", "widgets"), Namespace: "default", Name: "w"}
	if _, _, err := h.registry.Update(ctx, registry.Ref{Resource: ref.Resource, Namespace: "default", Name: "w", Subresource: "status"}, status, &metav1.UpdateOptions{}); err != nil {
		t.Errorf("status update: %v", err)
	}
	_, _, _, err = h.registry.Patch(ctx, ref, types.MergePatchType, []byte(`{"spec":{"color":"black"}}`), &metav1.PatchOptions{})
	if status := statusOf(t, err); !strings.HasSuffix(status.Message, "no black v1") {
		t.Errorf("patch: %v, want the policy's denial", status)
	}
}

// With matchPolicy Equivalent (the default), a policy on one version of a custom resource
// admits requests to its other versions, with the object converted to the version it matched.
func TestValidatingAdmissionPolicyMatchesEquivalentVersions(t *testing.T) {
	h := newHarness(t, harnessConfig{crds: []string{widgetCRD}, objects: []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"no-black"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["widgets"]}]},
		"validations":[{"expression":"object.spec.color != 'black'","messageExpression":"'no black ' + object.apiVersion + ' in ' + request.kind.version + ' for ' + request.requestKind.version"}]}}`,
		admissiontest.Binding("no-black", "no-black", `["Deny"]`)}})
	ctx := asAlice(t.Context())
	_, err := h.create(ctx, widgetsV2, widget("v2", "b", "black"), true)
	if status := statusOf(t, err); !strings.HasSuffix(status.Message, "no black example.com/v1 in v1 for v2") {
		t.Errorf("create through v2: %v, want the policy to see the object in v1", status)
	}
	if _, err := h.create(ctx, widgetsV2, widget("v2", "r", "red"), false); err != nil {
		t.Error(err)
	}
	// The policy saw a converted copy: the request's object stays in v2.
	req := &registry.AdmissionRequest{Resource: h.resource("example.com", "v2", "widgets"), Kind: widgetsV2.GroupVersion().WithKind("Widget"),
		Namespace: "default", Name: "r", Object: object(t, widget("v2", "r", "red")), Operation: "CREATE", Options: &metav1.CreateOptions{}}
	if err := h.chain.Validate(ctx, req); err != nil || req.Object.GetAPIVersion() != "example.com/v2" {
		t.Errorf("validate: %v, object %v; want it admitted and left in v2", err, req.Object.Object)
	}
}

// A policy's parameter may be a custom resource.
func TestValidatingAdmissionPolicyWithCustomResourceParams(t *testing.T) {
	h := newHarness(t, harnessConfig{crds: []string{widgetCRD}, params: []string{widget("v1", "params", "red")}, objects: []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"color"},"spec":{"paramKind":{"apiVersion":"example.com/v1","kind":"Widget"},
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"validations":[{"expression":"!has(object.data) || !('color' in object.data) || object.data.color == params.spec.color","messageExpression":"'color must be ' + params.spec.color"}]}}`,
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"color"},"spec":{"policyName":"color","validationActions":["Deny"],
		"paramRef":{"name":"params","namespace":"default","parameterNotFoundAction":"Deny"}}}`}})
	ctx := asAlice(t.Context())
	var err error
	eventually(t, "the policy reads its parameter", func() bool {
		_, err = h.create(ctx, configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"blue"},"data":{"color":"blue"}}`, true)
		return err != nil && !strings.Contains(err.Error(), "not yet ready")
	})
	if !strings.HasSuffix(err.Error(), "denied request: color must be red") {
		t.Errorf("denial %v", err)
	}
	if _, err := h.create(ctx, configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"red"},"data":{"color":"red"}}`, true); err != nil {
		t.Error(err)
	}
}

// Through /scale, admission sees the autoscaling/v1 Scale, as on kube.
func TestValidatingAdmissionPolicyOnScale(t *testing.T) {
	h := newHarness(t, harnessConfig{crds: []string{sprocketCRD}, objects: []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"max-scale"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["UPDATE"],"resources":["sprockets/scale"]}]},
		"validations":[{"expression":"object.spec.replicas <= 5","messageExpression":"'at most 5 in a ' + object.kind + ', from ' + string(oldObject.spec.replicas)"}]}}`,
		admissiontest.Binding("max-scale", "max-scale", `["Deny"]`)}})
	ref := h.sprocket()
	ctx := asAlice(t.Context())
	_, _, err := h.registry.PatchScale(ctx, ref, types.MergePatchType, []byte(`{"spec":{"replicas":6}}`), &metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.HasSuffix(err.Error(), "denied request: at most 5 in a Scale, from 1") {
		t.Errorf("scale to 6: %v, want the policy's denial", err)
	}
	if scaled := h.patchScale(ctx, ref, 5); scaled.Spec.Replicas != 5 {
		t.Errorf("scaled to %d, want 5", scaled.Spec.Replicas)
	}
}

// sprocket creates the sprocket s with one replica.
func (h *harness) sprocket() registry.Ref {
	h.t.Helper()
	h.store(`{"apiVersion":"example.com/v1","kind":"Sprocket","metadata":{"name":"s"},"spec":{"replicas":1}}`)
	return registry.Ref{Resource: h.resource("example.com", "v1", "sprockets"), Namespace: "default", Name: "s", Subresource: "scale"}
}

func (h *harness) patchScale(ctx context.Context, ref registry.Ref, replicas int) *autoscalingv1.Scale {
	h.t.Helper()
	scaled, _, err := h.registry.PatchScale(ctx, ref, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas), &metav1.PatchOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return scaled
}
