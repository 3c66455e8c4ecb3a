package admission

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/sqlkube/sqlkube/server/catalog"
	sqlkubediscovery "github.com/sqlkube/sqlkube/server/discovery"
	"github.com/sqlkube/sqlkube/server/rbac"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/decode"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// harness is an admission chain on a real catalog and registry (SQLite), the registry's
// admission step. Its configuration objects and parameters are written through the registry
// (defaulted and validated as served), then given to the chain's clients, fakes, before it
// starts: a fake's informers may miss what is written while they start.
type harness struct {
	t        *testing.T
	catalog  *catalog.Catalog
	registry *registry.Registry
	chain    *Chain
	rbac     *rbac.Authorizer
	client   *fake.Clientset
}

// harnessConfig is what the chain's fake clients hold and how it is started.
type harnessConfig struct {
	// objects are the manifests of configuration objects (policies, bindings, webhook
	// configurations), cluster-scoped.
	objects []string
	// params are the manifests of custom resources the dynamic client serves, in namespace
	// default.
	params []string
	// crds are stored, and served, before the chain starts.
	crds []string
	// webhookServices is Options.WebhookServices.
	webhookServices map[string]string
	// flags are kube-apiserver's admission flags (--enable-admission-plugins=...).
	flags []string
	// authz decides what the plugins ask (nil: anything is allowed).
	authz authorizer.Authorizer
	// dsn is the database (SQLite when empty).
	dsn string
}

func newHarness(t *testing.T, cfg harnessConfig) *harness {
	t.Helper()
	ctx := t.Context()
	if cfg.dsn == "" {
		cfg.dsn = sqltest.SQLiteDSN(t)
	}
	store, err := sqlstore.Open(ctx, sqltest.Database(t, cfg.dsn, sqlstore.SQLite, sqlstore.Postgres), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	converters, err := conversion.NewCRConverterFactory(WebhookServiceResolver(cfg.webhookServices), WebhookAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	types, err := catalog.New(ctx, store, converters, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	namespaces, _ := types.Lookup("", "v1", "namespaces")
	h := &harness{t: t, catalog: types, rbac: rbac.NewAuthorizer()}
	escalation := &rbac.Escalation{RBAC: h.rbac, Authorizer: h.rbac}
	opts := Options{WebhookServices: cfg.webhookServices, Plugins: NewPluginOptions()}
	flags := pflag.NewFlagSet("admission", pflag.ContinueOnError)
	opts.Plugins.AddFlags(flags)
	if err := flags.Parse(cfg.flags); err != nil {
		t.Fatal(err)
	}
	h.chain = New(opts, types, escalation, slog.New(slog.DiscardHandler))
	registryOpts := registry.Options{Admission: h.chain, NoNamespaceLifecycle: !opts.PluginEnabled(lifecycle.PluginName)}
	if h.registry, err = registry.New(ctx, store, namespaces, registryOpts); err != nil {
		t.Fatal(err)
	}
	h.chain.ReadFrom(h.registry, store)
	for _, crd := range cfg.crds {
		h.createCRD(crd)
	}
	// The policies match namespaces by their labels, read from the namespaces' informer.
	namespace, err := h.registry.Get(ctx, registry.Ref{Resource: namespaces, Name: "default"}, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	objects := []runtime.Object{h.typed(decodeStored(t, namespaces, namespace))}
	for _, manifest := range cfg.objects {
		objects = append(objects, h.typed(h.store(manifest)))
	}
	h.client = fake.NewClientset(objects...)
	client := withOpenAPI{Clientset: h.client, discovery: servedOpenAPI(t, types)}
	var params []runtime.Object
	listKinds := map[schema.GroupVersionResource]string{}
	for _, manifest := range cfg.params {
		param := h.store(manifest)
		res, _ := types.ResourceForKind(param.GetAPIVersion(), param.GetKind())
		params = append(params, param)
		listKinds[schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Name}] = res.ListKind
	}
	dynamicClient := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, params...)
	if cfg.authz == nil {
		cfg.authz = authorizerfactory.NewAlwaysAllowAuthorizer()
	}
	if err := h.chain.start(ctx, client, dynamicClient, cfg.authz); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the chain has read its configuration", h.chain.Synced)
	return h
}

// withOpenAPI is a fake clientset whose discovery reads OpenAPI v3 documents from a server:
// the mutating policies and the type checker read them, which the fake's discovery does not
// serve.
type withOpenAPI struct {
	*fake.Clientset
	discovery discovery.DiscoveryInterfaces
}

func (c withOpenAPI) Discovery() discovery.DiscoveryInterfaces { return c.discovery }

// servedOpenAPI is a discovery client of an HTTP server serving the OpenAPI v3 documents of
// what types serves, as sqlkube's own API does.
func servedOpenAPI(t *testing.T, types *catalog.Catalog) discovery.DiscoveryInterfaces {
	docs := sqlkubediscovery.NewCache(types, false)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		openapi, err := docs.Docs().OpenAPI()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		doc, ok := openapi.Root, r.URL.Path == "/openapi/v3"
		if !ok {
			doc, ok = openapi.ByPath[strings.TrimPrefix(r.URL.Path, "/openapi/v3/")]
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc.Body)
	}))
	t.Cleanup(srv.Close)
	return discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
}

