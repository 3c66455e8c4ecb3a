package registry

import (
	"errors"
	"testing"

	"github.com/sqlkube/sqlkube/server/registry/continuetoken"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPlanList(t *testing.T) {
	scope := continuetoken.Scope{Resource: "configmaps", Namespace: "default", Namespaced: true}
	after := sqlstore.Key{Resource: "configmaps", Namespace: "default", Name: "b"}
	token := continuetoken.Encode(scope, continuetoken.Point{Revision: 7, After: after})
	countedToken := continuetoken.Encode(scope, continuetoken.Point{Revision: 7, After: after, Remaining: 40})
	latestToken := continuetoken.Encode(scope, continuetoken.Point{Revision: continuetoken.Latest, After: after})
	countedLatestToken := continuetoken.Encode(scope, continuetoken.Point{Revision: continuetoken.Latest, After: after, Remaining: 40})
	tests := []struct {
		opts internalversion.ListOptions
		want listPlan
	}{
		{internalversion.ListOptions{}, listPlan{}},
		{internalversion.ListOptions{ResourceVersion: "0"}, listPlan{}},
		{internalversion.ListOptions{ResourceVersion: "0", Limit: 5}, listPlan{}},
		{internalversion.ListOptions{ResourceVersion: "5"}, listPlan{minRevision: 5}},
		{internalversion.ListOptions{ResourceVersion: "5", Limit: 2}, listPlan{revision: 5, minRevision: 5}},
		{internalversion.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, listPlan{revision: 5, minRevision: 5}},
		{internalversion.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 2}, listPlan{minRevision: 5}},
		{internalversion.ListOptions{Continue: token}, listPlan{revision: 7, after: after, continued: true}},
		{internalversion.ListOptions{Continue: token, ResourceVersion: "0"}, listPlan{revision: 7, after: after, continued: true}},
		{internalversion.ListOptions{Continue: latestToken}, listPlan{after: after, continued: true}},
		{internalversion.ListOptions{Continue: countedToken}, listPlan{revision: 7, after: after, continued: true, knownRemaining: 40}},
		// The latest state moves on: a count from the page before does not hold there.
		{internalversion.ListOptions{Continue: countedLatestToken}, listPlan{after: after, continued: true}},
	}
	for _, tt := range tests {
		got, err := planList(&tt.opts, scope)
		if err != nil || got != tt.want {
			t.Errorf("%+v: got %+v, %v; want %+v", tt.opts, got, err, tt.want)
		}
	}
}

// TestRenderSplicesRevision checks that the Render of a write, which encodes the object before
// its revision is known, stores what encoding it with that revision gives, also when the object
// holds the placeholder itself, and no resourceVersion for a dry-run create.
func TestRenderSplicesRevision(t *testing.T) {
	res := &resource.Resource{Version: "v1", StorageVersion: "v1", Kind: "ConfigMap"}
	for _, value := range []string{"x", revisionPlaceholder} {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a", "uid": "u"},
			"data":     map[string]any{"k": value},
		}}
		r, _ := render(res, obj)
		for rev, want := range map[int64]string{
			0:  `{"apiVersion":"v1","data":{"k":"` + value + `"},"kind":"ConfigMap","metadata":{"name":"a","uid":"u"}}`,
			42: `{"apiVersion":"v1","data":{"k":"` + value + `"},"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"42","uid":"u"}}`,
		} {
			got, err := r(rev)
			if err != nil || string(got) != want {
				t.Errorf("value %q, revision %d: got %s, %v; want %s", value, rev, got, err, want)
			}
		}
		if rv := obj.GetResourceVersion(); rv != "" {
			t.Errorf("render left resourceVersion %q on the object", rv)
		}
	}
}

// statusOf is err as a Status: an error that is not one is an internal error.
func statusOf(err error) metav1.Status {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	return status.Status()
}
