package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
)

const e2eGroup = "e2e.example.com"

var (
	widgets = schema.GroupVersionResource{Group: e2eGroup, Version: "v1", Resource: "widgets"}
	gadgets = schema.GroupVersionResource{Group: e2eGroup, Version: "v1", Resource: "gadgets"}
	crds    = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
)

// testCRD defines kind in the e2e group with a spec of size and color.
func testCRD(plural, singular, kind, shortName string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + e2eGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: e2eGroup,
			Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List",
				ShortNames: []string{shortName},
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size":  {Type: "integer"},
							"color": {Type: "string"},
						}},
					},
				}},
			}},
		},
	}
}

// createCRD creates crd and waits until it is Established.
func createCRD(t *testing.T, s *sqlkubeServer, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	client := s.apiextensions().ApiextensionsV1().CustomResourceDefinitions()
	if _, err := client.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD %s: %v", crd.Name, err)
	}
	eventually(t, 30*time.Second, "CRD "+crd.Name+" Established", func() (bool, error) {
		got, err := client.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return crdCondition(got, apiextensionsv1.Established) && crdCondition(got, apiextensionsv1.NamesAccepted), nil
	})
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, which apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == which {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func newCustomObject(gvr schema.GroupVersionResource, kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       spec,
	}}
}

func TestCustomResources(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		createNamespace(t, s.clientset(), "e2e-crd")
		createCRD(t, s, testCRD("widgets", "widget", "Widget", "wd", apiextensionsv1.NamespaceScoped))
		createCRD(t, s, testCRD("gadgets", "gadget", "Gadget", "gd", apiextensionsv1.ClusterScoped))
		dyn := s.dynamicClient()

		t.Run("namespaced", func(t *testing.T) {
			checkCustomCRUD(t, s, dyn.Resource(widgets).Namespace("e2e-crd"), widgets, "Widget", "e2e-crd",
				"/apis/e2e.example.com/v1/namespaces/e2e-crd/widgets")
		})
		t.Run("cluster-scoped", func(t *testing.T) {
			checkCustomCRUD(t, s, dyn.Resource(gadgets), gadgets, "Gadget", "",
				"/apis/e2e.example.com/v1/gadgets")
			// A cluster-scoped type is not served under a namespace.
			if resp := s.do(t, http.MethodGet, "/apis/e2e.example.com/v1/namespaces/e2e-crd/gadgets", nil); resp.code != http.StatusNotFound {
				t.Errorf("GET of a cluster-scoped type under a namespace answered %d: %s", resp.code, resp.body)
			}
		})
		t.Run("delete CRD", func(t *testing.T) { checkCRDDeletion(t, s) })
	})
}

