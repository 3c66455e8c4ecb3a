package endpoints_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const tableV1 = "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"

func decodeTable(t *testing.T, r response) metav1.Table {
	t.Helper()
	var table metav1.Table
	if err := json.Unmarshal(r.body, &table); err != nil {
		t.Fatalf("not a Table: %v: %s", err, r.body)
	}
	return table
}

func TestTable(t *testing.T) {
	api := sqliteAPI(t)
	created := api.do("POST", cmPath, `{"metadata":{"name":"a"},"data":{"k":"v"}}`).expect(t, http.StatusCreated).object(t)
	api.do("POST", cmPath, `{"metadata":{"name":"b"}}`).expect(t, http.StatusCreated)

	list := decodeTable(t, api.do("GET", cmPath+"?limit=1", "", tableV1).expect(t, http.StatusOK))
	if list.Kind != "Table" || list.APIVersion != "meta.k8s.io/v1" || columnNames(list) != "Name,Data,Age" ||
		list.ColumnDefinitions[0].Format != "name" || list.ColumnDefinitions[0].Description != (metav1.ObjectMeta{}).SwaggerDoc()["name"] {
		t.Fatalf("table header: %+v", list.ColumnDefinitions)
	}
	if len(list.Rows) != 1 || list.Rows[0].Cells[0] != "a" || list.Rows[0].Cells[1] != float64(1) {
		t.Fatalf("rows: %+v", list.Rows)
	}
	if list.Continue == "" || list.ResourceVersion == "" || list.RemainingItemCount == nil || *list.RemainingItemCount != 1 {
		t.Fatalf("list metadata: %+v", list.ListMeta)
	}
	var partial metav1.PartialObjectMetadata
	if err := json.Unmarshal(list.Rows[0].Object.Raw, &partial); err != nil || partial.Kind != "PartialObjectMetadata" || partial.APIVersion != "meta.k8s.io/v1" || partial.Name != "a" {
		t.Fatalf("row object: %s", list.Rows[0].Object.Raw)
	}

	one := decodeTable(t, api.do("GET", cmPath+"/a?includeObject=Object", "", "Accept: application/json;as=Table;v=v1beta1;g=meta.k8s.io").expect(t, http.StatusOK))
	if one.APIVersion != "meta.k8s.io/v1beta1" || len(one.Rows) != 1 || one.ResourceVersion != str(created, "metadata", "resourceVersion") {
		t.Fatalf("object table: %+v", one)
	}
	var full map[string]any
	_ = json.Unmarshal(one.Rows[0].Object.Raw, &full)
	if str(full, "data", "k") != "v" || str(full, "kind") != "ConfigMap" {
		t.Fatalf("includeObject=Object row: %s", one.Rows[0].Object.Raw)
	}
	none := decodeTable(t, api.do("GET", cmPath+"?includeObject=None", "", tableV1).expect(t, http.StatusOK))
	if len(none.Rows) != 2 || len(none.Rows[0].Object.Raw) != 0 && string(none.Rows[0].Object.Raw) != "null" {
		t.Fatalf("includeObject=None rows: %+v", none.Rows)
	}
	api.do("GET", cmPath+"?includeObject=All", "", tableV1).expectStatus(t, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: `unrecognized includeObject value: "All"`})

	// kubectl's Accept: a Table, falling back to JSON.
	fallback := api.do("GET", cmPath, "", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json").expect(t, http.StatusOK)
	if decodeTable(t, fallback).Kind != "Table" {
		t.Fatalf("fallback Accept: %s", fallback.body)
	}
	plain := api.do("GET", cmPath, "", "Accept: application/json;as=Unknown;v=v1;g=meta.k8s.io, application/json").expect(t, http.StatusOK).object(t)
	if plain["kind"] != "ConfigMapList" {
		t.Fatalf("second choice of Accept: %v", plain["kind"])
	}
}

