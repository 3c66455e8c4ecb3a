package e2e

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// Sprockets have two versions with different schemas: v1 has spec.size, a string ("3"), v2
// has spec.replicas, an integer. A conversion webhook converts between them.
var (
	sprocketsV1 = schema.GroupVersionResource{Group: e2eGroup, Version: "v1", Resource: "sprockets"}
	sprocketsV2 = schema.GroupVersionResource{Group: e2eGroup, Version: "v2", Resource: "sprockets"}
)

const sprocketsNamespace = "conversion"

// sprocketCRD defines Sprockets, stored in storageVersion, converted by conversion.
func sprocketCRD(storageVersion string, conversion *apiextensionsv1.CustomResourceConversion) *apiextensionsv1.CustomResourceDefinition {
	version := func(name string, spec map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: name == storageVersion,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type:       "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: spec}},
			}}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "sprockets." + e2eGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: e2eGroup,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "sprockets", Singular: "sprocket", Kind: "Sprocket", ListKind: "SprocketList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				version("v1", map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "string"}}),
				version("v2", map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}),
			},
			Conversion: conversion,
		},
	}
}

func webhookConversion(url string, caBundle []byte) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caBundle},
			ConversionReviewVersions: []string{"v1"},
		}}
}

// sprocketConverter is the conversion webhook: it converts Sprockets between v1 and v2 and
// records each conversion of an object in the namespace counted as "FROM->TO" (versions);
// while broken it answers 500. (Watches convert the objects they send: the objects counted
// are in a namespace no watch follows.)
type sprocketConverter struct {
	broken atomic.Bool
	mu     sync.Mutex
	calls  []string
}

const countedNamespace = "conversion-counted"

// take returns the conversions made since the last take.
func (c *sprocketConverter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = nil
	return calls
}

func (c *sprocketConverter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.broken.Load() {
		http.Error(w, "webhook down", http.StatusInternalServerError)
		return
	}
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range req.Objects {
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		from := obj.GetAPIVersion()
		convertSprocket(obj.Object, req.DesiredAPIVersion)
		if obj.GetNamespace() == countedNamespace {
			c.mu.Lock()
			c.calls = append(c.calls, strings.TrimPrefix(from, e2eGroup+"/")+"->"+strings.TrimPrefix(req.DesiredAPIVersion, e2eGroup+"/"))
			c.mu.Unlock()
		}
		converted, _ := json.Marshal(obj.Object)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: converted})
	}
	review.Request, review.Response = nil, resp
	_ = json.NewEncoder(w).Encode(&review)
}

// convertSprocket rewrites a Sprocket's spec for apiVersion: size "3" is replicas 3.
func convertSprocket(obj map[string]any, apiVersion string) {
	spec, _ := obj["spec"].(map[string]any)
	switch apiVersion {
	case sprocketsV2.GroupVersion().String():
		if size, ok := spec["size"].(string); ok {
			n, _ := strconv.Atoi(size)
			obj["spec"] = map[string]any{"replicas": n}
		}
	case sprocketsV1.GroupVersion().String():
		if replicas, ok := spec["replicas"].(int64); ok {
			obj["spec"] = map[string]any{"size": strconv.FormatInt(replicas, 10)}
		}
	}
	obj["apiVersion"] = apiVersion
}

func TestConversionWebhook(t *testing.T) {
	ca := newTestCA(t)
	converter := &sprocketConverter{}
	hook := ca.serve(t, converter)
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		converter.broken.Store(false)
		converter.take()
		crds := s.apiextensions().ApiextensionsV1().CustomResourceDefinitions()

		// CRD validation is kube's: strategy Webhook needs the webhook.
		_, err := crds.Create(ctx, sprocketCRD("v1", &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook") {
			t.Errorf("CRD with strategy Webhook and no webhook: %v, want kube's 422", err)
		}

		createCRD(t, s, sprocketCRD("v1", webhookConversion(hook.URL+"/convert", ca.bundle)))
		dyn := s.dynamicClient()
		clients := func(namespace string) (v1, v2 dynamic.ResourceInterface) {
			createNamespace(t, s.clientset(), namespace)
			return dyn.Resource(sprocketsV1).Namespace(namespace), dyn.Resource(sprocketsV2).Namespace(namespace)
		}
		v1, v2 := clients(sprocketsNamespace)
		counted1, counted2 := clients(countedNamespace)
		checkSprocketRoundTrips(t, s, v1, v2)
		checkConversionCalls(t, converter, counted1, counted2)
		checkStorageVersionChange(t, s, converter, counted1, counted2)
		checkBrokenConversion(t, s, converter, ca.bundle, v1, v2)
	})
}

