package kuberef

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

const (
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
	// preferProtobuf is what kube's components send.
	preferProtobuf = mediaProtobuf + ", application/json"
	// asMetadataList is client-go's metadata client's Accept for lists.
	asMetadataList = mediaProtobuf + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

// protobufScheme decodes what either server answers in protobuf: the built-in types as client-go
// knows them, CRDs, and the meta.k8s.io views.
var protobufScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	utilruntime.Must(metav1.AddMetaToScheme(s))
	utilruntime.Must(metav1beta1.AddMetaToScheme(s))
	return s
}()

var (
	protobufObjects = protobuf.NewSerializer(protobufScheme, protobufScheme)
	protobufEvents  = protobuf.NewRawSerializer(protobufScheme, protobufScheme)
)

func isProtobuf(contentType string) bool {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	return mediaType == mediaProtobuf
}

// decodeAnswer is decode for a body of any Content-Type: protobuf is compared as the JSON of
// the object it decodes to, beside its envelope (apimachinery's "k8s\x00" runtime.Unknown).
func (t *target) decodeAnswer(contentType string, data []byte, pick func(any) any) any {
	if !isProtobuf(contentType) {
		return t.decode(data, pick)
	}
	envelope, object, err := protobufToJSON(data)
	if err != nil {
		return "undecodable protobuf: " + err.Error()
	}
	return map[string]any{"protobufEnvelope": envelope, "object": t.decode(object, pick)}
}

// protobufToJSON reads a protobuf answer: its envelope, and its object as the JSON of the typed
// object client-go's scheme decodes it to.
func protobufToJSON(data []byte) (envelope map[string]any, object []byte, err error) {
	prefix, raw, ok := bytes.Cut(data, []byte{0})
	if !ok {
		return nil, nil, fmt.Errorf("no envelope prefix in %q", data)
	}
	var unknown runtime.Unknown
	if err := unknown.Unmarshal(raw); err != nil {
		return nil, nil, err
	}
	envelope = map[string]any{"prefix": string(prefix), "apiVersion": unknown.APIVersion, "kind": unknown.Kind,
		"contentType": unknown.ContentType, "contentEncoding": unknown.ContentEncoding}
	obj, gvk, err := protobufObjects.Decode(data, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	object, err = json.Marshal(obj)
	return envelope, object, err
}

// readProtobufEvents reads a protobuf watch stream's length-prefixed frames as client-go does,
// sending each as the JSON event {"type","object","protobufEnvelope"} the comparison reads.
func readProtobufEvents(body io.ReadCloser, events chan<- json.RawMessage) {
	frames := streaming.NewDecoder(protobuf.LengthDelimitedFramer.NewFrameReader(body), protobufEvents)
	for {
		var ev metav1.WatchEvent
		if _, _, err := frames.Decode(nil, &ev); err != nil {
			return
		}
		envelope, object, err := protobufToJSON(ev.Object.Raw)
		if err != nil {
			object, _ = json.Marshal("undecodable protobuf: " + err.Error())
		}
		e, _ := json.Marshal(map[string]any{"type": ev.Type, "object": json.RawMessage(object), "protobufEnvelope": envelope})
		events <- e
	}
}

// protobufScenarios ask as kube's components do (protobuf preferred), and for protobuf alone.
func protobufScenarios() []scenario {
	cms := core + "/configmaps"
	pods := core + "/pods"
	cm := func(name, data string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","labels":{"pb":"yes"}},"data":{"k":"` + data + `"}}`
	}
	return []scenario{
		{"protobuf answers of built-in types", []step{
			builderAccount("default"),
			{watch: "pb", method: "GET", path: cms + "?watch=1&labelSelector=pb%3Dyes", accept: mediaProtobuf},
			{method: "POST", path: cms, body: cm("pb-a", "1"), accept: preferProtobuf},
			{method: "POST", path: pods, body: pod("pb-pod", `{"pb":"yes"}`, ""), accept: preferProtobuf},
			{method: "GET", path: cms + "/pb-a", accept: preferProtobuf},
			{method: "GET", path: pods + "/pb-pod", accept: mediaProtobuf},
			{method: "GET", path: cms + "?labelSelector=pb%3Dyes", accept: preferProtobuf},
			{method: "GET", path: pods + "?labelSelector=pb%3Dyes", accept: mediaProtobuf},
			{method: "GET", path: cms + "?labelSelector=pb%3Dnone", accept: mediaProtobuf},
			{method: "GET", path: cms + "/pb-missing", accept: preferProtobuf},
			{method: "POST", path: cms, body: cm("pb-a", "1"), accept: preferProtobuf},
			{method: "GET", path: pods + "?labelSelector=pb%3Dyes", accept: asMetadataList},
			{method: "GET", path: cms + "/pb-a", accept: mediaProtobuf + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"},
			{method: "GET", path: cms + "?labelSelector=pb%3Dyes", accept: mediaProtobuf + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"},
			{method: "GET", path: cms, accept: mediaProtobuf + ";as=Table;g=meta.k8s.io;v=v1"},
			{method: "GET", path: cms, accept: mediaProtobuf + ";as=Table;g=meta.k8s.io;v=v1,application/json;as=Table;g=meta.k8s.io;v=v1", pick: func(v any) any {
				m, _ := v.(map[string]any)
				return m["kind"]
			}},
			{method: "PATCH", path: cms + "/pb-a", contentType: mergePatch, body: `{"data":{"k":"2"}}`, accept: preferProtobuf},
			{method: "DELETE", path: cms + "/pb-a", accept: preferProtobuf},
			{watch: "pb", until: "pb-a"},
			{watch: "pbl", method: "GET", path: cms + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=pb%3Dyes", accept: preferProtobuf},
			{watch: "pbl", events: 1},
			{watch: "pbm", method: "GET", path: pods + "?watch=1&labelSelector=pb%3Dyes", accept: mediaProtobuf + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
			{method: "DELETE", path: pods + "/pb-pod", body: `{"gracePeriodSeconds":0}`, accept: preferProtobuf},
			{watch: "pbm", until: "pb-pod"},
		}},
		{"protobuf and custom resources", []step{
			{method: "POST", path: crds, body: widgetCRD, setup: true},
			{method: "GET", path: widgets, setup: true, waitFor: 200},
			{method: "POST", path: widgets, body: widget("pb-w"), accept: preferProtobuf},
			{method: "GET", path: widgets + "/pb-w", accept: mediaProtobuf},
			{method: "GET", path: widgets + "/pb-missing", accept: preferProtobuf},
			{method: "GET", path: widgets, accept: asMetadataList},
			{method: "GET", path: widgets + "?watch=1", accept: mediaProtobuf, watch: "pbw"},
			{method: "DELETE", path: widgets + "/pb-w", accept: preferProtobuf},
		}},
	}
}
