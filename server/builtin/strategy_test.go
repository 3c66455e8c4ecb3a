package builtin

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/resource"
)

// TestStrategiesFollowKube checks each built-in's strategy against what kube-apiserver's
// strategy of the type says: whether it counts metadata.generation, whether a PUT may create
// the object or leave out its resourceVersion, which field selector labels it has beyond
// metadata, and that its scope, /status rules and Go type agree with the resource. The types
// served with kube's own strategies (kube) answer the first three from them.
func TestStrategiesFollowKube(t *testing.T) {
	untracked := []string{"configmaps", "secrets", "namespaces", "serviceaccounts", "events", "leases." + CoordinationGroup,
		"roles." + RBACGroup, "clusterroles." + RBACGroup, "rolebindings." + RBACGroup, "clusterrolebindings." + RBACGroup}
	createOnUpdate := []string{"events", "leases." + CoordinationGroup,
		"roles." + RBACGroup, "clusterroles." + RBACGroup, "rolebindings." + RBACGroup, "clusterrolebindings." + RBACGroup}
	conditional := []string{"leases." + CoordinationGroup, CRDStorageName}
	fieldLabels := map[string][]string{
		"secrets":    {"type"},
		"namespaces": {"status.phase"},
		"nodes":      {"spec.unschedulable"},
		"services":   {"spec.clusterIP", "spec.type"},
		"events": {"involvedObject.apiVersion", "involvedObject.fieldPath", "involvedObject.kind", "involvedObject.name",
			"involvedObject.namespace", "involvedObject.resourceVersion", "involvedObject.uid", "reason", "reportingComponent", "source", "type"},
		"events." + EventsGroup: {"reason", "regarding.apiVersion", "regarding.fieldPath", "regarding.kind", "regarding.name",
			"regarding.namespace", "regarding.resourceVersion", "regarding.uid", "reportingController", "type"},
		"jobs." + BatchGroup:                              {"status.successful"},
		"certificatesigningrequests." + CertificatesGroup: {"spec.signerName"},
		"clustertrustbundles." + CertificatesGroup:        {"spec.signerName"},
		"podcertificaterequests." + CertificatesGroup:     {"spec.nodeName", "spec.podName", "spec.signerName"},
		"resourceslices." + ResourceGroup:                 {"spec.driver", "spec.nodeName", "spec.pool.name"},
		"pods": {"spec.host", "spec.hostNetwork", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
			"status.nominatedNodeName", "status.phase", "status.podIP", "status.podIPs"},
		"replicationcontrollers": {"status.replicas"},
	}
	for _, r := range Resources(func(*resource.Resource) {}, nil) {
		s := r.Strategy
		if _, kubes := s.(*kubeTypeStrategy); kubes {
			// kube's own strategies count their generations themselves, and answer the rest.
			if s.TracksGeneration() {
				t.Errorf("%s: TracksGeneration with kube's strategy", r.StorageName)
			}
		} else {
			if got, want := s.TracksGeneration(), !slices.Contains(untracked, r.StorageName); got != want {
				t.Errorf("%s: TracksGeneration %t, want %t", r.StorageName, got, want)
			}
			if got, want := s.AllowCreateOnUpdate(), slices.Contains(createOnUpdate, r.StorageName); got != want {
				t.Errorf("%s: AllowCreateOnUpdate %t, want %t", r.StorageName, got, want)
			}
			if got, want := s.AllowUnconditionalUpdate(), !slices.Contains(conditional, r.StorageName); got != want {
				t.Errorf("%s: AllowUnconditionalUpdate %t, want %t", r.StorageName, got, want)
			}
		}
		if s.NamespaceScoped() != r.Namespaced || (s.StatusStrategy() != nil) != r.Status {
			t.Errorf("%s: NamespaceScoped %t, StatusStrategy %v; resource namespaced %t, status %t", r.StorageName, s.NamespaceScoped(), s.StatusStrategy(), r.Namespaced, r.Status)
		}
		if got, want := slices.Sorted(maps.Keys(r.Typed().SelectableFields())), fieldLabels[r.GroupResource().String()]; !slices.Equal(got, want) {
			t.Errorf("%s: SelectableFields %q, want %q", r.GroupResource(), got, want)
		}
		if goType := r.GoType(); goType == nil || goType.Name() != r.Kind {
			t.Errorf("%s: Go type %v", r.StorageName, goType)
		}
	}
}