// checkSprocketRoundTrips writes Sprockets through both versions and reads, lists and watches
// them through both.
func checkSprocketRoundTrips(t *testing.T, s *sqlkubeServer, v1, v2 dynamic.ResourceInterface) {
	list, err := v1.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w1 := mustWatch(t, v1, list.GetResourceVersion())
	w2 := mustWatch(t, v2, list.GetResourceVersion())

	a := mustCreate(t, v1, sprocket(sprocketsV1, sprocketsNamespace, "a", map[string]any{"size": "3"}))
	wantSpec(t, "create a through v1", a, map[string]any{"size": "3"})
	b := mustCreate(t, v2, sprocket(sprocketsV2, sprocketsNamespace, "b", map[string]any{"replicas": int64(5)}))
	wantSpec(t, "create b through v2", b, map[string]any{"replicas": int64(5)})
	wantSpec(t, "get a through v2", mustGet(t, v2, "a"), map[string]any{"replicas": int64(3)})
	wantSpec(t, "get b through v1", mustGet(t, v1, "b"), map[string]any{"size": "5"})

	b.Object["spec"] = map[string]any{"replicas": int64(7)}
	b, err = v2.Update(ctx, b, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSpec(t, "update b through v2", b, map[string]any{"replicas": int64(7)})

	wantList(t, v1, []string{"a", "b"}, []map[string]any{{"size": "3"}, {"size": "7"}})
	wantList(t, v2, []string{"a", "b"}, []map[string]any{{"replicas": int64(3)}, {"replicas": int64(7)}})
	wantEvents(t, w1, "ADDED a {size:3}", "ADDED b {size:5}", "MODIFIED b {size:7}")
	wantEvents(t, w2, "ADDED a {replicas:3}", "ADDED b {replicas:5}", "MODIFIED b {replicas:7}")

	for version, want := range map[string]string{"v1": `{"size":"7"}`, "v2": `{"replicas":7}`} {
		out := s.mustKubectl(t, "", "get", "sprockets."+version+"."+e2eGroup, "b", "-n", sprocketsNamespace, "-o", "jsonpath={.apiVersion} {.spec}")
		if want := e2eGroup + "/" + version + " " + want; out != want {
			t.Errorf("kubectl get sprockets.%s b: %q, want %q", version, out, want)
		}
	}
}

// checkConversionCalls checks what the webhook is asked to convert: objects are stored in the
// storage version (v1), and converted to the version of the request.
func checkConversionCalls(t *testing.T, converter *sprocketConverter, v1, v2 dynamic.ResourceInterface) {
	converter.take()
	mustCreate(t, v1, sprocket(sprocketsV1, countedNamespace, "x", map[string]any{"size": "3"}))
	wantConversions(t, converter, "create through the storage version")
	y := mustCreate(t, v2, sprocket(sprocketsV2, countedNamespace, "y", map[string]any{"replicas": int64(5)}))
	// Stored in v1, then read back for the response, as kube-apiserver's storage does.
	wantConversions(t, converter, "create through v2", "v2->v1", "v1->v2")
	y.Object["spec"] = map[string]any{"replicas": int64(6)}
	if _, err := v2.Update(ctx, y, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The stored object is read, the update stored and read back.
	wantConversions(t, converter, "update through v2", "v1->v2", "v2->v1", "v1->v2")
	mustGet(t, v2, "x")
	wantConversions(t, converter, "get through v2", "v1->v2")
	mustGet(t, v1, "x")
	wantConversions(t, converter, "get through the storage version")
}

// checkStorageVersionChange moves the storage version to v2: objects stay stored in v1 until
// they are written again, as in kube, and status.storedVersions lists both.
func checkStorageVersionChange(t *testing.T, s *sqlkubeServer, converter *sprocketConverter, v1, v2 dynamic.ResourceInterface) {
	crds := s.apiextensions().ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, "sprockets."+e2eGroup, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
	if crd, err = crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"v1", "v2"}; !slices.Equal(crd.Status.StoredVersions, want) {
		t.Errorf("storedVersions %v, want %v", crd.Status.StoredVersions, want)
	}
	converter.take()
	wantSpec(t, "get x through v2, stored in v1", mustGet(t, v2, "x"), map[string]any{"replicas": int64(3)})
	wantConversions(t, converter, "get through the new storage version of an object stored in the old one", "v1->v2")

	x := mustGet(t, v1, "x")
	wantConversions(t, converter, "get through v1 of an object stored in v1")
	x.Object["spec"] = map[string]any{"size": "4"}
	if _, err := v1.Update(ctx, x, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantConversions(t, converter, "update through v1, rewriting the object in v2", "v1->v2", "v2->v1")
	wantSpec(t, "get x through v2, rewritten", mustGet(t, v2, "x"), map[string]any{"replicas": int64(4)})
	wantConversions(t, converter, "get through the storage version of an object stored in it")
	wantSpec(t, "get x through v1, rewritten", mustGet(t, v1, "x"), map[string]any{"size": "4"})
	wantConversions(t, converter, "get through v1 of an object stored in v2", "v2->v1")
}

// checkBrokenConversion: a webhook that fails or cannot be reached fails what needs it with
// kube's 500, and ends a watch with an ERROR event; what needs no conversion still works.
func checkBrokenConversion(t *testing.T, s *sqlkubeServer, converter *sprocketConverter, caBundle []byte, v1, v2 dynamic.ResourceInterface) {
	list, err := v1.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The storage version is v2 now; a and b are still stored in v1.
	rvA, rvB := list.Items[0].GetResourceVersion(), list.Items[1].GetResourceVersion()
	w1 := mustWatch(t, v1, list.GetResourceVersion())
	w2 := mustWatch(t, v2, list.GetResourceVersion())
	converter.broken.Store(true)

	// Reads answer kube's errors about an object its storage cannot decode.
	down := `an error on the server ("webhook down") has prevented the request from succeeding`
	fromV1 := "conversion webhook for " + e2eGroup + "/v1, Kind=Sprocket failed: " + down
	_, err = v2.Get(ctx, "a", metav1.GetOptions{})
	assertAPIError(t, err, apierrors.NewInternalError(errors.New(corruptObject("", "a", rvA, fromV1))))
	_, err = v2.List(ctx, metav1.ListOptions{})
	causes := []metav1.StatusCause{}
	for _, item := range []struct{ name, rv string }{{"a", rvA}, {"b", rvB}} {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse,
			Field: "/registry/e2e.example.com/sprockets/conversion/" + item.name, Message: corruptObject("/registry", item.name, item.rv, fromV1)})
	}
	assertAPIError(t, err, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason:  metav1.StatusReasonStoreReadError,
		Message: "failed to read one or more sprockets.e2e.example.com from the storage: " + causes[0].Message + " (and 1 more)",
		Details: &metav1.StatusDetails{Group: e2eGroup, Kind: "sprockets", Name: "list", Causes: causes}}})
	// A write through v1 cannot be converted to the storage version.
	_, err = v1.Create(ctx, sprocket(sprocketsV1, sprocketsNamespace, "c", map[string]any{"size": "1"}), metav1.CreateOptions{})
	assertAPIError(t, err, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: fromV1}})
	// What needs no conversion still works.
	wantSpec(t, "get a through v1, stored in v1", mustGet(t, v1, "a"), map[string]any{"size": "3"})
	c := mustCreate(t, v2, sprocket(sprocketsV2, sprocketsNamespace, "c", map[string]any{"replicas": int64(1)}))
	wantSpec(t, "create c through the storage version", c, map[string]any{"replicas": int64(1)})
	wantEvents(t, w2, "ADDED c {replicas:1}")
	// The watch through v1 cannot convert c: it ends with kube's error.
	ev := nextEvent(t, w1, "the failed conversion of c")
	if ev.Type != watch.Error {
		t.Fatalf("watch through v1 got %s, want ERROR", ev.Type)
	}
	fromV2 := "conversion webhook for " + e2eGroup + "/v2, Kind=Sprocket failed: "
	assertAPIError(t, apierrors.FromObject(ev.Object), apierrors.NewInternalError(
		errors.New("object not decodable revision="+c.GetResourceVersion()+": "+fromV2+down)))
	if _, open := <-w1.ResultChan(); open {
		t.Error("the watch went on after its ERROR event")
	}

	// A webhook nobody listens at: kube's connection error.
	converter.broken.Store(false)
	crds := s.apiextensions().ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(ctx, "sprockets."+e2eGroup, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://127.0.0.1:1/convert"
	crd.Spec.Conversion = webhookConversion(dead, caBundle)
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = v1.Get(ctx, "c", metav1.GetOptions{})
	refused := fromV2 + `Post "` + dead + `?timeout=30s": dial tcp 127.0.0.1:1: connect: connection refused`
	assertAPIError(t, err, apierrors.NewInternalError(errors.New(corruptObject("", "c", c.GetResourceVersion(), refused))))
}

