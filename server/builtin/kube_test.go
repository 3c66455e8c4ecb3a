package builtin

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const deployments = "deployments." + AppsGroup

// minimalDeployment is what `kubectl create deployment web --image=nginx:1.27` sends, less
// what kubectl itself fills in.
const minimalDeployment = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, labels: {app: web}},
  spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}},
  spec: {containers: [{name: nginx, image: "nginx:1.27"}]}}}}`

// createdDeployment is body decoded and prepared for create by the deployments' strategy, as
// the registry does it.
func createdDeployment(t *testing.T, body string) *unstructured.Unstructured {
	t.Helper()
	res := builtinResource(t, deployments)
	obj := decodedForValidation(t, res, body)
	obj.SetResourceVersion("")
	res.Strategy.PrepareForCreate(t.Context(), obj)
	res.Strategy.Canonicalize(obj)
	return obj
}

// TestDeploymentGetsKubesDefaults: a minimal Deployment gets the defaults of kube's apps/v1
// scheme as it is decoded (its own and its pod template's), and kube's PrepareForCreate sets
// generation 1 and drops any status.
func TestDeploymentGetsKubesDefaults(t *testing.T) {
	res := builtinResource(t, deployments)
	obj := decodedForValidation(t, res, minimalDeployment)
	setInt(3, "status", "replicas")(obj) // a status the client sent
	res.Strategy.PrepareForCreate(t.Context(), obj)
	if errs := res.Strategy.Validate(t.Context(), obj); len(errs) != 0 {
		t.Fatalf("a minimal deployment is invalid: %s", errorsText(errs))
	}
	want := map[string]any{
		"replicas":                int64(1),
		"revisionHistoryLimit":    int64(10),
		"progressDeadlineSeconds": int64(600),
		"strategy": map[string]any{"type": "RollingUpdate",
			"rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}},
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec": map[string]any{
				"containers": []any{map[string]any{
					"name": "nginx", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent", "resources": map[string]any{},
					"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
				}},
				"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
				"securityContext": map[string]any{}, "terminationGracePeriodSeconds": int64(30),
			},
		},
	}
	if diff := cmp.Diff(want, obj.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if obj.GetGeneration() != 1 || obj.GetAPIVersion() != "apps/v1" || obj.GetKind() != "Deployment" {
		t.Errorf("generation %d, %s %s", obj.GetGeneration(), obj.GetAPIVersion(), obj.GetKind())
	}
	if status := obj.Object["status"]; !cmp.Equal(status, map[string]any{}) {
		t.Errorf("status %v, want kube's empty status", status)
	}
}

// TestDeploymentValidation: kube's validation, with its exact causes, on create and update.
func TestDeploymentValidation(t *testing.T) {
	res := builtinResource(t, deployments)
	spec := field.NewPath("spec")
	invalid := createdDeployment(t, `{metadata: {name: web}, spec: {replicas: -1,
	  selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: other}}, spec: {containers: []}}}}`)
	got := res.Strategy.Validate(t.Context(), invalid)
	want := field.ErrorList{
		field.Invalid(spec.Child("replicas"), int64(-1), "must be greater than or equal to 0"),
		field.Invalid(spec.Child("template", "metadata", "labels"), map[string]string{"app": "other"}, "`selector` does not match template `labels`"),
		field.Required(spec.Child("template", "spec", "containers"), ""),
	}
	if diff := cmp.Diff(errorsText(want), errorsText(got)); diff != "" {
		t.Errorf("create errors (-want +got):\n%s", diff)
	}

	old := createdDeployment(t, minimalDeployment)
	old.SetResourceVersion("1")
	obj := old.DeepCopy()
	_ = unstructured.SetNestedStringMap(obj.Object, map[string]string{"app": "web", "tier": "front"}, "spec", "selector", "matchLabels")
	_ = unstructured.SetNestedStringMap(obj.Object, map[string]string{"app": "web", "tier": "front"}, "spec", "template", "metadata", "labels")
	res.Strategy.PrepareForUpdate(t.Context(), obj, old)
	got = res.Strategy.ValidateUpdate(t.Context(), obj, old)
	if len(got) != 1 || got[0].Type != field.ErrorTypeInvalid || got[0].Field != "spec.selector" || got[0].Detail != "field is immutable" {
		t.Errorf("a changed selector: %s", errorsText(got))
	}
}

// TestDeploymentGeneration: kube's strategy bumps metadata.generation on a change of spec or
// annotations, not of labels or status; a /status write keeps the spec.
func TestDeploymentGeneration(t *testing.T) {
	res := builtinResource(t, deployments)
	if res.Strategy.TracksGeneration() {
		t.Fatal("the registry would count generations kube's strategy counts")
	}
	old := createdDeployment(t, minimalDeployment)
	old.SetResourceVersion("1")
	update := func(change func(obj *unstructured.Unstructured)) int64 {
		obj := old.DeepCopy()
		change(obj)
		obj.SetGeneration(old.GetGeneration()) // as the registry does first
		res.Strategy.PrepareForUpdate(t.Context(), obj, old)
		if errs := res.Strategy.ValidateUpdate(t.Context(), obj, old); len(errs) != 0 {
			t.Fatalf("invalid update: %s", errorsText(errs))
		}
		return obj.GetGeneration()
	}
	for name, tc := range map[string]struct {
		change func(obj *unstructured.Unstructured)
		want   int64
	}{
		"replicas":    {setInt(3, "spec", "replicas"), 2},
		"annotations": {func(o *unstructured.Unstructured) { o.SetAnnotations(map[string]string{"a": "b"}) }, 2},
		"labels":      {func(o *unstructured.Unstructured) { o.SetLabels(map[string]string{"app": "web", "x": "y"}) }, 1},
		"status":      {setInt(5, "status", "replicas"), 1},
	} {
		if got := update(tc.change); got != tc.want {
			t.Errorf("%s: generation %d, want %d", name, got, tc.want)
		}
	}

	obj := old.DeepCopy()
	setInt(5, "status", "replicas")(obj)
	setInt(9, "spec", "replicas")(obj)
	status := res.Strategy.StatusStrategy()
	status.PrepareForUpdate(t.Context(), obj, old)
	if errs := status.ValidateUpdate(t.Context(), obj, old); len(errs) != 0 {
		t.Fatalf("invalid status update: %s", errorsText(errs))
	}
	replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	statusReplicas, _, _ := unstructured.NestedInt64(obj.Object, "status", "replicas")
	if replicas != 1 || statusReplicas != 5 || obj.GetGeneration() != 1 {
		t.Errorf("a /status write: spec.replicas %d, status.replicas %d, generation %d", replicas, statusReplicas, obj.GetGeneration())
	}
}

// setInt is a change of an object that sets the field at path to n.
func setInt(n int64, path ...string) func(obj *unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) { _ = unstructured.SetNestedField(obj.Object, n, path...) }
}

// TestDeploymentTable: kube's printer's columns and cells.
func TestDeploymentTable(t *testing.T) {
	res := builtinResource(t, deployments)
	obj := createdDeployment(t, minimalDeployment)
	obj.SetCreationTimestamp(metav1.NewTime(time.Now().Add(-30 * time.Minute))) // printed "30m" for a whole minute
	setInt(1, "status", "updatedReplicas")(obj)
	table, err := res.Strategy.ConvertToTable(t.Context(), &unstructured.UnstructuredList{Items: []unstructured.Unstructured{*obj}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	wantColumns := []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"}
	wantCells := []any{"web", "0/1", int64(1), int64(0), "30m", "nginx", "nginx:1.27", "app=web"}
	if !cmp.Equal(columns, wantColumns) || len(table.Rows) != 1 || !cmp.Equal(table.Rows[0].Cells, wantCells) {
		t.Errorf("columns %q, rows %+v", columns, table.Rows)
	}
}

// BenchmarkDeploymentCreateRules measures what the strategy adds to a create: decoding the
// body (with kube's defaults), then kube's PrepareForCreate, Canonicalize, Validate and
// WarningsOnCreate, each converting the object to the internal type (and back for the first
// two).
func BenchmarkDeploymentCreateRules(b *testing.B) {
	res := builtinResource(b, deployments)
	body := testJSON(b, minimalDeployment)
	for b.Loop() {
		content, _, err := res.Typed().Decode(body)
		if err != nil {
			b.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: content}
		obj.SetNamespace("default")
		res.Strategy.PrepareForCreate(b.Context(), obj)
		res.Strategy.Canonicalize(obj)
		if errs := res.Strategy.Validate(b.Context(), obj); len(errs) != 0 {
			b.Fatal(errs)
		}
		res.Strategy.WarningsOnCreate(b.Context(), obj)
	}
}

// TestDeploymentResetFields: a write of the deployment resets its status, a /status write its
// spec and labels, as kube's strategies say: their managers do not own them.
func TestDeploymentResetFields(t *testing.T) {
	s := builtinResource(t, deployments).Strategy.(*kubeTypeStrategy)
	for subresource, want := range map[string]string{"": ".status", "status": ".spec\n.metadata.labels"} {
		if got := s.ResetFields(subresource)["apps/v1"]; got == nil || got.String() != want {
			t.Errorf("%q: reset fields %v, want %s", subresource, got, want)
		}
	}
}
