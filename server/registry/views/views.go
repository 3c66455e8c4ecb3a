// Package views renders stored objects as the views kube-apiserver answers besides the objects
// themselves (Accept's as=Table and as=PartialObjectMetadata), by the type's rules. The HTTP
// layer asks for them; the registry stores what they are made from.
package views

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
)

// Table renders stored objects of one type as meta.k8s.io Table rows, with its columns.
type Table struct {
	convertor rest.TableConvertor
	// custom is true for a custom resource, whose rows are printed from the served object.
	custom      bool
	columns     []metav1.TableColumnDefinition
	include     metav1.IncludeObjectPolicy
	metaVersion string
}

// NewTable renders res's objects, with include's view of each row's object, in meta.k8s.io's
// version metaVersion. res's columns are what its strategy prints (a custom resource's printer
// columns, a built-in's own columns, or kube-apiserver's default ones); the reviews, which have
// no strategy, get the default columns (Name, Created At).
func NewTable(ctx context.Context, res *resource.Resource, include metav1.IncludeObjectPolicy, metaVersion string) (*Table, error) {
	var conv rest.TableConvertor = res.Strategy
	if res.Strategy == nil {
		conv = rest.NewDefaultTableConvertor(res.GroupResource())
	}
	header, err := conv.ConvertToTable(ctx, &unstructured.UnstructuredList{}, nil)
	if err != nil {
		return nil, err
	}
	return &Table{convertor: conv, custom: res.CRDName != "", columns: header.ColumnDefinitions, include: include, metaVersion: metaVersion}, nil
}

// Columns are the table's column definitions.
func (t *Table) Columns() []metav1.TableColumnDefinition { return t.columns }

// Empty is an empty Table with this table's columns.
func (t *Table) Empty() metav1.Table {
	return metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: metav1.GroupName + "/" + t.metaVersion},
		ColumnDefinitions: t.columns,
	}
}

// Row converts one object to its Table row, carrying the object as includeObject asks. stored
// and served are the object as stored and as the resource serves it (the same bytes unless the
// resource converts it).
func (t *Table) Row(ctx context.Context, stored, served []byte) (metav1.TableRow, *unstructured.Unstructured, error) {
	printed := t.printed(stored, served)
	obj, err := storedobj.DecodeStored(printed)
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
func (t *Table) printed(stored, served []byte) []byte {
	if t.custom {
		return served
	}
	return stored
}

// rowMetadata is a row's PartialObjectMetadata: the printed object's metadata, unless the
// type's printer printed a typed object (kube's printers, which print the internal type):
// kube-apiserver's row then has that object's metadata, which conversion to the internal type
// may have changed (a DaemonSet's has no template generation annotation).
func (t *Table) rowMetadata(printed runtime.Object, value []byte) ([]byte, error) {
	if typed, ok := printed.(metav1.ObjectMetaAccessor); ok {
		if _, isUnstructured := printed.(*unstructured.Unstructured); !isUnstructured {
			if objMeta, ok := typed.GetObjectMeta().(*metav1.ObjectMeta); ok {
				return partialMetadataOf(*objMeta, t.metaVersion)
			}
		}
	}
	return PartialMetadataJSON(value, t.metaVersion)
}

// PartialMetadataJSON encodes a stored object as a meta.k8s.io PartialObjectMetadata of the given
// version.
func PartialMetadataJSON(value []byte, version string) ([]byte, error) {
	var obj storedobj.MetadataOnly
	if err := storedobj.UnmarshalStored(value, &obj); err != nil {
		return nil, err
	}
	return partialMetadataOf(obj.Metadata, version)
}

// partialMetadataOf is objMeta as a meta.k8s.io PartialObjectMetadata of version.
func partialMetadataOf(objMeta metav1.ObjectMeta, version string) ([]byte, error) {
	return json.Marshal(metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: metav1.GroupName + "/" + version},
		ObjectMeta: objMeta,
	})
}
