package endpoints_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/resource"
)

// TestProtobufBodies writes built-ins in protobuf, as client-go's typed clients can: they are
// decoded, defaulted and validated as their JSON would be.
func TestProtobufBodies(t *testing.T) {
	api := sqliteAPI(t)
	send := func(method, path string, obj runtime.Object) response {
		t.Helper()
		var body bytes.Buffer
		if err := endpoints.ProtobufDecoder.Encode(obj, &body); err != nil {
			t.Fatal(err)
		}
		return api.do(method, path, body.String(), "Content-Type: "+endpoints.MediaTypeProtobuf)
	}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"a": "b"}},
		Data:       map[string][]byte{"bin": {0, 1, 2}}, StringData: map[string]string{"text": "t"}}
	created := send("POST", "/api/v1/namespaces/default/secrets", secret).expect(t, http.StatusCreated).object(t)
	if str(created, "type") != "Opaque" || str(created, "data", "bin") != "AAEC" || str(created, "data", "text") != "dA==" ||
		nested(created, "stringData") != nil || str(created, "metadata", "labels", "a") != "b" {
		t.Errorf("created secret: %v", created)
	}

	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}
	send("POST", cmPath, cm).expect(t, http.StatusUnprocessableEntity)
	send("POST", cmPath, secret).expectStatus(t, metav1.Status{Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
		Message: `Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`})
	api.do("POST", cmPath, "not protobuf", "Content-Type: "+endpoints.MediaTypeProtobuf).expect(t, http.StatusBadRequest)

	// A Scale, as client-go's typed UpdateScale sends it (kube-controller-manager's scalers).
	api.do("POST", deploymentsPath, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
		"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
		"spec":{"containers":[{"name":"nginx","image":"nginx"}]}}}}`).expect(t, http.StatusCreated)
	scale := &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
	scaled := send("PUT", deploymentsPath+"/web/scale", scale).expect(t, http.StatusOK).object(t)
	if replicas := nested(scaled, "spec", "replicas"); replicas != float64(4) {
		t.Errorf("scale written in protobuf: spec.replicas %v, want 4", replicas)
	}
}

// Every built-in type's body may come as protobuf, as kubectl sends it.
func TestEveryBuiltinDecodesFromProtobuf(t *testing.T) {
	for _, r := range builtin.Resources(func(*resource.Resource) {}, nil) {
		gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
		if !endpoints.ProtobufScheme.Recognizes(gvk) {
			t.Errorf("%s is not in the protobuf scheme", gvk)
		}
	}
}

// kube's components' Accept: protobuf, else JSON.
const acceptProtobuf = "Accept: " + endpoints.MediaTypeProtobuf + ", application/json"

// fromProtobuf decodes a protobuf answer with client-go's scheme and gives the JSON of the typed
// object it holds, to compare with the JSON answer.
func fromProtobuf(t testing.TB, body []byte) map[string]any {
	t.Helper()
	obj, gvk, err := endpoints.ProtobufDecoder.Decode(body, nil, nil)
	if err != nil {
		t.Fatalf("answer is not protobuf: %v: %q", err, body)
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return typedJSON(t, obj)
}

// typedJSON is a typed object's JSON as a map.
func typedJSON(t testing.TB, obj any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// withoutItemTypes is a list as protobuf carries it: its items without kind and apiVersion
// (the Go types have them, the messages not), none an empty list.
func withoutItemTypes(m map[string]any) map[string]any {
	if _, isList := m["items"]; !isList {
		return m
	}
	items, _ := m["items"].([]any)
	for _, item := range items {
		delete(item.(map[string]any), "kind")
		delete(item.(map[string]any), "apiVersion")
	}
	m["items"] = append([]any{}, items...)
	return m
}

// expectProtobuf checks an answer is protobuf holding what the JSON answer holds.
func (r response) expectProtobuf(t testing.TB, code int, want response) map[string]any {
	t.Helper()
	r.expect(t, code)
	if ct := r.header.Get("Content-Type"); ct != endpoints.MediaTypeProtobuf {
		t.Fatalf("Content-Type %q, want %s", ct, endpoints.MediaTypeProtobuf)
	}
	got := fromProtobuf(t, r.body)
	if w := want.object(t); !reflect.DeepEqual(withoutItemTypes(got), withoutItemTypes(w)) {
		t.Fatalf("protobuf answer\n%v\nJSON answer\n%v", got, w)
	}
	return got
}

// Every answer of a built-in type is protobuf when the client prefers it, as kube-apiserver's;
// it holds what the JSON answer holds.
func TestProtobufAnswers(t *testing.T) {
	api := sqliteAPI(t)
	createDefaultServiceAccount(t, api)
	api.do("POST", podsPath, podJSON("a", `"app":"web"`)).expect(t, http.StatusCreated)
	api.do("POST", podsPath, podJSON("b", "")).expect(t, http.StatusCreated)
	for _, path := range []string{podsPath + "/a", podsPath, podsPath + "?limit=1", "/api/v1/pods?labelSelector=app%3Dweb"} {
		api.do("GET", path, "", acceptProtobuf).expectProtobuf(t, http.StatusOK, api.do("GET", path, ""))
	}
	// An empty list, and one of another group.
	api.do("GET", "/api/v1/namespaces/none/pods", "", acceptProtobuf).expectProtobuf(t, http.StatusOK, api.do("GET", "/api/v1/namespaces/none/pods", ""))
	api.do("GET", "/apis/apps/v1/deployments", "", acceptProtobuf).expectProtobuf(t, http.StatusOK, api.do("GET", "/apis/apps/v1/deployments", ""))

	// Writes answer in protobuf, whatever the body's encoding.
	created := api.do("POST", cmPath, configMap("c", nil, "1"), acceptProtobuf).expectProtobuf(t, http.StatusCreated, api.do("GET", cmPath+"/c", ""))
	if str(created, "data", "v") != "1" {
		t.Errorf("created: %v", created)
	}
	patched := api.do("PATCH", cmPath+"/c", `{"data":{"v":"2"}}`, acceptProtobuf, "Content-Type: application/merge-patch+json")
	patched.expectProtobuf(t, http.StatusOK, api.do("GET", cmPath+"/c", ""))
	deleted := api.do("DELETE", cmPath+"/c", "", acceptProtobuf)
	if st := fromProtobuf(t, deleted.expect(t, http.StatusOK).body); str(st, "kind") != "Status" || str(st, "status") != "Success" || str(st, "details", "name") != "c" {
		t.Errorf("delete answer: %v", st)
	}

	// A Status error is protobuf when protobuf is preferred, for any type.
	missing := api.do("GET", podsPath+"/missing", "", acceptProtobuf)
	missing.expectProtobuf(t, http.StatusNotFound, api.do("GET", podsPath+"/missing", ""))
	api.do("GET", podsPath, "", "Accept: "+endpoints.MediaTypeProtobuf+";as=Table;g=meta.k8s.io;v=v1").expect(t, http.StatusNotAcceptable)
}

// PartialObjectMetadata is written in protobuf for every type, custom resources included, as
// client-go's metadata client (the garbage collector's, the quota controller's) asks; custom
// resources themselves and Tables are not.
func TestProtobufViews(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crdYAML("widgets", "Widget", "v1"), "Content-Type: application/yaml").expect(t, http.StatusCreated)
	widgets := "/apis/example.com/v1/namespaces/default/widgets"
	api.do("POST", widgets, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`).expect(t, http.StatusCreated)
	createDefaultServiceAccount(t, api)
	api.do("POST", podsPath, podJSON("a", "")).expect(t, http.StatusCreated)
	const metaList = ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	for _, path := range []string{widgets, podsPath} {
		got := api.do("GET", path, "", "Accept: "+endpoints.MediaTypeProtobuf+metaList+",application/json"+metaList+",application/json")
		list := got.expectProtobuf(t, http.StatusOK, api.do("GET", path, "", "Accept: application/json"+metaList))
		if items, _ := list["items"].([]any); str(list, "kind") != "PartialObjectMetadataList" || len(items) != 1 {
			t.Errorf("%s: %v", path, list)
		}
		one := path + "/" + map[string]string{widgets: "w", podsPath: "a"}[path]
		api.do("GET", one, "", "Accept: "+endpoints.MediaTypeProtobuf+";as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1").
			expectProtobuf(t, http.StatusOK, api.do("GET", one, "", "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"))
	}
	// A custom resource is JSON for a client that takes it, and not acceptable to one that only
	// takes protobuf; its errors are protobuf all the same.
	if got := api.do("GET", widgets+"/w", "", acceptProtobuf).expect(t, http.StatusOK); got.header.Get("Content-Type") != "application/json" {
		t.Errorf("custom resource answered in %q", got.header.Get("Content-Type"))
	}
	api.do("GET", widgets+"/w", "", "Accept: "+endpoints.MediaTypeProtobuf).expectProtobuf(t, http.StatusNotAcceptable,
		api.do("GET", widgets+"/w", "", "Accept: text/html"))
	api.do("GET", widgets+"/missing", "", acceptProtobuf).expectProtobuf(t, http.StatusNotFound, api.do("GET", widgets+"/missing", ""))
}

