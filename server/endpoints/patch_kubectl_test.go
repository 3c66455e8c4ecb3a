package endpoints_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// kubectlRunner runs kubectl against a test server, isolated from the user's kubeconfig and
// discovery cache.
type kubectlRunner struct {
	t    *testing.T
	api  *testAPI
	path string
	home string
}

func newKubectl(t *testing.T, api *testAPI) *kubectlRunner {
	path, err := exec.LookPath("kubectl")
	if err != nil {
		sqltest.Missing(t, "kubectl is not on the PATH: "+err.Error())
	}
	return &kubectlRunner{t: t, api: api, path: path, home: t.TempDir()}
}

// run runs kubectl with stdin; it returns stdout, and stderr when kubectl fails.
func (k *kubectlRunner) run(stdin string, args ...string) (stdout, stderr string, err error) {
	k.t.Helper()
	cmd := exec.Command(k.path, append([]string{"--server", k.api.http.URL, "--cache-dir", filepath.Join(k.home, "cache")}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(k.home, "config"), "HOME="+k.home)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// must runs kubectl and fails the test unless it succeeds with that output.
func (k *kubectlRunner) must(stdin, wantOut string, args ...string) {
	k.t.Helper()
	out, stderr, err := k.run(stdin, args...)
	if err != nil || out != wantOut {
		k.t.Fatalf("kubectl %s: %v\nstdout %q, want %q\nstderr %s", strings.Join(args, " "), err, out, wantOut, stderr)
	}
}

// fails runs kubectl and fails the test unless it fails with that error output.
func (k *kubectlRunner) fails(stdin, wantErr string, args ...string) {
	k.t.Helper()
	out, stderr, err := k.run(stdin, args...)
	if err == nil || stderr != wantErr {
		k.t.Fatalf("kubectl %s: %v\nstdout %q\nstderr %q, want %q", strings.Join(args, " "), err, out, stderr, wantErr)
	}
}

const kubectlConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: k
  namespace: default
data:
  a: "1"
`

func TestKubectlPatch(t *testing.T) {
	api := sqliteAPI(t)
	k := newKubectl(t, api)

	// Client-side apply: create, then a strategic merge patch computed from the last applied
	// configuration.
	k.must(kubectlConfigMap, "configmap/k created\n", "apply", "-f", "-")
	k.must(strings.Replace(kubectlConfigMap, `a: "1"`, `b: "2"`, 1), "configmap/k configured\n", "apply", "-f", "-")
	k.must("", `{"b":"2"}`, "get", "configmap", "k", "-o", "jsonpath={.data}")

	k.must("", "configmap/k patched\n", "patch", "configmap", "k", "--type", "merge", "-p", `{"data":{"c":"3"}}`)
	k.must("", "configmap/k patched\n", "patch", "configmap", "k", "--type", "json", "-p", `[{"op":"remove","path":"/data/b"}]`)
	k.must("", "configmap/k patched\n", "patch", "configmap", "k", "--type", "strategic", "-p", `{"data":{"d":"4"}}`)
	k.must("", "configmap/k patched (no change)\n", "patch", "configmap", "k", "--type", "merge", "-p", `{"data":{"d":"4"}}`)
	k.must("", `{"c":"3","d":"4"}`, "get", "configmap", "k", "-o", "jsonpath={.data}")
	k.fails("", "The request is invalid: the server rejected our request due to an error in our request\n",
		"patch", "configmap", "k", "--type", "json", "-p", `[{"op":"test","path":"/data/c","value":"x"}]`)

	k.must("", "configmap/k labeled\n", "label", "configmap", "k", "team=blue")
	k.must("", "configmap/k annotated\n", "annotate", "configmap", "k", "note=hi")
	k.must("", "blue hi", "get", "configmap", "k", "-o", `jsonpath={.metadata.labels.team} {.metadata.annotations.note}`)
}

func TestKubectlServerSideApply(t *testing.T) {
	api := sqliteAPI(t)
	k := newKubectl(t, api)

	k.must(kubectlConfigMap, "configmap/k serverside-applied\n", "apply", "--server-side", "-f", "-")
	k.must("", "configmap/k patched\n", "patch", "configmap", "k", "--type", "merge", "-p", `{"data":{"a":"2"}}`, "--field-manager", "other")
	k.fails(kubectlConfigMap, `error: Apply failed with 1 conflict: conflict with "other" using v1: .data.a
Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `+"`--force-conflicts`"+` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts
`, "apply", "--server-side", "-f", "-")
	k.must(kubectlConfigMap, "configmap/k serverside-applied\n", "apply", "--server-side", "--force-conflicts", "-f", "-")
	k.must("", `1 kubectl`, "get", "configmap", "k", "-o", `jsonpath={.data.a} {.metadata.managedFields[?(@.operation=="Apply")].manager}`)

	// Taking over from client-side apply: another manager conflicts with it; kubectl itself
	// upgrades the fields its last applied configuration still has as they are.
	clientSide := strings.Replace(kubectlConfigMap, "name: k", "name: c", 1)
	k.must(clientSide, "configmap/c created\n", "apply", "-f", "-")
	changed := strings.Replace(clientSide, `a: "1"`, `a: "2"`, 1)
	_, stderr, err := k.run(changed, "apply", "--server-side", "--field-manager", "deployer", "-f", "-")
	if want := `error: Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a` + "\n"; err == nil || !strings.HasPrefix(stderr, want) {
		t.Fatalf("server-side apply over client-side apply: %v: %s", err, stderr)
	}
	k.must(changed, "configmap/c serverside-applied\n", "apply", "--server-side", "-f", "-")
	k.must("", "2", "get", "configmap", "c", "-o", "jsonpath={.data.a}")

	// Custom resources: client-side apply sends merge patches.
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, 201)
	widget := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\nspec:\n  color: red\n"
	k.must(widget, "widget.example.com/w created\n", "apply", "-f", "-")
	k.must(strings.Replace(widget, "red", "blue", 1), "widget.example.com/w configured\n", "apply", "-f", "-")
	k.must(strings.Replace(widget, "red", "green", 1), "widget.example.com/w serverside-applied\n", "apply", "--server-side", "--force-conflicts", "-f", "-")
	k.must("", "green", "get", "widget", "w", "-o", "jsonpath={.spec.color}")
}

// TestKubectlApplyCRD applies a CRD itself, client-side then server-side, as manifests are.
func TestKubectlApplyCRD(t *testing.T) {
	api := sqliteAPI(t)
	k := newKubectl(t, api)
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`
	k.must(crd, "customresourcedefinition.apiextensions.k8s.io/gizmos.example.com created\n", "apply", "-f", "-")
	k.must(strings.Replace(crd, "size: {type: integer}", "size: {type: integer}, color: {type: string}", 1),
		"customresourcedefinition.apiextensions.k8s.io/gizmos.example.com configured\n", "apply", "-f", "-")
	k.must(crd, "customresourcedefinition.apiextensions.k8s.io/gizmos.example.com serverside-applied\n", "apply", "--server-side", "-f", "-")
	k.must(crd, "customresourcedefinition.apiextensions.k8s.io/gizmos.example.com serverside-applied\n", "apply", "--server-side", "-f", "-")
	k.must("apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g\n  namespace: default\nspec:\n  size: 2\n", "gizmo.example.com/g serverside-applied\n", "apply", "--server-side", "-f", "-")
	k.must("", "2", "get", "gizmo", "g", "-o", "jsonpath={.spec.size}")
}