// store writes manifest through the registry, as an admin (in namespace default if the
// resource is namespaced), and is what was stored.
func (h *harness) store(manifest string) *unstructured.Unstructured {
	h.t.Helper()
	typeMeta := object(h.t, manifest)
	res, ok := h.catalog.ResourceForKind(typeMeta.GetAPIVersion(), typeMeta.GetKind())
	if !ok {
		h.t.Fatalf("%s %s is not served", typeMeta.GetAPIVersion(), typeMeta.GetKind())
	}
	stored, err := h.createAs(asAdmin(h.t.Context()), res, manifest, false)
	if err != nil {
		h.t.Fatal(err)
	}
	return decodeStored(h.t, res, stored)
}

// decodeStored is an object of res as stored, with its apiVersion and kind.
func decodeStored(t *testing.T, res *resource.Resource, stored sqlstore.Object) *unstructured.Unstructured {
	t.Helper()
	obj, err := storedobj.DecodeServed(res, stored.Value)
	if err != nil {
		t.Fatal(err)
	}
	obj.SetAPIVersion(res.APIVersion())
	obj.SetKind(res.Kind)
	return obj
}

// typed is obj as client-go's type of its kind.
func (h *harness) typed(obj *unstructured.Unstructured) runtime.Object {
	h.t.Helper()
	typed, err := clientscheme.Scheme.New(obj.GroupVersionKind())
	if err == nil {
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return typed
}

// createCRD stores a CRD and waits until its versions are served.
func (h *harness) createCRD(manifest string) {
	h.t.Helper()
	crd := h.store(manifest)
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	eventually(h.t, "the CRD is served", func() bool {
		for _, v := range versions {
			if _, ok := h.catalog.Lookup(group, v.(map[string]any)["name"].(string), plural); !ok {
				return false
			}
		}
		return true
	})
}

// resource is the served resource group/version/name.
func (h *harness) resource(group, version, name string) *resource.Resource {
	h.t.Helper()
	res, ok := h.catalog.Lookup(group, version, name)
	if !ok {
		h.t.Fatalf("%s/%s %s is not served", group, version, name)
	}
	return res
}

// create creates manifest in group/version/resource (in namespace default if namespaced),
// dry run or not, and is the object stored.
func (h *harness) create(ctx context.Context, gvr schema.GroupVersionResource, manifest string, dryRun bool) (*unstructured.Unstructured, error) {
	h.t.Helper()
	stored, err := h.createAs(ctx, h.resource(gvr.Group, gvr.Version, gvr.Resource), manifest, dryRun)
	if err != nil {
		return nil, err
	}
	return storedobj.DecodeStored(stored.Value)
}

// createAs creates manifest in res (in its namespace, or default), decoded (and defaulted) as a request body is.
func (h *harness) createAs(ctx context.Context, res *resource.Resource, manifest string, dryRun bool) (sqlstore.Object, error) {
	h.t.Helper()
	obj, _, err := decode.Object(res, []byte(manifest), false, metav1.FieldValidationStrict)
	if err != nil {
		h.t.Fatal(err)
	}
	opts := &metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	ref := registry.Ref{Resource: res}
	if res.Namespaced {
		ref.Namespace = cmp.Or(obj.GetNamespace(), "default")
	}
	stored, _, err := h.registry.Create(ctx, ref, obj, opts)
	return stored, err
}

// asAlice is ctx with alice, who holds no role, as its user: her writes are admitted.
func asAlice(ctx context.Context) context.Context {
	return genericrequest.WithUser(ctx, &user.DefaultInfo{Name: "alice"})
}

// asAdmin is ctx with a member of system:masters as its user.
func asAdmin(ctx context.Context) context.Context {
	return genericrequest.WithUser(ctx, &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}})
}

func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("%v: %s", err, manifest)
	}
	return obj
}

// typed is manifest as a typed object.
func typed[T any](t *testing.T, manifest string) *T {
	t.Helper()
	var obj T
	if err := json.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatalf("%v: %s", err, manifest)
	}
	return &obj
}

// eventually waits up to 30 s for cond.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
