package crdschema

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Table converts an *unstructured.Unstructured or *unstructured.UnstructuredList into the
// metav1.Table kubectl asks for (Accept: ...;as=Table): a Name column, then the version's
// additionalPrinterColumns (or Age when it has none). A JSONPath that finds nothing gives a nil
// cell; string columns are printed as JSONPath prints them, others keep their JSON type.
// opts may be nil; with NoHeaders the column definitions are left out.
func (s *Schema) Table(ctx context.Context, obj runtime.Object, opts *metav1.TableOptions) (*metav1.Table, error) {
	return s.table.ConvertToTable(ctx, obj, opts)
}

// creationTimestampDescription is how kube-apiserver describes its default Age column.
var creationTimestampDescription = metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]

// newTableConvertor builds apiextensions-apiserver's table convertor, with kube-apiserver's
// Age column for versions without printer columns. Like kube-apiserver, it serves what it
// could parse when a column's JSONPath is invalid (CRD validation rejects those anyway).
func newTableConvertor(columns []apiextensionsv1.CustomResourceColumnDefinition) rest.TableConvertor {
	if len(columns) == 0 {
		columns = []apiextensionsv1.CustomResourceColumnDefinition{{
			Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
			Description: creationTimestampDescription,
		}}
	}
	table, _ := tableconvertor.New(columns)
	return table
}