// TestBuiltinStatusValidatesAsUpdate: a /status write of a built-in not served with kube's
// strategy (a CRD) is validated as any update of it, with the same errors (here, a label key
// that is not a qualified name).
func TestBuiltinStatusValidatesAsUpdate(t *testing.T) {
	res := builtinResource(t, CRDStorageName)
	old := decodedForValidation(t, res, `{metadata: {name: p}}`)
	obj := old.DeepCopy()
	obj.SetLabels(map[string]string{"bad key": "x"})
	main, status := res.Strategy.ValidateUpdate(t.Context(), obj, old), res.Strategy.StatusStrategy().ValidateUpdate(t.Context(), obj, old)
	if len(main) == 0 || errorsText(main) != errorsText(status) {
		t.Errorf("update errors %v, /status errors %v", main, status)
	}
}

// TestNamespaceStrategy: a new namespace is labelled with its name (again once generateName
// made it), holds the kubernetes finalizer and is Active; an update keeps the finalizers and
// status only /finalize and /status write; spec.finalizers hold its deletion, which marks it
// Terminating.
func TestNamespaceStrategy(t *testing.T) {
	s := builtinResource(t, "namespaces").Strategy
	ns := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"finalizers": []any{"example.com/x"}}}}
	ns.SetName("demo")
	s.PrepareForCreate(t.Context(), ns)
	finalizers, _, _ := unstructured.NestedStringSlice(ns.Object, "spec", "finalizers")
	phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
	if !slices.Equal(finalizers, []string{"example.com/x", "kubernetes"}) || phase != "Active" || ns.GetLabels()["kubernetes.io/metadata.name"] != "demo" {
		t.Fatalf("prepared for create: %v", ns.Object)
	}
	ns.SetName("demo-x1")
	s.Canonicalize(ns)
	if ns.GetLabels()["kubernetes.io/metadata.name"] != "demo-x1" {
		t.Errorf("canonicalized labels %v", ns.GetLabels())
	}

	update := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"phase": "Terminating"}}}
	update.SetName("demo-x1")
	s.PrepareForUpdate(t.Context(), update, ns)
	finalizers, _, _ = unstructured.NestedStringSlice(update.Object, "spec", "finalizers")
	phase, _, _ = unstructured.NestedString(update.Object, "status", "phase")
	if len(finalizers) != 2 || phase != "Active" {
		t.Errorf("prepared for update: %v", update.Object)
	}

	if !s.HoldsDeletion(ns) {
		t.Errorf("spec.finalizers %v do not hold the deletion", finalizers)
	}
	unstructured.RemoveNestedField(ns.Object, "spec", "finalizers")
	if s.HoldsDeletion(ns) {
		t.Errorf("a namespace without spec.finalizers holds its deletion")
	}
	s.PrepareForFinalizing(ns)
	if phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase"); phase != "Terminating" {
		t.Errorf("finalizing phase %q", phase)
	}
}

// TestOtherBuiltinsHaveNoDeletionRules: only namespaces have rules of their own around deletion.
func TestOtherBuiltinsHaveNoDeletionRules(t *testing.T) {
	res := builtinResource(t, "configmaps")
	obj := decodedForValidation(t, res, `{metadata: {name: c}, spec: {finalizers: [x]}}`)
	before := obj.DeepCopy()
	res.Strategy.PrepareForDelete(t.Context(), obj)
	res.Strategy.PrepareForFinalizing(obj)
	if res.Strategy.HoldsDeletion(obj) || !equalContent(obj, before) {
		t.Errorf("configmap deletion rules changed %v", obj.Object)
	}
}

func equalContent(a, b *unstructured.Unstructured) bool {
	x, _ := a.MarshalJSON()
	y, _ := b.MarshalJSON()
	return string(x) == string(y)
}
