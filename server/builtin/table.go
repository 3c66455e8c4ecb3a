package builtin

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// builtinTable is a built-in type's Table as kube-apiserver prints it: its columns, and the
// function that fills one row's cells from an object. It is a rest.TableConvertor.
type builtinTable struct {
	columns []metav1.TableColumnDefinition
	cells   func(obj *unstructured.Unstructured) []any
}

// ConvertToTable converts an *unstructured.Unstructured or an *unstructured.UnstructuredList.
func (t builtinTable) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	addRow := func(obj runtime.Object) error {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("cannot print %T as a Table row", obj)
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: t.cells(u), Object: runtime.RawExtension{Object: obj}})
		return nil
	}
	if meta.IsListType(object) {
		if err := meta.EachListItem(object, addRow); err != nil {
			return nil, err
		}
	} else if err := addRow(object); err != nil {
		return nil, err
	}
	if list, err := meta.ListAccessor(object); err == nil {
		table.ResourceVersion, table.Continue, table.RemainingItemCount = list.GetResourceVersion(), list.GetContinue(), list.GetRemainingItemCount()
	} else if obj, err := meta.CommonAccessor(object); err == nil {
		table.ResourceVersion = obj.GetResourceVersion()
	}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = t.columns
	}
	return table, nil
}

var metadataDocs = metav1.ObjectMeta{}.SwaggerDoc()

// Columns every printer shares.
var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metadataDocs["name"]}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metadataDocs["creationTimestamp"]}
)

// The built-ins' Tables, as kube-apiserver prints them; each type's strategy has its own.
var configMapTable = builtinTable{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Data", Type: "integer", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
		ageColumn},
	cells: func(u *unstructured.Unstructured) []any {
		cm := decodeForTable[corev1.ConfigMap](u)
		return []any{u.GetName(), int64(len(cm.Data) + len(cm.BinaryData)), age(u)}
	},
}

var secretTable = builtinTable{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
		{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
		ageColumn},
	cells: func(u *unstructured.Unstructured) []any {
		secret := decodeForTable[corev1.Secret](u)
		return []any{u.GetName(), string(secret.Type), int64(len(secret.Data)), age(u)}
	},
}

var namespaceTable = builtinTable{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the namespace"},
		ageColumn},
	cells: func(u *unstructured.Unstructured) []any {
		ns := decodeForTable[corev1.Namespace](u)
		return []any{u.GetName(), string(ns.Status.Phase), age(u)}
	},
}

var serviceAccountTable = builtinTable{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Secrets", Type: "string", Description: corev1.ServiceAccount{}.SwaggerDoc()["secrets"]},
		ageColumn},
	cells: func(u *unstructured.Unstructured) []any {
		sa := decodeForTable[corev1.ServiceAccount](u)
		return []any{u.GetName(), int64(len(sa.Secrets)), age(u)}
	},
}

var eventTable = builtinTable{
	columns: eventColumns(),
	cells:   eventCells,
}

var leaseTable = builtinTable{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
		ageColumn},
	cells: func(u *unstructured.Unstructured) []any {
		lease := decodeForTable[coordinationv1.Lease](u)
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		return []any{u.GetName(), holder, age(u)}
	},
}

var flowSchemaTable = builtinTable{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "PriorityLevel", Type: "string", Description: "The priority level configuration the FlowSchema sends its requests to."},
		{Name: "MatchingPrecedence", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]},
		{Name: "DistinguisherMethod", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]},
		ageColumn,
		{Name: "MissingPL", Type: "string", Description: "Whether the priority level configuration the FlowSchema names is missing."},
	},
	cells: func(u *unstructured.Unstructured) []any {
		fs := decodeForTable[flowcontrolv1.FlowSchema](u)
		distinguisher, missing := "<none>", "?"
		if fs.Spec.DistinguisherMethod != nil {
			distinguisher = string(fs.Spec.DistinguisherMethod.Type)
		}
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(c.Status)
			}
		}
		return []any{u.GetName(), fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), distinguisher, age(u), missing}
	},
}

