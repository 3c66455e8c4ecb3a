package endpoints_test

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const deploymentsPath = "/apis/apps/v1/namespaces/default/deployments"

// TestDeploymentsWithKubesRules: apps/v1 deployments are served with kube-apiserver's own
// rules: its defaults, its validation errors, its /scale of spec.replicas and spec.selector.
func TestDeploymentsWithKubesRules(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		created := api.do("POST", deploymentsPath, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
			"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
			"spec":{"containers":[{"name":"nginx","image":"nginx"}]}}}}`).expect(t, http.StatusCreated).object(t)
		for path, want := range map[string]any{
			"spec.replicas": float64(1), "spec.strategy.type": "RollingUpdate", "spec.revisionHistoryLimit": float64(10),
			"spec.template.spec.restartPolicy": "Always", "metadata.generation": float64(1),
		} {
			if got := nested(created, strings.Split(path, ".")...); got != want {
				t.Errorf("%s: %v, want %v", path, got, want)
			}
		}
		if pullPolicy := nested(created, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["imagePullPolicy"]; pullPolicy != "Always" {
			t.Errorf("imagePullPolicy of an image without a tag: %v", pullPolicy)
		}

		api.do("POST", deploymentsPath, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bad"},
			"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[]}}}}`).expectStatus(t, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: `Deployment.apps "bad" is invalid: spec.template.spec.containers: Required value`,
			Details: &metav1.StatusDetails{Name: "bad", Group: "apps", Kind: "Deployment", Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueRequired, Message: "Required value", Field: "spec.template.spec.containers"}}}})

		scale := decodeScaleResponse(t, api.do("PATCH", deploymentsPath+"/web/scale?fieldManager=scaler", `{"spec":{"replicas":3}}`,
			"Content-Type: application/merge-patch+json").expect(t, http.StatusOK))
		if scale.Spec.Replicas != 3 || scale.Status.Selector != "app=web" || scale.Name != "web" {
			t.Fatalf("scale %+v", scale)
		}
		api.do("PATCH", deploymentsPath+"/web/scale", `{"spec":{"replicas":-1}}`, "Content-Type: application/merge-patch+json").expectStatus(t, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: `Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`,
			Details: &metav1.StatusDetails{Name: "web", Group: "autoscaling", Kind: "Scale", Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: -1: must be greater than or equal to 0", Field: "spec.replicas"}}}})
		scaled := api.do("GET", deploymentsPath+"/web", "").expect(t, http.StatusOK).object(t)
		if nested(scaled, "spec", "replicas") != float64(3) || nested(scaled, "metadata", "generation") != float64(2) {
			t.Fatalf("scaled deployment %v", scaled)
		}
		if entry := managedFieldsEntry(t, scaled, "scaler"); entry["subresource"] != "scale" ||
			!equalJSON(entry["fieldsV1"], map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}) {
			t.Fatalf("managedFields entry of the scaler: %v", entry)
		}

		// A server-side apply of a built-in's Scale that changes it (controller-runtime's
		// SubResourceClient Apply) is converted to a Scale, as kube's scheme converts it; only
		// a custom resource's fails (kube's 500).
		applied := decodeScaleResponse(t, api.do("PATCH", deploymentsPath+"/web/scale?fieldManager=applier&force=true",
			`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":5}}`,
			"Content-Type: application/apply-patch+yaml").expect(t, http.StatusOK))
		if applied.Spec.Replicas != 5 {
			t.Fatalf("applied scale %+v, want 5 replicas", applied)
		}
		if entry := managedFieldsEntry(t, api.do("GET", deploymentsPath+"/web", "").expect(t, http.StatusOK).object(t), "applier"); entry["operation"] != "Apply" || entry["subresource"] != "scale" {
			t.Fatalf("managedFields entry of the applier: %v", entry)
		}
	})
}

// TestDeploymentsWithKubectl: kubectl creates, scales and lists deployments, with kube's
// columns.
func TestDeploymentsWithKubectl(t *testing.T) {
	kubectl := newKubectl(t, sqliteAPI(t))
	kubectl.must("", "deployment.apps/web created\n", "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
	kubectl.must("", "deployment.apps/web scaled\n", "scale", "deployment", "web", "--replicas=4")
	out, stderr, err := kubectl.run("", "get", "deploy", "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 {
		t.Fatalf("kubectl get deploy: %v %q %s", err, out, stderr)
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	wantHeader := []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"}
	if strings.Join(header, " ") != strings.Join(wantHeader, " ") || len(row) != len(wantHeader) ||
		row[0] != "web" || row[1] != "0/4" || row[5] != "nginx" || row[6] != "nginx:1.27" || row[7] != "app=web" {
		t.Errorf("kubectl get deploy -o wide:\n%s", out)
	}
	kubectl.must("", "deployment.apps/web\n", "get", "all", "-o", "name")

	// A server-side apply gets kube's defaults too, as kube-apiserver's field manager gives them.
	kubectl.must(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"applied"},
	  "spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"c:1"}]}}}}`,
		"deployment.apps/applied serverside-applied\n", "apply", "--server-side", "-f", "-")
	kubectl.must("", "10 Always", "get", "deploy", "applied", "-o", "jsonpath={.spec.revisionHistoryLimit} {.spec.template.spec.restartPolicy}")
}
