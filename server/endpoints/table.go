package endpoints

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sqlkube/sqlkube/server/registry"
)

// tableConverter renders stored objects as meta.k8s.io Table rows.
type tableConverter struct {
	convertor rest.TableConvertor
	// custom is true for a custom resource, whose rows are printed from the served object.
	custom      bool
	columns     []metav1.TableColumnDefinition
	include     metav1.IncludeObjectPolicy
	metaVersion string
}

// tableConvertorFor gives a type's columns, which its strategy prints (a custom resource's
// printer columns, a built-in's own columns, or kube-apiserver's default ones); the reviews,
// which have no strategy, get the default columns (Name, Created At).
func tableConvertorFor(req *request) rest.TableConvertor {
	if req.res.Strategy == nil {
		return rest.NewDefaultTableConvertor(req.gr)
	}
	return req.res.Strategy
}

// newTableConverter reads the includeObject option and the type's columns.
func (s *Server) newTableConverter(r *http.Request, req *request, metaVersion string) (*tableConverter, error) {
	include, err := includeObjectPolicy(r)
	if err != nil {
		return nil, err
	}
	conv := tableConvertorFor(req)
	header, err := conv.ConvertToTable(r.Context(), &unstructured.UnstructuredList{}, nil)
	if err != nil {
		return nil, err
	}
	return &tableConverter{convertor: conv, custom: req.res.CRDName != "", columns: header.ColumnDefinitions,
		include: include, metaVersion: metaVersion}, nil
}

// includeObjectPolicy reads includeObject: Metadata (the default), None or Object.
func includeObjectPolicy(r *http.Request) (metav1.IncludeObjectPolicy, error) {
	switch p := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject")); p {
	case "", metav1.IncludeMetadata:
		return metav1.IncludeMetadata, nil
	case metav1.IncludeNone, metav1.IncludeObject:
		return p, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("unrecognized includeObject value: %q", p))
	}
}

// table is an empty Table with this converter's columns.
func (t *tableConverter) table() metav1.Table {
	return metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: metav1.GroupName + "/" + t.metaVersion},
		ColumnDefinitions: t.columns,
	}
}

// row converts one object to its Table row, carrying the object as includeObject asks. stored
// and served are the object as stored and as the resource serves it (the same bytes unless the
// resource converts it).
func (t *tableConverter) row(ctx context.Context, stored, served []byte) (metav1.TableRow, *unstructured.Unstructured, error) {
	printed := t.printed(stored, served)
	obj, err := registry.DecodeStored(printed)
	if err != nil {
		return metav1.TableRow{}, nil, err
	}
	converted, err := t.convertor.ConvertToTable(ctx, obj, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		return metav1.TableRow{}, nil, err
	}
	if len(converted.Rows) != 1 {
		return metav1.TableRow{}, nil, fmt.Errorf("table convertor returned %d rows for one object", len(converted.Rows))
	}
	row := converted.Rows[0]
	row.Object = runtime.RawExtension{}
	switch t.include {
	case metav1.IncludeObject:
		row.Object.Raw = served
	case metav1.IncludeMetadata:
		if row.Object.Raw, err = t.rowMetadata(converted.Rows[0].Object.Object, printed); err != nil {
			return metav1.TableRow{}, nil, err
		}
	}
	return row, obj, nil
}

// printed is the object a row is printed from. kube-apiserver prints a built-in's row from the
// internal object its storage decodes, whichever version is served (an autoscaling/v1 HPA,
// stored as v2, lists its metrics in v2's order), and a custom resource's from the served
// version, which its printer columns are for.
func (t *tableConverter) printed(stored, served []byte) []byte {
	if t.custom {
		return served
	}
	return stored
}

// rowMetadata is a row's PartialObjectMetadata: the printed object's metadata, unless the
// type's printer printed a typed object (kube's printers, which print the internal type):
// kube-apiserver's row then has that object's metadata, which conversion to the internal type
// may have changed (a DaemonSet's has no template generation annotation).
func (t *tableConverter) rowMetadata(printed runtime.Object, value []byte) ([]byte, error) {
	if typed, ok := printed.(metav1.ObjectMetaAccessor); ok {
		if _, isUnstructured := printed.(*unstructured.Unstructured); !isUnstructured {
			if objMeta, ok := typed.GetObjectMeta().(*metav1.ObjectMeta); ok {
				return partialMetadataOf(*objMeta, t.metaVersion)
			}
		}
	}
	return partialMetadataJSON(value, t.metaVersion)
}
