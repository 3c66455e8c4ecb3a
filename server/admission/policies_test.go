package admission

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/warning"

	"github.com/sqlkube/sqlkube/server/admission/admissiontest"
	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/registry"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

const forbiddenConfigMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad"},"data":{"forbidden":"x"}}`

// A ValidatingAdmissionPolicy bound with Deny refuses a write as kube does, on creates and on
// updates whatever their way, dry runs included.
func TestValidatingAdmissionPolicyDenies(t *testing.T) {
	h := newHarness(t, harnessConfig{objects: []string{admissiontest.DenyingPolicy, admissiontest.Binding("no-forbidden-binding", "no-forbidden", `["Deny"]`)}})
	ctx := asAlice(t.Context())
	_, err := h.create(ctx, configMaps, forbiddenConfigMap, true)
	want := "configmaps \"bad\" is forbidden: ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-binding' denied request: key forbidden in bad"
	if status := statusOf(t, err); status.Code != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid || status.Message != want {
		t.Errorf("create: %v, want 422 %q", status, want)
	}
	if _, err := h.create(ctx, configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"good"},"data":{"fine":"x"}}`, false); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = h.registry.Patch(ctx, registry.Ref{Resource: h.resource("", "v1", "configmaps"), Namespace: "default", Name: "good"},
		types.MergePatchType, []byte(`{"data":{"forbidden":"y"}}`), &metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "key forbidden in good") {
		t.Errorf("patch adding the key: %v, want the policy's denial", err)
	}
}

// Bound with Warn, the policy lets the write through with a warning.
func TestValidatingAdmissionPolicyWarns(t *testing.T) {
	h := newHarness(t, harnessConfig{objects: []string{admissiontest.DenyingPolicy, admissiontest.Binding("no-forbidden-binding", "no-forbidden", `["Warn"]`)}})
	warnings := &recordedWarnings{}
	ctx := warning.WithWarningRecorder(asAlice(t.Context()), warnings)
	if _, err := h.create(ctx, configMaps, forbiddenConfigMap, true); err != nil {
		t.Fatal(err)
	}
	want := "Validation failed for ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden-binding': key forbidden in bad"
	if len(*warnings) != 1 || (*warnings)[0] != want {
		t.Errorf("warnings %q, want %q", *warnings, want)
	}
}

type recordedWarnings []string

func (w *recordedWarnings) AddWarning(_, text string) { *w = append(*w, text) }

// statusOf is err's Status; it fails the test if err is not a Status error.
func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("error %v, want a Status", err)
	}
	return status.Status()
}

// A MutatingAdmissionPolicy's patch is stored.
func TestMutatingAdmissionPolicyPatches(t *testing.T) {
	h := newHarness(t, harnessConfig{objects: []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":"label"},"spec":{"reinvocationPolicy":"Never",
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {'mutated': 'yes'}}}"}}]}}`,
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":"label"},"spec":{"policyName":"label"}}`}})
	// The policy applies its configuration through a type converter built from the server's
	// OpenAPI, which the plugin fetches in the background after it starts: until then it refuses
	// the write (kube-apiserver's does too), so the create is retried until it is admitted.
	var created *unstructured.Unstructured
	controllertest.Eventually(t, "the policy admits a ConfigMap", func() bool {
		var err error
		created, err = h.create(asAlice(t.Context()), configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`, false)
		return err == nil
	})
	if created.GetLabels()["mutated"] != "yes" {
		t.Errorf("stored %v, want the policy's label", created.Object)
	}
}
