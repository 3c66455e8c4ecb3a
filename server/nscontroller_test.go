package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// clients are client-go clients of a test server.
type clients struct {
	core    kubernetes.Interface
	dynamic dynamic.Interface
}

func newClients(t *testing.T, api *testAPI) clients {
	t.Helper()
	config := &rest.Config{Host: api.http.URL}
	return clients{core: kubernetes.NewForConfigOrDie(config), dynamic: dynamic.NewForConfigOrDie(config)}
}

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// createWidgetType serves the widgets custom resource (see widgetCRD).
func createWidgetType(t *testing.T, api *testAPI) {
	t.Helper()
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated)
}

func createNamespace(t *testing.T, c clients, name string) *corev1.Namespace {
	t.Helper()
	ns, err := c.core.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return ns
}

func createConfigMap(t *testing.T, c clients, namespace string, meta metav1.ObjectMeta) *corev1.ConfigMap {
	t.Helper()
	meta.Namespace = namespace
	cm, err := c.core.CoreV1().ConfigMaps(namespace).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating configmap %s/%s: %v", namespace, meta.Name, err)
	}
	return cm
}

func createWidget(t *testing.T, c clients, namespace string, meta metav1.ObjectMeta) *unstructured.Unstructured {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}}
	w.SetName(meta.Name)
	w.SetFinalizers(meta.Finalizers)
	w.SetOwnerReferences(meta.OwnerReferences)
	created, err := c.dynamic.Resource(widgetsGVR).Namespace(namespace).Create(t.Context(), w, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating widget %s/%s: %v", namespace, meta.Name, err)
	}
	return created
}

// waitGone waits until get answers NotFound.
func waitGone(t *testing.T, what string, get func() error) {
	t.Helper()
	eventually(t, what+" is gone", func() bool { return apierrors.IsNotFound(get()) })
}

func TestNamespaceDeletionRemovesContent(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		c := newClients(t, api)
		ctx := t.Context()
		createWidgetType(t, api)
		ns := createNamespace(t, c, "demo")
		createConfigMap(t, c, "demo", metav1.ObjectMeta{Name: "a"})
		createConfigMap(t, c, "demo", metav1.ObjectMeta{Name: "b"})
		if _, err := c.core.CoreV1().Secrets("demo").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createWidget(t, c, "demo", metav1.ObjectMeta{Name: "w"})
		w, err := c.core.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=demo", ResourceVersion: ns.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()

		if err := c.core.CoreV1().Namespaces().Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "namespace demo", func() error { _, err := c.core.CoreV1().Namespaces().Get(ctx, "demo", metav1.GetOptions{}); return err })

		for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "secrets"}, widgetsGVR} {
			list, err := c.dynamic.Resource(gvr).Namespace("demo").List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 0 {
				t.Errorf("%s left in demo: %v %v", gvr.Resource, list, err)
			}
		}
		// The namespace's events: marked Terminating, its conditions set, then gone.
		events := receiveEvents(t, w, 3)
		wantEventTypes(t, events, watch.Modified, watch.Modified, watch.Deleted)
		terminating := events[0].Object.(*corev1.Namespace)
		if terminating.Status.Phase != corev1.NamespaceTerminating || terminating.DeletionTimestamp == nil || len(terminating.Status.Conditions) != 0 {
			t.Errorf("first event: %+v", terminating)
		}
		// The controller changed only the status conditions, recorded as its status update.
		conditioned := events[1].Object.(*corev1.Namespace)
		wantNamespaceConditions(t, conditioned, nil)
		want := terminating.DeepCopy()
		want.ResourceVersion, want.Status.Conditions, want.ManagedFields = conditioned.ResourceVersion, conditioned.Status.Conditions, conditioned.ManagedFields
		wantSameObject(t, "namespace with its deletion conditions", conditioned, want)
		if !slices.ContainsFunc(conditioned.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
			return m.Manager == "kube-controller-manager" && m.Operation == metav1.ManagedFieldsOperationUpdate && m.Subresource == "status"
		}) {
			t.Errorf("managedFields without the controller's status update: %+v", conditioned.ManagedFields)
		}
		wantNamespaceConditions(t, events[2].Object.(*corev1.Namespace), nil)
	})
}

func TestNamespaceTerminatingRefusesContent(t *testing.T) {
	api := sqliteAPI(t)
	c := newClients(t, api)
	createNamespace(t, c, "demo")
	createConfigMap(t, c, "demo", metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}})
	if err := c.core.CoreV1().Namespaces().Delete(t.Context(), "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	api.do("POST", "/api/v1/namespaces/demo/configmaps", `{"metadata":{"name":"new"}}`).expectStatus(t, metav1.Status{
		Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: `configmaps "new" is forbidden: unable to create new content in namespace demo because it is being terminated`,
		Details: &metav1.StatusDetails{Name: "new", Kind: "configmaps"},
	})
}

