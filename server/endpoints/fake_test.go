package endpoints_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// The HTTP layer against fakes of what it calls: no database, no registry. These tests are
// about HTTP alone: routing to a type's handlers, methods, status codes, Status bodies.

// fakeTypes serves a fixed set of resources.
type fakeTypes map[string]*resource.Resource

func (f fakeTypes) Lookup(group, version, name string) (*resource.Resource, bool) {
	r, ok := f[group+"/"+version+"/"+name]
	return r, ok
}

// fakeObjects answers Get from a map of values by name; the other verbs are not used here.
type fakeObjects struct {
	endpoints.Objects
	values map[string]string
}

func (f fakeObjects) Get(_ context.Context, ref registry.Ref, _ *metav1.GetOptions) (sqlstore.Object, error) {
	value, ok := f.values[ref.Name]
	if !ok {
		return sqlstore.Object{}, apierrors.NewNotFound(ref.Resource.GroupResource(), ref.Name)
	}
	return sqlstore.Object{Value: []byte(value)}, nil
}

// recordingCreater answers with answer, recording what it was given.
type recordingCreater struct {
	answer               runtime.Object
	namespace, name, got string
}

func (c *recordingCreater) Create(_ context.Context, namespace, name string, body []byte, _ bool, _ *metav1.CreateOptions) (runtime.Object, error) {
	c.namespace, c.name, c.got = namespace, name, string(body)
	return c.answer, nil
}

// noContent is a Connecter of GET answering 204.
type noContent struct{ query url.Values }

func (*noContent) ConnectMethods() []string { return []string{http.MethodGet} }

func (c *noContent) Connect(_ context.Context, _, _ string, req resource.ConnectRequest) (http.Handler, error) {
	c.query = req.Query
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }), nil
}

func fakeServer(t *testing.T, types fakeTypes, objects fakeObjects) *httptest.Server {
	srv := httptest.NewServer(endpoints.New(endpoints.API{Catalog: types, Registry: objects}, endpoints.Options{}))
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// TestHTTPServesTypesHandlers: subresources and create-only types reach the handlers their
// types registered, with the path's namespace and name, by the methods they serve; the answer's
// code is the handler's, other methods are 405.
func TestHTTPServesTypesHandlers(t *testing.T) {
	eviction := &recordingCreater{answer: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Message: "budget"}}
	review := &recordingCreater{answer: &metav1.Status{Status: metav1.StatusSuccess}}
	logs := &noContent{}
	pods := &resource.Resource{Version: "v1", Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, StorageName: "pods", StorageVersion: "v1",
		Subresources: []resource.Subresource{{Name: "eviction", Kind: "Eviction", Verbs: []string{"create"}}, {Name: "log", Kind: "Pod", Verbs: []string{"get"}}}}
	if err := pods.Serve("eviction", eviction); err != nil {
		t.Fatal(err)
	}
	if err := pods.Serve("log", logs); err != nil {
		t.Fatal(err)
	}
	reviews := resource.CreateOnly("authorization.k8s.io", "v1", "localsubjectaccessreviews", true, reflect.TypeFor[authorizationv1.LocalSubjectAccessReview](), review)
	srv := fakeServer(t, fakeTypes{"/v1/pods": pods, "authorization.k8s.io/v1/localsubjectaccessreviews": reviews}, fakeObjects{})

	if code, body := call(t, srv, "POST", "/api/v1/namespaces/ns/pods/p/eviction", `{"kind":"Eviction"}`); code != http.StatusTooManyRequests || !strings.Contains(body, `"message":"budget"`) {
		t.Errorf("eviction: %d %s", code, body)
	}
	if eviction.namespace != "ns" || eviction.name != "p" || eviction.got != `{"kind":"Eviction"}` {
		t.Errorf("the eviction handler was given %+v", eviction)
	}
	if code, _ := call(t, srv, "GET", "/api/v1/namespaces/ns/pods/p/eviction", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of an eviction: %d", code)
	}
	if code, _ := call(t, srv, "GET", "/api/v1/namespaces/ns/pods/p/log?container=c", ""); code != http.StatusNoContent || logs.query.Get("container") != "c" {
		t.Errorf("log: %d, query %v", code, logs.query)
	}
	if code, _ := call(t, srv, "DELETE", "/api/v1/namespaces/ns/pods/p/log", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE of a log: %d", code)
	}
	if code, _ := call(t, srv, "POST", "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews", `{}`); code != http.StatusCreated || review.namespace != "a" {
		t.Errorf("review: %d, namespace %q", code, review.namespace)
	}
	if code, _ := call(t, srv, "POST", "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews/named", `{}`); code != http.StatusNotFound {
		t.Errorf("POST to a named review: %d", code)
	}
	code, body := call(t, srv, "GET", "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews", "")
	if want := `list is not supported on resources of kind \"localsubjectaccessreviews\"`; code != http.StatusMethodNotAllowed || !strings.Contains(body, want) {
		t.Errorf("GET of a review: %d %s", code, body)
	}
}

// TestHTTPAnswersObjectsAndStatusErrors: a GET answers the object the registry read, and the
// registry's Status error as the answer's code and body.
func TestHTTPAnswersObjectsAndStatusErrors(t *testing.T) {
	configMaps := &resource.Resource{Version: "v1", Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", ListKind: "ConfigMapList",
		Namespaced: true, StorageName: "configmaps", StorageVersion: "v1"}
	srv := fakeServer(t, fakeTypes{"/v1/configmaps": configMaps},
		fakeObjects{values: map[string]string{"a": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}`}})

	if code, body := call(t, srv, "GET", "/api/v1/namespaces/ns/configmaps/a", ""); code != http.StatusOK || !strings.Contains(body, `"name":"a"`) {
		t.Errorf("get: %d %s", code, body)
	}
	code, body := call(t, srv, "GET", "/api/v1/namespaces/ns/configmaps/b", "")
	if want := `"message":"configmaps \"b\" not found","reason":"NotFound"`; code != http.StatusNotFound || !strings.Contains(body, want) {
		t.Errorf("get of a missing object: %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/api/v1/namespaces/ns/widgets/a", ""); code != http.StatusNotFound {
		t.Errorf("an unknown type: %d", code)
	}
}
