package crdschema

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
)

// SelectableFields lists the field selector labels the version supports: metadata.name,
// metadata.namespace for namespaced types, then the version's selectableFields in the CRD's
// order, each its JSONPath without the leading dot ("spec.color").
func (s *Schema) SelectableFields() []string { return slices.Clone(s.selectableNames) }

// CheckFieldLabel returns kube-apiserver's error for a field selector on a label the version
// does not support; the server answers it with 400 BadRequest.
func (s *Schema) CheckFieldLabel(label string) error {
	if slices.Contains(s.selectableNames, label) {
		return nil
	}
	return fmt.Errorf("field label not supported: %s", label)
}

// FieldSet gives the values of every selectable field of the object, as field selectors
// compare them: missing values are "", others are printed with fmt.Sprint. An error (a
// selectableFields path matching several values) means the object cannot be matched.
func (s *Schema) FieldSet(u *unstructured.Unstructured) (fields.Set, error) {
	_, set, err := s.strategy.GetAttrs(u)
	return set, err
}

func selectableFieldNames(scope apiextensionsv1.ResourceScope, custom []apiextensionsv1.SelectableField) []string {
	names := []string{"metadata.name"}
	if scope == apiextensionsv1.NamespaceScoped {
		names = append(names, "metadata.namespace")
	}
	for _, f := range custom {
		names = append(names, strings.TrimPrefix(f.JSONPath, "."))
	}
	return names
}
