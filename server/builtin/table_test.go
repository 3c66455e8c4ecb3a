package builtin

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/sqlkube/sqlkube/server/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestBuiltinTables(t *testing.T) {
	// Half an hour: an age kube prints as "30m" for the whole next minute (under ten minutes it
	// prints seconds too, which a slow run changes).
	halfAnHourAgo := time.Now().Add(-30 * time.Minute).UTC()
	created, createdMicro := halfAnHourAgo.Format(time.RFC3339), halfAnHourAgo.Format(metav1.RFC3339Micro)
	for _, tc := range []struct {
		resource string
		object   string
		columns  []string
		cells    []any
	}{{
		resource: "configmaps",
		object:   `{"metadata":{"name":"cm","creationTimestamp":"` + created + `"},"data":{"a":"1","b":"2"},"binaryData":{"c":"AA=="}}`,
		columns:  []string{"Name", "Data", "Age"},
		cells:    []any{"cm", int64(3), "30m"},
	}, {
		resource: "secrets",
		object:   `{"metadata":{"name":"s","creationTimestamp":"` + created + `"},"type":"Opaque","data":{"a":"AA=="}}`,
		columns:  []string{"Name", "Type", "Data", "Age"},
		cells:    []any{"s", "Opaque", int64(1), "30m"},
	}, {
		resource: "namespaces",
		object:   `{"metadata":{"name":"ns","creationTimestamp":"` + created + `"},"status":{"phase":"Active"}}`,
		columns:  []string{"Name", "Status", "Age"},
		cells:    []any{"ns", "Active", "30m"},
	}, {
		resource: "serviceaccounts",
		object:   `{"metadata":{"name":"default"}}`,
		columns:  []string{"Name", "Age"},
		cells:    []any{"default", "<unknown>"},
	}, {
		resource: "leases.coordination.k8s.io",
		object:   `{"metadata":{"name":"l","creationTimestamp":"` + created + `"},"spec":{"holderIdentity":"me"}}`,
		columns:  []string{"Name", "Holder", "Age"},
		cells:    []any{"l", "me", "30m"},
	}, {
		resource: "events",
		object: `{"metadata":{"name":"e"},"type":"Normal","reason":"Started","message":" started \n","count":2,
			"involvedObject":{"kind":"Pod","name":"p","fieldPath":"spec.containers{c}"},"source":{"component":"kubelet","host":"node"},
			"firstTimestamp":"` + created + `","lastTimestamp":"` + created + `"}`,
		columns: []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"},
		cells:   []any{"30m", "Normal", "Started", "pod/p", "spec.containers{c}", "kubelet, node", "started", "30m", int64(2), "e"},
	}, {
		resource: "events",
		object:   `{"metadata":{"name":"e"},"eventTime":"` + createdMicro + `","involvedObject":{"kind":"Node"},"reportingComponent":"ctl"}`,
		columns:  []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"},
		cells:    []any{"30m", "", "", "node", "", "ctl", "", "30m", int64(1), "e"},
	}} {
		t.Run(tc.resource, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"X",` + tc.object[1:])); err != nil {
				t.Fatal(err)
			}
			list := &unstructured.UnstructuredList{Items: []unstructured.Unstructured{*u}}
			list.SetResourceVersion("42")
			table, err := builtinResource(t, tc.resource).Strategy.ConvertToTable(context.Background(), list, nil)
			if err != nil {
				t.Fatal(err)
			}
			var columns []string
			for _, c := range table.ColumnDefinitions {
				columns = append(columns, c.Name)
			}
			if !reflect.DeepEqual(columns, tc.columns) || len(table.Rows) != 1 || !reflect.DeepEqual(table.Rows[0].Cells, tc.cells) || table.ResourceVersion != "42" {
				t.Errorf("columns %v, rows %+v, resourceVersion %q\nwant columns %v, cells %#v", columns, table.Rows, table.ResourceVersion, tc.columns, tc.cells)
			}
			row, err := builtinResource(t, tc.resource).Strategy.ConvertToTable(context.Background(), u, &metav1.TableOptions{NoHeaders: true})
			if err != nil || row.ColumnDefinitions != nil || len(row.Rows) != 1 {
				t.Errorf("one object without headers: %+v, %v", row, err)
			}
		})
	}
}

// TestBuiltinsHaveTheirTables: every built-in's strategy prints an object as one row of as
// many cells as it has columns (but IPAddresses, whose kube printer adds an Age cell it has no
// column for, as kube-apiserver answers); CRDs get the default columns (Name, Created At).
func TestBuiltinsHaveTheirTables(t *testing.T) {
	for _, r := range Resources(func(*resource.Resource) {}, nil) {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": r.APIVersion(), "kind": r.Kind, "metadata": map[string]any{"name": "x"}}}
		table, err := r.Strategy.ConvertToTable(t.Context(), obj, nil)
		extra := 0
		if r.Name == "ipaddresses" {
			extra = 1
		}
		if err != nil || len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions)+extra {
			t.Fatalf("%s: %+v, %v", r.Name, table, err)
		}
		if r.Name == "customresourcedefinitions" && table.ColumnDefinitions[1].Name != "Created At" {
			t.Errorf("%s: columns %v", r.Name, table.ColumnDefinitions)
		}
	}
}