// checkCustomCRUD drives custom objects through create, get, update, list and delete.
func checkCustomCRUD(t *testing.T, s *sqlkubeServer, client dynamic.ResourceInterface, gvr schema.GroupVersionResource, kind, namespace, collectionPath string) {
	resource := gvr.GroupResource()
	before := time.Now().Truncate(time.Second)
	created, err := client.Create(ctx, newCustomObject(gvr, kind, namespace, "one", map[string]any{"size": int64(1), "color": "red"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	checkCustomCreated(t, created, before)
	assertCustomGet(t, client, "one", created)

	_, err = client.Create(ctx, newCustomObject(gvr, kind, namespace, "one", nil), metav1.CreateOptions{})
	assertAPIError(t, err, apierrors.NewAlreadyExists(resource, "one"))

	// A spec change bumps generation; a metadata-only change does not.
	resized := created.DeepCopy()
	_ = unstructured.SetNestedField(resized.Object, int64(2), "spec", "size")
	updated := mustUpdate(t, client, resized, 2)
	labelled := updated.DeepCopy()
	labelled.SetLabels(map[string]string{"tier": "gold"})
	labelled = mustUpdate(t, client, labelled, 2)

	_, err = client.Update(ctx, resized, metav1.UpdateOptions{})
	assertAPIError(t, err, conflictOnStale(resource, "one"))

	// Custom resources, unlike configmaps, refuse an update without a resourceVersion.
	unconditional := labelled.DeepCopy()
	unconditional.SetResourceVersion("")
	_, err = client.Update(ctx, unconditional, metav1.UpdateOptions{})
	assertAPIError(t, err, apierrors.NewInvalid(schema.GroupKind{Group: gvr.Group, Kind: gvr.Resource}, "one", field.ErrorList{
		field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update"),
	}))
	assertCustomGet(t, client, "one", labelled)

	_, err = client.Get(ctx, "missing", metav1.GetOptions{})
	assertAPIError(t, err, apierrors.NewNotFound(resource, "missing"))

	if _, err := client.Create(ctx, newCustomObject(gvr, kind, namespace, "two", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, list); !cmp.Equal(got, []string{"one", "two"}) || list.GetKind() != kind+"List" {
		t.Errorf("list: kind %s, names %v; want %sList, [one two]", list.GetKind(), got, kind)
	}

	resp := s.do(t, http.MethodDelete, collectionPath+"/one", nil)
	if resp.code != http.StatusOK {
		t.Fatalf("DELETE answered %d: %s", resp.code, resp.body)
	}
	assertStatus(t, resp.status(t), &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusSuccess,
		Details: &metav1.StatusDetails{Name: "one", Group: gvr.Group, Kind: gvr.Resource, UID: created.GetUID()}}})
	_, err = client.Get(ctx, "one", metav1.GetOptions{})
	assertAPIError(t, err, apierrors.NewNotFound(resource, "one"))
}

func checkCustomCreated(t *testing.T, created *unstructured.Unstructured, before time.Time) {
	t.Helper()
	if !uuidPattern.MatchString(string(created.GetUID())) || created.GetResourceVersion() == "" {
		t.Errorf("uid %q, resourceVersion %q: want both set", created.GetUID(), created.GetResourceVersion())
	}
	if ts := created.GetCreationTimestamp().Time; ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
		t.Errorf("creationTimestamp %v is not the time of the create", ts)
	}
	if created.GetGeneration() != 1 {
		t.Errorf("generation = %d, want 1 for a new custom object", created.GetGeneration())
	}
}

// mustUpdate updates obj and checks the answer's generation and resourceVersion.
func mustUpdate(t *testing.T, client dynamic.ResourceInterface, obj *unstructured.Unstructured, wantGeneration int64) *unstructured.Unstructured {
	t.Helper()
	updated, err := client.Update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.GetGeneration() != wantGeneration || updated.GetResourceVersion() == obj.GetResourceVersion() {
		t.Errorf("after update: generation %d, resourceVersion %s -> %s; want generation %d and a new resourceVersion",
			updated.GetGeneration(), obj.GetResourceVersion(), updated.GetResourceVersion(), wantGeneration)
	}
	assertCustomGet(t, client, obj.GetName(), updated)
	return updated
}

func assertCustomGet(t *testing.T, client dynamic.ResourceInterface, name string, want *unstructured.Unstructured) {
	t.Helper()
	got, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Errorf("get %s (-want +got):\n%s", name, diff)
	}
}

// checkCRDDeletion deletes the widgets CRD while it has objects: the CRD goes away with its
// objects, and its paths stop being served.
func checkCRDDeletion(t *testing.T, s *sqlkubeServer) {
	client := s.apiextensions().ApiextensionsV1().CustomResourceDefinitions()
	name := "widgets." + e2eGroup
	if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete CRD: %v", err)
	}
	eventually(t, 30*time.Second, "CRD "+name+" gone", func() (bool, error) {
		_, err := client.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	_, err := client.Get(ctx, name, metav1.GetOptions{})
	assertAPIError(t, err, apierrors.NewNotFound(crds, name))

	for _, path := range []string{
		"/apis/e2e.example.com/v1/namespaces/e2e-crd/widgets",
		"/apis/e2e.example.com/v1/namespaces/e2e-crd/widgets/two",
		"/apis/e2e.example.com/v1/widgets",
	} {
		if resp := s.do(t, http.MethodGet, path, nil); resp.code != http.StatusNotFound {
			t.Errorf("GET %s after the CRD is deleted answered %d: %s", path, resp.code, resp.body)
		}
	}
	// The other type of the group is still served.
	if _, err := s.dynamicClient().Resource(gadgets).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("gadgets after deleting widgets: %v", err)
	}

	// Defining the type again shows that its objects went with it.
	createCRD(t, s, testCRD("widgets", "widget", "Widget", "wd", apiextensionsv1.NamespaceScoped))
	list, err := s.dynamicClient().Resource(widgets).Namespace("e2e-crd").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list widgets after the CRD was created again: %v", err)
	}
	if len(list.Items) != 0 {
		t.Errorf("widgets after the CRD was deleted and created again: %v; want none", names(t, list))
	}
}