func columnNames(t metav1.Table) string {
	var names []string
	for _, c := range t.ColumnDefinitions {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

// TestDefaultTableColumns: types without columns of their own get kube-apiserver's default ones.
func TestDefaultTableColumns(t *testing.T) {
	api := sqliteAPI(t)
	crd := api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgetCRD).expect(t, http.StatusCreated).object(t)
	table := decodeTable(t, api.do("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", tableV1).expect(t, http.StatusOK))
	if columnNames(table) != "Name,Created At" || table.ColumnDefinitions[1].Type != "date" || len(table.Rows) != 1 ||
		table.Rows[0].Cells[0] != "widgets.example.com" || table.Rows[0].Cells[1] != str(crd, "metadata", "creationTimestamp") {
		t.Fatalf("CRD table: %+v", table)
	}
}

func TestPartialObjectMetadata(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", cmPath, `{"metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}}`).expect(t, http.StatusCreated)
	one := api.do("GET", cmPath+"/a", "", "Accept: application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io").expect(t, http.StatusOK).object(t)
	if one["kind"] != "PartialObjectMetadata" || one["apiVersion"] != "meta.k8s.io/v1" || str(one, "metadata", "labels", "x") != "y" || one["data"] != nil {
		t.Fatalf("PartialObjectMetadata: %v", one)
	}
	list := api.do("GET", cmPath, "", "Accept: application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io").expect(t, http.StatusOK).object(t)
	items, _ := list["items"].([]any)
	if list["kind"] != "PartialObjectMetadataList" || len(items) != 1 || str(items[0].(map[string]any), "kind") != "PartialObjectMetadata" {
		t.Fatalf("PartialObjectMetadataList: %v", list)
	}
	// A list cannot be served as a single PartialObjectMetadata, nor an object as a list.
	api.do("GET", cmPath, "", "Accept: application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io").expect(t, http.StatusNotAcceptable)
	api.do("GET", cmPath+"/a", "", "Accept: application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io").expect(t, http.StatusNotAcceptable)
}

// TestTableOfConvertedBuiltin: a built-in served in a version other than the one it is stored
// in is printed from the stored object, as kube-apiserver prints the internal object its storage
// decodes: a v2 HPA read as an autoscaling/v1 Table lists its metrics in v2's order (kube's
// v1 conversion puts the CPU utilization last). includeObject=Object carries the v1 object.
func TestTableOfConvertedBuiltin(t *testing.T) {
	api := sqliteAPI(t)
	watch := api.watch(hpaV1Path+"?watch=1", tableV1)
	api.do("POST", hpaV2Path, `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"web"},"spec":{
		"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":5,"metrics":[
		{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":60}}},
		{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"500Mi"}}}]}}`).expect(t, http.StatusCreated)
	const targets = "cpu: <unknown>/60%, memory: <unknown>/500Mi"

	var fromWatch metav1.Table
	if err := json.Unmarshal(watch.next().Object, &fromWatch); err != nil {
		t.Fatal(err)
	}
	one := decodeTable(t, api.do("GET", hpaV1Path+"/web?includeObject=Object", "", tableV1).expect(t, http.StatusOK))
	list := decodeTable(t, api.do("GET", hpaV1Path, "", tableV1).expect(t, http.StatusOK))
	for name, table := range map[string]metav1.Table{"get": one, "list": list, "watch": fromWatch} {
		if len(table.Rows) != 1 {
			t.Fatalf("%s: %d rows", name, len(table.Rows))
		}
		if cells := table.Rows[0].Cells; cells[2] != targets {
			t.Errorf("%s: targets %q, want %q", name, cells[2], targets)
		}
	}
	var object map[string]any
	_ = json.Unmarshal(one.Rows[0].Object.Raw, &object)
	if str(object, "apiVersion") != "autoscaling/v1" || nested(object, "spec", "targetCPUUtilizationPercentage") != float64(60) {
		t.Errorf("includeObject=Object: %s", one.Rows[0].Object.Raw)
	}
	var partial metav1.PartialObjectMetadata
	if err := json.Unmarshal(list.Rows[0].Object.Raw, &partial); err != nil || partial.Name != "web" || len(partial.Annotations) != 0 {
		t.Errorf("includeObject=Metadata: %s", list.Rows[0].Object.Raw)
	}
}