// protobufWatch opens a watch in protobuf and reads its length-prefixed frames as client-go does,
// each as a wireEvent whose object is the JSON of the typed object it decodes to.
func (a *testAPI) protobufWatch(path string) *wireWatch {
	a.t.Helper()
	ww := a.openWatch(path, "Accept: "+endpoints.MediaTypeProtobuf)
	if ct := ww.resp.Header.Get("Content-Type"); ww.resp.StatusCode != http.StatusOK || ct != endpoints.MediaTypeProtobuf+";stream=watch" {
		a.t.Fatalf("watch %s: status %d, Content-Type %q", path, ww.resp.StatusCode, ct)
	}
	go func() {
		defer close(ww.events)
		frames := streaming.NewDecoder(protobuf.LengthDelimitedFramer.NewFrameReader(ww.resp.Body),
			protobuf.NewRawSerializer(endpoints.ProtobufScheme, endpoints.ProtobufScheme))
		for {
			var ev metav1.WatchEvent
			if _, _, err := frames.Decode(nil, &ev); err != nil {
				return
			}
			obj, gvk, err := endpoints.ProtobufDecoder.Decode(ev.Object.Raw, nil, nil)
			if err != nil {
				ww.events <- wireEvent{Type: "UNDECODABLE: " + err.Error()}
				return
			}
			obj.GetObjectKind().SetGroupVersionKind(*gvk)
			object, _ := json.Marshal(obj)
			ww.events <- wireEvent{Type: ev.Type, Object: object}
		}
	}()
	return ww
}

