package registry

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// recordingAdmission records the admission calls of writes, and labels the objects it mutates.
type recordingAdmission struct{ calls []string }

func (a *recordingAdmission) record(phase string, req *AdmissionRequest) {
	a.calls = append(a.calls, fmt.Sprintf("%s %s %s/%s obj=%t old=%t uid=%t dryRun=%t %T", phase, req.Operation, req.Subresource, req.Name,
		req.Object != nil, req.OldObject != nil, req.Object != nil && req.Object.GetUID() != "", req.DryRun, req.Options))
}

func (a *recordingAdmission) Mutate(_ context.Context, req *AdmissionRequest) error {
	a.record("mutate", req)
	if req.Object != nil {
		req.Object.SetLabels(map[string]string{"mutated": "yes"})
	}
	return nil
}

// ChecksNamespaces leaves the namespace check of creates to the registry.
func (a *recordingAdmission) ChecksNamespaces() bool { return false }

func (a *recordingAdmission) Validate(_ context.Context, req *AdmissionRequest) error {
	a.record("validate", req)
	if req.Object != nil && req.Object.GetLabels()["mutated"] != "yes" {
		return fmt.Errorf("validating admission does not see the mutation")
	}
	return nil
}

// The registry runs admission where kube-apiserver does, with what kube gives it: mutation
// before the system fields (no uid yet on a create) and validation, validation just before the
// write, deletes with no object to mutate and the deleted object to validate; dry-runs too.
func TestAdmissionOfWrites(t *testing.T) {
	admit := &recordingAdmission{}
	namespaces, configMaps := testTypes()
	r, err := New(t.Context(), openTestStore(t, sqltest.SQLiteDSN(t)), namespaces, Options{Admission: admit})
	if err != nil {
		t.Fatal(err)
	}
	ctx := genericrequest.WithUser(t.Context(), &user.DefaultInfo{Name: "alice"})
	ref := Ref{Resource: configMaps, Namespace: "default", Name: "cm"}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}}}
	stored, _, err := r.Create(ctx, Ref{Resource: configMaps, Namespace: "default"}, obj, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := storedobj.DecodeStored(stored.Value); got.GetLabels()["mutated"] != "yes" {
		t.Errorf("stored %v, want the mutation stored", got)
	}
	if _, _, _, err := r.Patch(ctx, ref, types.MergePatchType, []byte(`{"data":{"a":"b"}}`), &metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Delete(ctx, ref, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The server's own controllers write without a user: not admitted.
	if _, _, err := r.Create(t.Context(), Ref{Resource: configMaps, Namespace: "default"}, obj.DeepCopy(), &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mutate CREATE /cm obj=true old=false uid=false dryRun=false *v1.CreateOptions",
		"validate CREATE /cm obj=true old=false uid=true dryRun=false *v1.CreateOptions",
		"mutate UPDATE /cm obj=true old=true uid=true dryRun=true *v1.PatchOptions",
		"validate UPDATE /cm obj=true old=true uid=true dryRun=true *v1.PatchOptions",
		"mutate DELETE /cm obj=false old=false uid=false dryRun=false *v1.DeleteOptions",
		"validate DELETE /cm obj=false old=true uid=false dryRun=false *v1.DeleteOptions",
	}
	if !slices.Equal(admit.calls, want) {
		t.Errorf("admission calls\n%q\nwant\n%q", admit.calls, want)
	}
}
