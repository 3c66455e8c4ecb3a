package server

import (
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"
)

// builtinDecoders read the built-ins' request bodies as their Go types, by storage name.
var builtinDecoders = map[string]func(*unstructured.Unstructured) ([]string, error){
	"configmaps":                  decodeAs[corev1.ConfigMap](nil),
	"secrets":                     decodeAs(decodeSecret),
	"namespaces":                  decodeAs[corev1.Namespace](nil),
	"serviceaccounts":             decodeAs[corev1.ServiceAccount](nil),
	"events":                      decodeAs[corev1.Event](nil),
	"leases." + coordinationGroup: decodeAs[coordinationv1.Lease](nil),
	crdStorageName:                decodeAs(apiextensionsv1.SetObjectDefaults_CustomResourceDefinition),
}

// decodeAs is the Decode hook of a built-in whose Go type is T: obj goes through T as
// kube-apiserver's decoder takes a body through it (case-sensitive field names, integers kept,
// unknown fields dropped and reported by path), then adjust applies what kube-apiserver's
// defaulting or conversion does at decode time.
func decodeAs[T any](adjust func(*T)) func(*unstructured.Unstructured) ([]string, error) {
	return func(obj *unstructured.Unstructured) ([]string, error) {
		data, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		typed := new(T)
		strictErrs, err := sigsjson.UnmarshalStrict(data, typed, sigsjson.DisallowUnknownFields)
		if err != nil {
			return nil, err
		}
		if adjust != nil {
			adjust(typed)
		}
		if obj.Object, err = reencode(typed); err != nil {
			return nil, err
		}
		return unknownFieldPaths(strictErrs), nil
	}
}

// reencode is typed as JSON content, numbers kept as int64 where whole.
func reencode(typed any) (map[string]any, error) {
	data, err := json.Marshal(typed)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", typed, err)
	}
	content := map[string]any{}
	return content, utiljson.Unmarshal(data, &content)
}

// unknownFieldPaths are the paths ("spec.foo") the strict decoding errors name.
func unknownFieldPaths(strictErrs []error) []string {
	var paths []string
	for _, err := range strictErrs {
		if f, ok := err.(interface{ FieldPath() string }); ok {
			paths = append(paths, f.FieldPath())
		}
	}
	return paths
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
