package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const cronTabCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec: {type: string}
              image: {type: string}
`

const cronTab = `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
  namespace: demo
spec:
  cronSpec: "* * * * */5"
  image: my-cron-image
`

func TestKubectl(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is needed for this test: %v", err)
	}
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		expectOutput(t, s.mustKubectl(t, "", "create", "namespace", "demo"), "namespace/demo created")
		_, err := s.kubectl(t, "", "create", "namespace", "demo")
		expectKubectlError(t, err, `Error from server (AlreadyExists): namespaces "demo" already exists`)
		expectOutput(t, s.mustKubectl(t, "", "-n", "demo", "create", "configmap", "x", "--from-literal=a=b"), "configmap/x created")

		t.Run("get", func(t *testing.T) { checkKubectlGet(t, s) })
		t.Run("replace", func(t *testing.T) {
			expectOutput(t, s.mustKubectl(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"demo"},"data":{"a":"c"}}`,
				"replace", "-f", "-"), "configmap/x replaced")
			if got := kubectlConfigMap(t, s, "json"); got.Data["a"] != "c" {
				t.Errorf("after replace, data = %v, want a=c", got.Data)
			}
		})
		t.Run("apply", func(t *testing.T) { checkKubectlApply(t, s) })
		t.Run("api-resources", func(t *testing.T) { checkAPIResources(t, s) })
		t.Run("delete", func(t *testing.T) {
			expectOutput(t, s.mustKubectl(t, "", "-n", "demo", "delete", "configmap", "x"), `configmap "x" deleted`)
			_, err := s.kubectl(t, "", "-n", "demo", "get", "configmap", "x")
			expectKubectlError(t, err, `Error from server (NotFound): configmaps "x" not found`)
		})
	})
}

// checkKubectlGet reads configmap x as JSON, YAML and a table.
func checkKubectlGet(t *testing.T, s *sqlkubeServer) {
	t.Helper()
	fromJSON := kubectlConfigMap(t, s, "json")
	if fromJSON.Kind != "ConfigMap" || fromJSON.APIVersion != "v1" || fromJSON.Namespace != "demo" ||
		!cmp.Equal(fromJSON.Data, map[string]string{"a": "b"}) || fromJSON.UID == "" || fromJSON.ResourceVersion == "" {
		t.Errorf("kubectl get -o json: %+v", fromJSON)
	}
	if diff := cmp.Diff(fromJSON, kubectlConfigMap(t, s, "yaml")); diff != "" {
		t.Errorf("-o yaml differs from -o json (-json +yaml):\n%s", diff)
	}
	table := s.mustKubectl(t, "", "-n", "demo", "get", "configmaps", "x")
	rows := tableRows(table)
	if len(rows) != 2 || !cmp.Equal(rows[0], []string{"NAME", "DATA", "AGE"}) || !cmp.Equal(rows[1][:2], []string{"x", "1"}) {
		t.Errorf("kubectl get configmaps x printed:\n%s", table)
	}
}

// kubectlConfigMap reads configmap x in demo with -o format (json or yaml).
func kubectlConfigMap(t *testing.T, s *sqlkubeServer, format string) *corev1.ConfigMap {
	t.Helper()
	out := s.mustKubectl(t, "", "-n", "demo", "get", "configmap", "x", "-o", format)
	var cm corev1.ConfigMap
	var err error
	if format == "json" {
		err = json.Unmarshal([]byte(out), &cm)
	} else {
		err = yaml.Unmarshal([]byte(out), &cm)
	}
	if err != nil {
		t.Fatalf("kubectl get -o %s printed something that is not a ConfigMap (%v):\n%s", format, err, out)
	}
	return &cm
}

// checkKubectlApply applies a CRD, then an object of its kind, then a change to it (a patch),
// then deletes the object. The CRD stays for the api-resources check.
func checkKubectlApply(t *testing.T, s *sqlkubeServer) {
	t.Helper()
	expectOutput(t, s.mustKubectl(t, cronTabCRD, "apply", "-f", "-"),
		"customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created")
	crds := s.apiextensions().ApiextensionsV1().CustomResourceDefinitions()
	eventually(t, 30*time.Second, "CRD crontabs Established", func() (bool, error) {
		crd, err := crds.Get(ctx, "crontabs.stable.example.com", metav1.GetOptions{})
		return err == nil && crdCondition(crd, apiextensionsv1.Established), err
	})

	expectOutput(t, s.mustKubectl(t, cronTab, "apply", "-f", "-"), "crontab.stable.example.com/my-cron created")
	expectOutput(t, s.mustKubectl(t, cronTab, "apply", "-f", "-"), "crontab.stable.example.com/my-cron unchanged")
	changed := strings.Replace(cronTab, "my-cron-image", "my-cron-image:v2", 1)
	expectOutput(t, s.mustKubectl(t, changed, "apply", "-f", "-"), "crontab.stable.example.com/my-cron configured")

	image := s.mustKubectl(t, "", "-n", "demo", "get", "ct", "my-cron", "-o", "jsonpath={.spec.image}")
	if image != "my-cron-image:v2" {
		t.Errorf("spec.image after apply = %q, want my-cron-image:v2", image)
	}
	expectOutput(t, s.mustKubectl(t, changed, "delete", "-f", "-"), `crontab.stable.example.com "my-cron" deleted`)
}

// checkAPIResources checks that kubectl api-resources lists built-ins and the CRD's type.
func checkAPIResources(t *testing.T, s *sqlkubeServer) {
	t.Helper()
	out := s.mustKubectl(t, "", "api-resources")
	want := map[string][]string{
		"configmaps": {"configmaps", "cm", "v1", "true", "ConfigMap"},
		"leases":     {"leases", "coordination.k8s.io/v1", "true", "Lease"},
		"crontabs":   {"crontabs", "ct", "stable.example.com/v1", "true", "CronTab"},
		"namespaces": {"namespaces", "ns", "v1", "false", "Namespace"},
	}
	for _, row := range tableRows(out) {
		if w, ok := want[row[0]]; ok {
			if !cmp.Equal(row, w) {
				t.Errorf("api-resources row %v, want %v", row, w)
			}
			delete(want, row[0])
		}
	}
	if len(want) > 0 {
		t.Errorf("api-resources does not list %v:\n%s", want, out)
	}
}

// tableRows splits kubectl's table output into rows of fields.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

func expectOutput(t *testing.T, got, want string) {
	t.Helper()
	if strings.TrimSpace(got) != want {
		t.Errorf("kubectl printed %q, want %q", strings.TrimSpace(got), want)
	}
}

func expectKubectlError(t *testing.T, err error, wantStderr string) {
	t.Helper()
	kerr, ok := err.(*kubectlError)
	if !ok {
		t.Fatalf("kubectl succeeded or did not run (%v), want it to fail with %q", err, wantStderr)
	}
	if strings.TrimSpace(kerr.stderr) != wantStderr {
		t.Errorf("kubectl stderr %q, want %q", strings.TrimSpace(kerr.stderr), wantStderr)
	}
}