var priorityLevelTable = builtinTable{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Type", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]},
		{Name: "NominalConcurrencyShares", Type: "string", Description: flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]},
		{Name: "Queues", Type: "string", Description: flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"]},
		{Name: "HandSize", Type: "string", Description: flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"]},
		{Name: "QueueLengthLimit", Type: "string", Description: flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"]},
		ageColumn,
	},
	cells: func(u *unstructured.Unstructured) []any {
		pl := decodeForTable[flowcontrolv1.PriorityLevelConfiguration](u)
		var shares, queues, handSize, queueLength any = "<none>", "<none>", "<none>", "<none>"
		if limited := pl.Spec.Limited; limited != nil {
			if limited.NominalConcurrencyShares != nil {
				shares = int64(*limited.NominalConcurrencyShares)
			}
			if q := limited.LimitResponse.Queuing; q != nil {
				queues, handSize, queueLength = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
			}
		}
		return []any{u.GetName(), string(pl.Spec.Type), shares, queues, handSize, queueLength, age(u)}
	},
}

var validatingWebhookTable = webhookTable(func(u *unstructured.Unstructured) int {
	return len(decodeForTable[admissionregistrationv1.ValidatingWebhookConfiguration](u).Webhooks)
})

var mutatingWebhookTable = webhookTable(func(u *unstructured.Unstructured) int {
	return len(decodeForTable[admissionregistrationv1.MutatingWebhookConfiguration](u).Webhooks)
})
var validatingPolicyTable = policyTable("Validations", "Validations indicates the number of validation rules defined in this configuration",
	func(u *unstructured.Unstructured) (int, *admissionregistrationv1.ParamKind) {
		p := decodeForTable[admissionregistrationv1.ValidatingAdmissionPolicy](u)
		return len(p.Spec.Validations), p.Spec.ParamKind
	})

var mutatingPolicyTable = policyTable("Mutations", "Mutations indicates the number of mutations rules defined in this configuration",
	func(u *unstructured.Unstructured) (int, *admissionregistrationv1.ParamKind) {
		p := decodeForTable[admissionregistrationv1.MutatingAdmissionPolicy](u)
		return len(p.Spec.Mutations), p.Spec.ParamKind
	})

var validatingPolicyBindingTable = policyBindingTable(func(u *unstructured.Unstructured) (string, *admissionregistrationv1.ParamRef) {
	b := decodeForTable[admissionregistrationv1.ValidatingAdmissionPolicyBinding](u)
	return b.Spec.PolicyName, b.Spec.ParamRef
})

var mutatingPolicyBindingTable = policyBindingTable(func(u *unstructured.Unstructured) (string, *admissionregistrationv1.ParamRef) {
	b := decodeForTable[admissionregistrationv1.MutatingAdmissionPolicyBinding](u)
	return b.Spec.PolicyName, b.Spec.ParamRef
})

// eventColumns are kubectl get events' columns; those with priority 1 show with -o wide.
func eventColumns() []metav1.TableColumnDefinition {
	docs := corev1.Event{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: docs["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: docs["type"]},
		{Name: "Reason", Type: "string", Description: docs["reason"]},
		{Name: "Object", Type: "string", Description: docs["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: docs["source"]},
		{Name: "Message", Type: "string", Description: docs["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: docs["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: docs["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metadataDocs["name"]},
	}
}

// eventCells fills an event's row: times fall back to the newer API's eventTime and series.
func eventCells(u *unstructured.Unstructured) []any {
	ev := decodeForTable[corev1.Event](u)
	firstSeen := since(ev.FirstTimestamp.Time)
	if ev.FirstTimestamp.IsZero() {
		firstSeen = since(ev.EventTime.Time)
	}
	lastSeen := since(ev.LastTimestamp.Time)
	if ev.LastTimestamp.IsZero() {
		lastSeen = firstSeen
	}
	count := ev.Count
	if ev.Series != nil {
		lastSeen, count = since(ev.Series.LastObservedTime.Time), ev.Series.Count
	} else if count == 0 {
		count = 1 // a singleton event of the newer API has no count
	}
	object := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		object += "/" + ev.InvolvedObject.Name
	}
	return []any{lastSeen, ev.Type, ev.Reason, object, ev.InvolvedObject.FieldPath,
		eventSource(ev), strings.TrimSpace(ev.Message), firstSeen, int64(count), u.GetName()}
}

// eventSource is "component, host", from the older or the newer API's fields.
func eventSource(ev *corev1.Event) string {
	component, instance := ev.Source.Component, ev.Source.Host
	if component == "" {
		component = ev.ReportingController
	}
	if instance == "" {
		instance = ev.ReportingInstance
	}
	if component == "" || instance == "" {
		return component
	}
	return component + ", " + instance
}

// decodeForTable reads an object as its typed form for printing. Objects are stored as they
// were written, so a field of the wrong shape is printed as absent rather than failing the list.
func decodeForTable[T any](u *unstructured.Unstructured) *T {
	typed := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return new(T)
	}
	return typed
}

func age(u *unstructured.Unstructured) string {
	return since(u.GetCreationTimestamp().Time)
}

// since prints how long ago t was, as kubectl does ("5m", "3d"), or "<unknown>" for no time.
func since(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t))
}
