package builtin

import (
	"encoding/json"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"
)

// bodyDecoder is a built-in strategy's Decode and DecodeTyped (see resource.TypedStrategy).
type bodyDecoder struct {
	body  func(data []byte) (content map[string]any, strictErrs []error, err error)
	typed func(typed any) (content map[string]any, err error)
}

// decodeAs is the decoder of a built-in whose Go type is T. A JSON body is decoded once,
// straight into T, as kube-apiserver's strict decoder does (case-sensitive field names, unknown
// fields dropped; duplicate and unknown fields reported by path, in document order); a T
// converted from a patched object is taken as it is. Then adjust applies what kube-apiserver's
// defaulting or conversion does at decode time.
func decodeAs[T any](adjust func(*T)) bodyDecoder {
	toContent := contentConverter(reflect.TypeFor[T]())
	content := func(typed *T) (map[string]any, error) {
		if adjust != nil {
			adjust(typed)
		}
		content, err := toContent(typed)
		if err != nil {
			return nil, fmt.Errorf("converting %T: %w", typed, err)
		}
		return content, nil
	}
	return bodyDecoder{
		body: func(data []byte) (map[string]any, []error, error) {
			typed := new(T)
			strictErrs, err := sigsjson.UnmarshalStrict(data, typed)
			if err != nil {
				return nil, nil, err
			}
			content, err := content(typed)
			if err != nil {
				return nil, nil, err
			}
			return content, strictErrs, nil
		},
		typed: func(typed any) (map[string]any, error) {
			t, ok := typed.(*T)
			if !ok {
				return nil, fmt.Errorf("decoding %T as %T", typed, t)
			}
			return content(t)
		},
	}
}

// contentConverter is how a typed object of type t becomes the unstructured content the server
// works with, which must be exactly what decoding its JSON gives (as for objects read from
// storage): the unstructured converter, which walks the object without writing JSON, gives that
// for every type but those with float fields, whose whole numbers decoded JSON has as int64
// but the converter keeps as float64. Those are encoded and decoded.
func contentConverter(t reflect.Type) func(typed any) (map[string]any, error) {
	if hasFloat(t, map[reflect.Type]bool{}) {
		return reencode
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured
}

// hasFloat reports whether values of t can hold a float anywhere.
func hasFloat(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return hasFloat(t.Elem(), seen)
	case reflect.Map:
		return hasFloat(t.Key(), seen) || hasFloat(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if hasFloat(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// reencode is typed as JSON content, numbers kept as int64 where whole.
func reencode(typed any) (map[string]any, error) {
	data, err := json.Marshal(typed)
	if err != nil {
		return nil, err
	}
	content := map[string]any{}
	return content, utiljson.Unmarshal(data, &content)
}

// decodeSecret applies what kube-apiserver does to a v1 Secret body: defaulting gives it type
// Opaque, and conversion folds the write-only stringData into data (stringData wins over data for
// the same key).
func decodeSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	for key, value := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[key] = []byte(value)
	}
	s.StringData = nil
}
