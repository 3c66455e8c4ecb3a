package endpoints_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	hpaV1Path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
	hpaV2Path = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
)

// TestHorizontalPodAutoscalersInTwoVersions: an HPA written as autoscaling/v1 is stored as v2,
// as kube-apiserver stores it, and reads, lists, watches and applies in either version, each
// converted by kube's scheme (v1's targetCPUUtilizationPercentage is v2's cpu Resource metric).
func TestHorizontalPodAutoscalersInTwoVersions(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		v2Watch := api.watch(hpaV2Path + "?watch=1")
		v1Watch := api.watch(hpaV1Path + "?watch=1")
		created := api.do("POST", hpaV1Path+"?fieldManager=v1-writer", `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler",
			"metadata":{"name":"web"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},
			"maxReplicas":5,"targetCPUUtilizationPercentage":80}}`).expect(t, http.StatusCreated).object(t)
		if str(created, "apiVersion") != "autoscaling/v1" || nested(created, "spec", "minReplicas") != float64(1) ||
			nested(created, "spec", "targetCPUUtilizationPercentage") != float64(80) {
			t.Fatalf("created through v1: %v", created)
		}
		rv := str(created, "metadata", "resourceVersion")

		v2 := api.do("GET", hpaV2Path+"/web", "").expect(t, http.StatusOK).object(t)
		wantMetrics := []any{map[string]any{"type": "Resource", "resource": map[string]any{
			"name": "cpu", "target": map[string]any{"type": "Utilization", "averageUtilization": float64(80)}}}}
		if str(v2, "apiVersion") != "autoscaling/v2" || !equalJSON(nested(v2, "spec", "metrics"), wantMetrics) ||
			str(v2, "metadata", "resourceVersion") != rv {
			t.Fatalf("read through v2: %v", v2)
		}
		for _, ww := range []*wireWatch{v2Watch, v1Watch} {
			ev := ww.next()
			if o := ev.object(t); ev.Type != "ADDED" || str(o, "metadata", "resourceVersion") != rv {
				t.Fatalf("watch event %s %s", ev.Type, ev.Object)
			}
		}

		// A forced apply through v2 takes spec.maxReplicas from the v1 writer (a conflict across
		// versions) and changes what v1 shows.
		api.do("PATCH", hpaV2Path+"/web?fieldManager=v2-applier&force=true", `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler",
			"metadata":{"name":"web"},"spec":{"maxReplicas":7}}`, "Content-Type: application/apply-patch+yaml").expect(t, http.StatusOK)
		v1 := api.do("GET", hpaV1Path+"/web", "").expect(t, http.StatusOK).object(t)
		if str(v1, "apiVersion") != "autoscaling/v1" || nested(v1, "spec", "maxReplicas") != float64(7) ||
			nested(v1, "spec", "targetCPUUtilizationPercentage") != float64(80) {
			t.Fatalf("read through v1 after the v2 apply: %v", v1)
		}
		if entry := managedFieldsEntry(t, v1, "v1-writer"); entry["apiVersion"] != "autoscaling/v1" {
			t.Errorf("v1 writer's entry %v", entry)
		}
		if entry := managedFieldsEntry(t, v1, "v2-applier"); entry["apiVersion"] != "autoscaling/v2" ||
			!equalJSON(entry["fieldsV1"], map[string]any{"f:spec": map[string]any{"f:maxReplicas": map[string]any{}}}) {
			t.Errorf("v2 applier's entry %v", entry)
		}
		for _, ww := range []*wireWatch{v2Watch, v1Watch} {
			ev := ww.next()
			if o := ev.object(t); ev.Type != "MODIFIED" || nested(o, "spec", "maxReplicas") != float64(7) {
				t.Fatalf("watch event %s %s", ev.Type, ev.Object)
			}
		}

		// An apply through v1 of a field v2 has owned by another manager conflicts.
		api.do("PATCH", hpaV1Path+"/web?fieldManager=v1-applier", `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler",
			"metadata":{"name":"web"},"spec":{"maxReplicas":9}}`, "Content-Type: application/apply-patch+yaml").expect(t, http.StatusConflict)

		list := api.do("GET", hpaV1Path, "").expect(t, http.StatusOK).object(t)
		items, _ := list["items"].([]any)
		if str(list, "apiVersion") != "autoscaling/v1" || len(items) != 1 {
			t.Fatalf("v1 list %v", list)
		}
		api.do("POST", hpaV2Path, `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"bad"},
			"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":3,"maxReplicas":2}}`).expectStatus(t, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: "HorizontalPodAutoscaler.autoscaling \"bad\" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
			Details: &metav1.StatusDetails{Name: "bad", Group: "autoscaling", Kind: "HorizontalPodAutoscaler", Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: 2: must be greater than or equal to `minReplicas`", Field: "spec.maxReplicas"}}}})
	})
}