// corruptObject is kube's storage error about the Sprocket name, stored at revision, that its
// conversion webhook failed to convert; prefix is the etcd prefix lists name keys with.
func corruptObject(prefix, name, revision, conversionErr string) string {
	return "StorageError: corrupt object, Code: 7, Key: " + prefix + "/e2e.example.com/sprockets/" + sprocketsNamespace + "/" + name +
		", ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=" + revision + ": " + conversionErr
}

func sprocket(gvr schema.GroupVersionResource, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	return newCustomObject(gvr, "Sprocket", namespace, name, spec)
}

func mustCreate(t *testing.T, client dynamic.ResourceInterface, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	created, err := client.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
	return created
}

func mustGet(t *testing.T, client dynamic.ResourceInterface, name string) *unstructured.Unstructured {
	t.Helper()
	got, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return got
}

func mustWatch(t *testing.T, client dynamic.ResourceInterface, resourceVersion string) watch.Interface {
	t.Helper()
	w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

func wantSpec(t *testing.T, what string, obj *unstructured.Unstructured, want map[string]any) {
	t.Helper()
	if diff := cmp.Diff(want, obj.Object["spec"]); diff != "" {
		t.Errorf("%s: spec (-want +got):\n%s", what, diff)
	}
}

func wantConversions(t *testing.T, converter *sprocketConverter, what string, want ...string) {
	t.Helper()
	if got := converter.take(); !slices.Equal(got, want) {
		t.Errorf("%s: the webhook converted %v, want %v", what, got, want)
	}
}

func wantList(t *testing.T, client dynamic.ResourceInterface, names []string, specs []map[string]any) {
	t.Helper()
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var gotNames []string
	var gotSpecs []map[string]any
	for _, item := range list.Items {
		gotNames = append(gotNames, item.GetName())
		spec, _ := item.Object["spec"].(map[string]any)
		gotSpecs = append(gotSpecs, spec)
	}
	if !slices.Equal(gotNames, names) || !cmp.Equal(gotSpecs, specs) {
		t.Errorf("list: %v %v, want %v %v", gotNames, gotSpecs, names, specs)
	}
}

// wantEvents checks the next events of w, each "TYPE NAME SPEC".
func wantEvents(t *testing.T, w watch.Interface, want ...string) {
	t.Helper()
	for _, next := range want {
		ev := nextEvent(t, w, next)
		obj, _ := ev.Object.(*unstructured.Unstructured)
		var got string
		if obj != nil {
			spec, _ := json.Marshal(obj.Object["spec"])
			got = string(ev.Type) + " " + obj.GetName() + " " + strings.ReplaceAll(string(spec), `"`, "")
		}
		if got != next {
			t.Errorf("watch event %q, want %q (%v)", got, next, ev.Object)
		}
	}
}
