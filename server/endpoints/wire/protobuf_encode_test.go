package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i",
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}}}}}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// encoded is apimachinery's protobuf encoding of obj, what kube-apiserver answers.
func encoded(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ProtobufDecoder.Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestProtobufObjectIsApimachinerys(t *testing.T) {
	p := pod("a")
	got, err := ProtobufObject(mustJSON(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if want := encoded(t, p); !bytes.Equal(got, want) {
		t.Errorf("pod:\n got %q\nwant %q", got, want)
	}
	if _, err := ProtobufObject([]byte(`{"apiVersion":"example.com/v1","kind":"Widget"}`)); err == nil {
		t.Error("a kind outside the scheme was encoded")
	}
}

// A list written item by item is byte for byte the encoding of the whole typed list, whichever
// order its type numbers its fields in.
func TestProtobufListIsApimachinerys(t *testing.T) {
	defer func(limit int) { spillAfter = limit }(spillAfter)
	for _, limit := range []int{spillAfter, 100} { // in memory; in a file past the first item
		spillAfter = limit
		testProtobufLists(t)
	}
}

func testProtobufLists(t *testing.T) {
	meta := metav1.ListMeta{ResourceVersion: "9", Continue: "next"}
	partial := func(name string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "3"}}
	}
	for _, tc := range []struct {
		list  runtime.Object
		items []any
	}{
		{&corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: meta,
			Items: []corev1.Pod{*pod("a"), *pod("b")}}, []any{pod("a"), pod("b")}},
		{&corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: meta}, nil},
		{&metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
			ListMeta: meta, Items: []metav1.PartialObjectMetadata{partial("a"), partial("b")}},
			[]any{partial("a"), partial("b")}},
		{&metav1beta1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1beta1", Kind: "PartialObjectMetadataList"},
			ListMeta: meta, Items: []metav1.PartialObjectMetadata{partial("a"), partial("b")}},
			[]any{partial("a"), partial("b")}},
	} {
		gvk := tc.list.GetObjectKind().GroupVersionKind()
		l, err := NewProtobufList(gvk.GroupVersion().String(), gvk.Kind, strings.TrimSuffix(gvk.Kind, "List"))
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range tc.items {
			served := mustJSON(t, item)
			if p, ok := item.(metav1.PartialObjectMetadata); ok {
				p.APIVersion, p.Kind = gvk.GroupVersion().String(), "PartialObjectMetadata"
				served = mustJSON(t, p)
			}
			if err := l.Add(served); err != nil {
				t.Fatal(err)
			}
		}
		var got bytes.Buffer
		if err := l.WriteTo(&got, meta); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if want := encoded(t, tc.list); !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s with %d items:\n got %q\nwant %q", gvk, len(tc.items), got.Bytes(), want)
		}
	}
}

// A watch frame is what client-go's protobuf watch decoder reads.
func TestProtobufWatchEventDecodes(t *testing.T) {
	object, err := ProtobufObject(mustJSON(t, pod("a")))
	if err != nil {
		t.Fatal(err)
	}
	var stream []byte
	for _, eventType := range []string{"ADDED", "DELETED"} {
		frame, err := ProtobufWatchEvent(eventType, object)
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, frame...)
	}
	dec := streaming.NewDecoder(protobuf.LengthDelimitedFramer.NewFrameReader(readCloser{bytes.NewReader(stream)}),
		protobuf.NewRawSerializer(ProtobufScheme, ProtobufScheme))
	for _, want := range []string{"ADDED", "DELETED"} {
		var ev metav1.WatchEvent
		if _, _, err := dec.Decode(nil, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != want || !bytes.Equal(ev.Object.Raw, object) {
			t.Errorf("event %s: %q", ev.Type, ev.Object.Raw)
		}
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