// TestEventsInTwoGroups: events.k8s.io/v1 events are core v1 events, stored as such: each
// group reads what the other wrote, in its own shape, and selects by its own field labels.
func TestEventsInTwoGroups(t *testing.T) {
	api := sqliteAPI(t)
	const eventsV1 = "/apis/events.k8s.io/v1/namespaces/default/events"
	api.do("POST", eventsV1, `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e1"},
		"eventTime":"2026-11-28T04:00:00.000000Z","reportingController":"example.com/ctl","reportingInstance":"i1",
		"action":"Sync","reason":"Synced","type":"Normal","note":"hello",
		"regarding":{"apiVersion":"apps/v1","kind":"Deployment","namespace":"default","name":"web"}}`).expect(t, http.StatusCreated)
	core := api.do("GET", "/api/v1/namespaces/default/events/e1", "").expect(t, http.StatusOK).object(t)
	if str(core, "message") != "hello" || str(core, "involvedObject", "name") != "web" || str(core, "reportingComponent") != "example.com/ctl" {
		t.Fatalf("read as a core event: %v", core)
	}
	selected := api.do("GET", eventsV1+"?fieldSelector=regarding.name%3Dweb,reportingController%3Dexample.com/ctl", "").expect(t, http.StatusOK).object(t)
	if items, _ := selected["items"].([]any); len(items) != 1 || str(items[0].(map[string]any), "note") != "hello" {
		t.Fatalf("selected by regarding.name: %v", selected)
	}
	api.do("GET", eventsV1+"?fieldSelector=involvedObject.name%3Dweb", "").expectStatus(t, metav1.Status{
		Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest, Message: "field label not supported: involvedObject.name"})
	// events.k8s.io validates an event by its own rules, which a core event need not meet.
	api.do("POST", eventsV1, `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e2"},"reason":"Synced","type":"Normal"}`).
		expect(t, http.StatusUnprocessableEntity)
}

// TestJobsOrphanByDefault: a batch/v1 Job deleted without a propagation policy is marked with
// the orphan finalizer, kube's default for Jobs, and the garbage collector then removes it; a
// Background delete removes it at once.
func TestJobsOrphanByDefault(t *testing.T) {
	api := sqliteAPI(t)
	const jobs = "/apis/batch/v1/namespaces/default/jobs"
	job := func(name string) string {
		return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `"},"spec":{"template":{"spec":{
			"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`
	}
	api.do("POST", jobs, job("orphaned")).expect(t, http.StatusCreated)
	marked := api.do("DELETE", jobs+"/orphaned", "").expect(t, http.StatusOK).object(t)
	if !equalJSON(nested(marked, "metadata", "finalizers"), []any{"orphan"}) || nested(marked, "metadata", "deletionTimestamp") == nil {
		t.Fatalf("deleted without a policy: %v", marked["metadata"])
	}
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return api.do("GET", jobs+"/orphaned", "").code == http.StatusNotFound, nil
	})
	if err != nil {
		t.Fatalf("the garbage collector did not finish the orphaning delete: %v", err)
	}

	api.do("POST", jobs, job("background")).expect(t, http.StatusCreated)
	gone := api.do("DELETE", jobs+"/background", `{"propagationPolicy":"Background"}`).expect(t, http.StatusOK).object(t)
	if str(gone, "kind") != "Status" {
		t.Fatalf("Background delete answered %v", gone)
	}
}
