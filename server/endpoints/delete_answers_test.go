package endpoints_test

import (
	"net/http"
	"slices"
	"testing"
)

// TestDeleteAnswersAsKubesStorage: a delete is answered as kube-apiserver's storage of the type
// answers it: a ServiceAccount (whose storage returns deleted objects) with the object, a
// ConfigMap with a Success Status; a batch/v1 Job deleted without a propagation policy orphans
// its Pods by default (the orphan finalizer holds it) with kube's warning, and one deleted with
// Background goes at once.
func TestDeleteAnswersAsKubesStorage(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do("POST", "/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"robot"}}`).expect(t, http.StatusCreated)
		if deleted := api.do("DELETE", "/api/v1/namespaces/default/serviceaccounts/robot", "").expect(t, http.StatusOK).object(t); deleted["kind"] != "ServiceAccount" {
			t.Errorf("deleting a ServiceAccount answered %v, want the ServiceAccount", deleted)
		}
		api.do("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"c"}}`).expect(t, http.StatusCreated)
		if deleted := api.do("DELETE", "/api/v1/namespaces/default/configmaps/c", "").expect(t, http.StatusOK).object(t); deleted["kind"] != "Status" {
			t.Errorf("deleting a ConfigMap answered %v, want a Status", deleted)
		}

		const jobs = "/apis/batch/v1/namespaces/default/jobs"
		job := func(name string) string {
			return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`
		}
		api.do("POST", jobs, job("orphaned")).expect(t, http.StatusCreated)
		resp := api.do("DELETE", jobs+"/orphaned", "").expect(t, http.StatusOK)
		held := resp.object(t)
		finalizers, _ := nested(held, "metadata", "finalizers").([]any)
		if !slices.Contains(finalizers, any("orphan")) || nested(held, "metadata", "deletionTimestamp") == nil {
			t.Errorf("a Job deleted without a policy: %v, want it held by the orphan finalizer", held)
		}
		if warning := resp.header.Get("Warning"); warning != `299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"` {
			t.Errorf("Warning %q", warning)
		}
		api.do("POST", jobs, job("background")).expect(t, http.StatusCreated)
		resp = api.do("DELETE", jobs+"/background", `{"propagationPolicy":"Background"}`).expect(t, http.StatusOK)
		if deleted := resp.object(t); deleted["kind"] != "Status" || resp.header.Get("Warning") != "" {
			t.Errorf("a Job deleted with Background: %v, Warning %q", deleted, resp.header.Get("Warning"))
		}
	})
}
