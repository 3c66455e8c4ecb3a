package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	kjson "sigs.k8s.io/json"
)

// The answers sqlkube writes in protobuf are made from the JSON it serves (objects are stored as
// JSON): decoded into the versioned Go type of the protobuf scheme, then encoded by apimachinery's
// generated marshalers, as kube-apiserver encodes them.

// jsonToTyped decodes served JSON into the Go type its kind and apiVersion name.
var jsonToTyped = json.NewSerializerWithOptions(json.DefaultMetaFactory, ProtobufScheme, ProtobufScheme, json.SerializerOptions{})

// protoMessage is what apimachinery's generated types implement to encode themselves.
type protoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// typedMessage decodes served JSON into its protobuf message.
func typedMessage(served []byte) (runtime.Object, protoMessage, error) {
	obj, _, err := jsonToTyped.Decode(served, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	m, err := asMessage(obj)
	return obj, m, err
}

// typedMessageOf decodes served JSON known to be of kind gvk into its protobuf message: as
// jsonToTyped decodes it, without reading its kind first (half the cost of a list's item).
func typedMessageOf(gvk schema.GroupVersionKind, served []byte) (protoMessage, error) {
	obj, err := ProtobufScheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(served, obj); err != nil {
		return nil, err
	}
	return asMessage(obj)
}

func asMessage(obj runtime.Object) (protoMessage, error) {
	m, ok := obj.(protoMessage)
	if !ok {
		return nil, fmt.Errorf("%T has no protobuf encoding", obj)
	}
	return m, nil
}

// appendMessage appends m's encoding.
func appendMessage(b []byte, m protoMessage) ([]byte, error) {
	n := m.Size()
	b = append(b, make([]byte, n)...)
	_, err := m.MarshalToSizedBuffer(b[len(b)-n:])
	return b, err
}

// ProtobufObject is served JSON (an object, a Status, a PartialObjectMetadata) as kube-apiserver
// answers it in protobuf: its message in the "k8s\x00" runtime.Unknown envelope naming its kind.
func ProtobufObject(served []byte) ([]byte, error) {
	obj, _, err := typedMessage(served)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = ProtobufDecoder.Encode(obj, &b)
	return b.Bytes(), err
}

// ProtobufWatchEvent is one frame of a protobuf watch stream, as kube-apiserver writes it: the
// big-endian length of the metav1.WatchEvent that follows, whose object is encoded as
// ProtobufObject.
func ProtobufWatchEvent(eventType string, object []byte) ([]byte, error) {
	ev := &metav1.WatchEvent{Type: eventType, Object: runtime.RawExtension{Raw: object}}
	b, err := appendMessage(make([]byte, 4, 4+ev.Size()), ev)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, err
}

// ProtobufList writes a typed List in protobuf as its items arrive, holding their encoding
// (about 60% of their JSON; past 4 MiB in a temporary file) until the end, since a protobuf
// message is preceded by its length: the list's is known once its last item is. The bytes are
// those of apimachinery's encoding of the whole list.
type ProtobufList struct {
	typeMeta runtime.TypeMeta
	item     schema.GroupVersionKind
	layout   listLayout
	items    spill  // the encoded items field
	scratch  []byte // one item's field, reused
}

// NewProtobufList starts a list of kind at apiVersion, of items of itemKind.
func NewProtobufList(apiVersion, kind, itemKind string) (*ProtobufList, error) {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	list, err := ProtobufScheme.New(gvk)
	if err != nil {
		return nil, err
	}
	layout, err := layoutOf(reflect.TypeOf(list).Elem())
	if err != nil {
		return nil, err
	}
	return &ProtobufList{typeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, item: gvk.GroupVersion().WithKind(itemKind), layout: layout}, nil
}

// Add appends one item, its served JSON.
func (l *ProtobufList) Add(served []byte) error {
	m, err := typedMessageOf(l.item, served)
	if err != nil {
		return err
	}
	l.scratch = protowire.AppendTag(l.scratch[:0], l.layout.items, protowire.BytesType)
	l.scratch = protowire.AppendVarint(l.scratch, uint64(m.Size()))
	if l.scratch, err = appendMessage(l.scratch, m); err != nil {
		return err
	}
	_, err = l.items.Write(l.scratch)
	return err
}

// Close releases what the list holds; it is done with once written or abandoned.
func (l *ProtobufList) Close() error { return l.items.Close() }

// WriteTo writes the list, ended by its metadata, in its runtime.Unknown envelope.
func (l *ProtobufList) WriteTo(w io.Writer, meta metav1.ListMeta) error {
	metaField, err := appendMessage(protowire.AppendVarint(protowire.AppendTag(nil, l.layout.meta, protowire.BytesType), uint64(meta.Size())), &meta)
	if err != nil {
		return err
	}
	itemsLen, err := l.items.Len()
	if err != nil {
		return err
	}
	typeMeta, err := appendMessage(nil, &l.typeMeta)
	if err != nil {
		return err
	}
	// runtime.Unknown{TypeMeta, Raw: the list, ContentEncoding: "", ContentType: ""}, the
	// envelope's empty strings written as its generated marshaler writes them.
	head := append([]byte(nil), protobufPrefix...)
	head = protowire.AppendBytes(protowire.AppendTag(head, unknownLayout.typeMeta, protowire.BytesType), typeMeta)
	head = protowire.AppendTag(head, unknownLayout.raw, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(len(metaField))+uint64(itemsLen))
	var tail []byte
	tail = protowire.AppendBytes(protowire.AppendTag(tail, unknownLayout.contentEncoding, protowire.BytesType), nil)
	tail = protowire.AppendBytes(protowire.AppendTag(tail, unknownLayout.contentType, protowire.BytesType), nil)
	// The list's fields in the order of their numbers, as generated marshalers write them.
	parts := []io.WriterTo{bytes.NewReader(head), bytes.NewReader(metaField), &l.items, bytes.NewReader(tail)}
	if l.layout.items < l.layout.meta {
		parts[1], parts[2] = parts[2], parts[1]
	}
	for _, part := range parts {
		if _, err := part.WriteTo(w); err != nil {
			return err
		}
	}
	return nil
}

// protobufPrefix starts every protobuf answer but a watch event's ("k8s" and a zero byte), as
// apimachinery's protobuf serializer writes it.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// listLayout is the field numbers of a List type's metadata and items, which differ between
// types (meta.k8s.io/v1beta1's PartialObjectMetadataList numbers them the other way round).
type listLayout struct{ meta, items protowire.Number }

var (
	listLayouts   sync.Map // reflect.Type: listLayout
	unknownLayout = func() (l struct{ typeMeta, raw, contentEncoding, contentType protowire.Number }) {
		t := reflect.TypeOf(runtime.Unknown{})
		l.typeMeta, l.raw = fieldNumber(t, "TypeMeta"), fieldNumber(t, "Raw")
		l.contentEncoding, l.contentType = fieldNumber(t, "ContentEncoding"), fieldNumber(t, "ContentType")
		return l
	}()
)

// layoutOf reads a List type's field numbers from its protobuf struct tags.
func layoutOf(t reflect.Type) (listLayout, error) {
	if l, ok := listLayouts.Load(t); ok {
		return l.(listLayout), nil
	}
	l := listLayout{meta: fieldNumber(t, "ListMeta"), items: fieldNumber(t, "Items")}
	if l.meta == 0 || l.items == 0 {
		return l, fmt.Errorf("%s is not a List with a protobuf encoding", t)
	}
	listLayouts.Store(t, l)
	return l, nil
}

// fieldNumber is the protobuf field number of t's field name (`protobuf:"bytes,N,..."`); 0 if
// it has none.
func fieldNumber(t reflect.Type, name string) protowire.Number {
	f, ok := t.FieldByName(name)
	if !ok {
		return 0
	}
	parts := strings.Split(f.Tag.Get("protobuf"), ",")
	if len(parts) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(parts[1])
	return protowire.Number(n)
}