func TestNamespaceWaitsForFinalizers(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		c := newClients(t, api)
		ctx := t.Context()
		createWidgetType(t, api)
		createNamespace(t, c, "demo")
		createConfigMap(t, c, "demo", metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}})
		createConfigMap(t, c, "demo", metav1.ObjectMeta{Name: "free"})
		createWidget(t, c, "demo", metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold", "example.com/other"}})
		if err := c.core.CoreV1().Namespaces().Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		var ns *corev1.Namespace
		eventually(t, "the namespace reports what holds it", func() bool {
			ns, _ = c.core.CoreV1().Namespaces().Get(ctx, "demo", metav1.GetOptions{})
			return ns != nil && len(ns.Status.Conditions) > 0
		})
		wantNamespaceConditions(t, ns, []corev1.NamespaceCondition{
			{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain",
				Message: "Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 1 resource instances"},
			{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain",
				Message: "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances, example.com/other in 1 resource instances"},
		})
		if !slices.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{"kubernetes"}) || ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("namespace while content remains: %+v", ns)
		}
		if _, err := c.core.CoreV1().ConfigMaps("demo").Get(ctx, "free", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("configmap without finalizers: %v", err)
		}
		held, err := c.core.CoreV1().ConfigMaps("demo").Get(ctx, "held", metav1.GetOptions{})
		if err != nil || held.DeletionTimestamp == nil {
			t.Fatalf("held configmap: %+v, %v", held, err)
		}

		// A second client finishes its work: the content goes, then the namespace.
		held.Finalizers = nil
		if _, err := c.core.CoreV1().ConfigMaps("demo").Update(ctx, held, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := c.dynamic.Resource(widgetsGVR).Namespace("demo").Patch(ctx, "held", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "namespace demo", func() error { _, err := c.core.CoreV1().Namespaces().Get(ctx, "demo", metav1.GetOptions{}); return err })
	})
}

// wantNamespaceConditions compares the namespace's deletion conditions, times aside: the
// failing ones given, the others in their all-is-well form.
func wantNamespaceConditions(t *testing.T, ns *corev1.Namespace, failing []corev1.NamespaceCondition) {
	t.Helper()
	want := []corev1.NamespaceCondition{
		{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		{Type: corev1.NamespaceDeletionGVParsingFailure, Status: corev1.ConditionFalse, Reason: "ParsedGroupVersions", Message: "All legacy kube types successfully parsed"},
		{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionFalse, Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Reason: "ContentRemoved", Message: "All content successfully removed"},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished"},
	}
	for _, f := range failing {
		want[slices.IndexFunc(want, func(c corev1.NamespaceCondition) bool { return c.Type == f.Type })] = f
	}
	got := slices.Clone(ns.Status.Conditions)
	for i := range got {
		if got[i].LastTransitionTime.IsZero() {
			t.Errorf("condition %s has no lastTransitionTime", got[i].Type)
		}
		got[i].LastTransitionTime = metav1.Time{}
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("namespace conditions\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

// receiveEvents reads n events from w, failing after a deadline.
func receiveEvents(t *testing.T, w watch.Interface, n int) []watch.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var events []watch.Event
	for len(events) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended after %d events", len(events))
			}
			events = append(events, ev)
		case <-ctx.Done():
			t.Fatalf("received %d events of %d", len(events), n)
		}
	}
	return events
}

func wantEventTypes(t *testing.T, events []watch.Event, types ...watch.EventType) {
	t.Helper()
	var got []watch.EventType
	for _, ev := range events {
		got = append(got, ev.Type)
	}
	if !slices.Equal(got, types) {
		t.Fatalf("event types %v, want %v", got, types)
	}
}

// Two replicas on one PostgreSQL database both run the controllers: their writes conflict and
// find objects gone, and the work still finishes, whichever replica took the request.
func TestControllersOnTwoReplicas(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	first, second := newClients(t, newTestAPI(t, dsn, Options{})), newClients(t, newTestAPI(t, dsn, Options{}))
	createNamespace(t, first, "demo")
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		createConfigMap(t, second, "demo", metav1.ObjectMeta{Name: name})
	}
	owner := createConfigMap(t, first, "default", metav1.ObjectMeta{Name: "owner"})
	for _, name := range []string{"x", "y", "z"} {
		createConfigMap(t, second, "default", metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ownedBy(owner, true)}})
	}
	if err := second.core.CoreV1().Namespaces().Delete(t.Context(), "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	first.deleteConfigMap(t, "owner", metav1.DeletePropagationForeground)
	waitGone(t, "namespace demo", func() error {
		_, err := first.core.CoreV1().Namespaces().Get(t.Context(), "demo", metav1.GetOptions{})
		return err
	})
	waitGone(t, "the foreground-deleted owner", func() error { _, err := second.getConfigMap(t, "owner"); return err })
	for _, name := range []string{"x", "y", "z"} {
		if _, err := first.getConfigMap(t, name); !apierrors.IsNotFound(err) {
			t.Errorf("dependent %s: %v", name, err)
		}
	}
}

// Work left when a server stopped (a namespace being deleted, an owner gone with its
// dependents left) is finished by the next server to start on the database, from its lists.
func TestControllersResumeAfterRestart(t *testing.T) {
	store := openTestStore(t, sqltest.SQLiteDSN(t))
	stopped, stop := context.WithCancel(t.Context())
	first, err := New(stopped, store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(first)
	defer hs.Close()
	api := &testAPI{t: t, store: store, server: first, http: hs}
	// Writes wait for the admission plugins to have read their configuration, which they
	// stop following with the server.
	eventually(t, "admission is ready", func() bool {
		return api.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", `{"metadata":{"name":"probe"}}`).code == http.StatusCreated
	})
	stop() // its controllers stop at once; its handlers still serve
	c := newClients(t, api)
	createNamespace(t, c, "demo")
	createConfigMap(t, c, "demo", metav1.ObjectMeta{Name: "content"})
	owner := createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "owner"})
	createConfigMap(t, c, "default", metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{ownedBy(owner, false)}})
	if err := c.core.CoreV1().Namespaces().Delete(t.Context(), "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.deleteConfigMap(t, "owner", metav1.DeletePropagationBackground)
	if _, err := c.getConfigMap(t, "dependent"); err != nil {
		t.Fatalf("dependent with the collector stopped: %v", err)
	}

	if _, err := New(t.Context(), store, Options{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "namespace demo", func() error {
		_, err := c.core.CoreV1().Namespaces().Get(t.Context(), "demo", metav1.GetOptions{})
		return err
	})
	waitGone(t, "the dependent", func() error { _, err := c.getConfigMap(t, "dependent"); return err })
}