// A watch in protobuf sends kube-apiserver's frames: changes, bookmarks, and the ERROR that ends
// it, each object holding what the JSON watch's does.
func TestProtobufWatch(t *testing.T) {
	api := sqliteAPI(t)
	start := api.listRV()
	watches := []*wireWatch{api.protobufWatch(configMapsPath + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + start),
		api.protobufWatch(configMapsPath + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + start)}
	jsonWatch := api.watch(configMapsPath + "?watch=1&resourceVersion=" + start)
	rv1 := api.put("a", nil, "1")
	rv2 := api.put("a", nil, "2")
	rv3 := api.remove("a")
	for _, ww := range watches { // the second reads the frames encoded for the first
		for _, want := range []string{"ADDED a " + rv1, "MODIFIED a " + rv2, "DELETED a " + rv3} {
			ev, jsonEv := ww.nextChange(start), jsonWatch.next()
			if got := ev.summary(t); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
			if !reflect.DeepEqual(ev.object(t), jsonEv.object(t)) {
				t.Fatalf("protobuf event %s\nJSON event %s", ev.Object, jsonEv.Object)
			}
		}
		jsonWatch = api.watch(configMapsPath + "?watch=1&resourceVersion=" + start)
	}

	// A watch list's initial events end with a bookmark; a start the store has not reached ends
	// it with an ERROR.
	list := api.protobufWatch(configMapsPath + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	if end := list.next(); end.Type != "BOOKMARK" || str(end.object(t), "metadata", "annotations", metav1.InitialEventsAnnotationKey) != "true" {
		t.Fatalf("got %s %s, want the initial events' end", end.Type, end.Object)
	}
	far := strconv.Itoa(mustAtoi(t, rv3) + 100)
	api.protobufWatch(configMapsPath + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=" + far).
		expectError(metav1.Status{Code: http.StatusGatewayTimeout, Reason: metav1.StatusReasonTimeout,
			Message: "Timeout: Too large resource version: " + far + ", current: " + rv3,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}, RetryAfterSeconds: 1}})
}
