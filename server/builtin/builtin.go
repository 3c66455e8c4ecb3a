// Package builtin defines the built-in types sqlkube serves: their names and, in one strategy
// per type (resource.TypedStrategy), their Go types, decoding, validation, update rules and
// table columns, as resource descriptions the registry applies.
package builtin

import (
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install" // coordination's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/coordination/lease"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/event"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"

	"github.com/sqlkube/sqlkube/server/resource"
)

const (
	APIExtensionsGroup = "apiextensions.k8s.io"
	CoordinationGroup  = "coordination.k8s.io"
	FlowControlGroup   = "flowcontrol.apiserver.k8s.io"
	// CRDStorageName is where CustomResourceDefinitions are stored.
	CRDStorageName = "customresourcedefinitions." + APIExtensionsGroup
)

// The verbs kube-apiserver's discovery lists for the built-ins, sorted as it lists them.
var (
	verbsAll          = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	verbsNoCollection = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
)

// Resources lists the built-in types, stored as opaque JSON beyond metadata, each with its
// strategy: kube-apiserver's own (see kube) for all but customresourcedefinitions, which gets
// its rules from bindCRDHooks (the catalog's, which validate and establish CRDs against the
// names already served) on top of its Go type's. access is what the strategies of some types ask
// of the server (nil: never bound, for the tests that need none).
func Resources(bindCRDHooks func(*resource.Resource), access *Access) []*resource.Resource {
	if access == nil {
		access = &Access{}
	}
	return append([]*resource.Resource{
		builtin("", "v1", "namespaces", "Namespace", false, verbsNoCollection, namespaceStrategy, func(r *resource.Resource) {
			r.ShortNames = []string{"ns"}
			r.Status = true
			r.Finalize = true
		}),
		// Exceptions (hotRules): configmaps, secrets, events and leases, the hottest writes, keep their
		// hand-written rules (kube's in their checks and messages), printed by kube's printers.
		builtin("", "v1", "configmaps", "ConfigMap", true, verbsAll, typed(rules[corev1.ConfigMap]{
			validate: validateConfigMap, printer: kube[corev1.ConfigMap](kubeRules{strategy: configmap.Strategy}), untracked: true,
		}), shortName("cm")),
		builtin("", "v1", "secrets", "Secret", true, verbsAll, typed(rules[corev1.Secret]{
			adjust: decodeSecret, validate: validateSecret, printer: kube[corev1.Secret](kubeRules{strategy: secret.Strategy}), untracked: true,
			fields: map[string][]string{"type": {"type"}},
		}), nil),
		builtin("", "v1", "serviceaccounts", "ServiceAccount", true, verbsAll, kube[corev1.ServiceAccount](kubeRules{
			returnsDeleted: true,
			strategy:       serviceaccount.Strategy,
		}), func(r *resource.Resource) {
			r.ShortNames = []string{"sa"}
			// kube's TokenRequest, served by the server's token issuer.
			r.Subresources = []resource.Subresource{{Name: "token", Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: []string{"create"}}}
		}),
		builtin("", "v1", "events", "Event", true, verbsAll, typed(rules[corev1.Event]{
			validate: validateEvent, printer: kube[corev1.Event](kubeRules{strategy: event.Strategy}),
			untracked: true, createOnUpdate: true, fields: eventFields,
		}), describe(shortName("ev"), storedAs(corev1.SchemeGroupVersion))),
		builtin(CoordinationGroup, "v1", "leases", "Lease", true, verbsAll, typed(rules[coordinationv1.Lease]{
			validate: validateLease, printer: kube[coordinationv1.Lease](kubeRules{strategy: lease.Strategy}),
			untracked: true, createOnUpdate: true, conditional: true,
		}), nil),
		builtin(APIExtensionsGroup, "v1", "customresourcedefinitions", "CustomResourceDefinition", false, verbsAll, typed(rules[apiextensionsv1.CustomResourceDefinition]{
			adjust: apiextensionsv1.SetObjectDefaults_CustomResourceDefinition, conditional: true,
		}), func(r *resource.Resource) {
			r.ShortNames = []string{"crd", "crds"}
			apiExtension(r)
			r.Status = true
			hashedAs("v1beta1")(r)
			bindCRDHooks(r)
		}),
	}, slices.Concat(
		appsResources(),
		coreResources(),
		policyResources(),
		networkResources(access),
		batchResources(),
		autoscalingResources(),
		eventsResources(),
		storageResources(),
		schedulingResources(),
		rbacResources(),
		flowControlResources(),
		admissionResources(access),
		nodeResources(),
		certificatesResources(access),
		resourceResources(access),
		storageMigrationResources(),
		clusterResources(access),
		apiRegistrationResources(),
	)...)
}

// hotRules: configmaps, secrets, core events and leases are served with hand-written rules (typed, with
// validate.go's validation) rather than kube's strategies, which the kube adapter runs on the
// internal type, converting the object to it and back around each call (four conversions from
// unstructured content and three back per create, against one). Measured on the same sitting
// (BenchmarkHotCreate and BenchmarkHotUpdate, a write through the registry on SQLite, CPU per
// write with the start-up subtracted), kube's strategies cost, per create and per update:
// configmaps 1082 -> 1320 µs (+22%) and 1506 -> 1653 µs (+10%); secrets 1161 -> 1401 µs (+21%)
// and 430 -> 505 µs (+17%, an update that changes nothing); leases 1131 -> 1311 µs (+16%) and
// 1376 -> 1581 µs (+15%), the lease renewals of every kubelet; core events 1205 -> 1493 µs
// (+24%, three runs alternating with the hand-written rules, against +4% for configmaps, whose
// code was the same in both) and updates 1608 -> 1686 µs (+5%). The machine was shared (load
// 5 to 10 on 2 cores): differences under 10% are noise.
// Measured again once the adapter converted each object once for an update's prepare and
// validation and for a create's canonicalization and validation (issue 43, docs/benchmarks.md):
// configmaps and leases still cost 15-60% more allocations and ~15-30% more CPU with kube's
// strategies.

// builtin describes a built-in type whose singular name is its lower-case kind, and which is
// stored in one version, with the strategy strategy makes, then lets customize add what is
// particular to it.
func builtin(group, version, plural, kind string, namespaced bool, verbs []string, strategy newStrategy, customize func(*resource.Resource)) *resource.Resource {
	r := &resource.Resource{
		Group:          group,
		Version:        version,
		Name:           plural,
		SingularName:   strings.ToLower(kind),
		Kind:           kind,
		ListKind:       kind + "List",
		Namespaced:     namespaced,
		Verbs:          verbs,
		StorageName:    StorageName(plural, group),
		StorageVersion: version,
	}
	r.Strategy = strategy(r)
	if customize != nil {
		customize(r)
	}
	return r
}

func withStatus(r *resource.Resource) { r.Status = true }

// apiExtension lists the type in the api-extensions category, as kube's storage of the types
// that extend the API (CRDs, admission webhooks and policies) does.
func apiExtension(r *resource.Resource) { r.Categories = []string{"api-extensions"} }

// eventFields are the field selector labels of core/v1 events beyond metadata.
var eventFields = map[string][]string{
	"involvedObject.kind":            {"involvedObject", "kind"},
	"involvedObject.namespace":       {"involvedObject", "namespace"},
	"involvedObject.name":            {"involvedObject", "name"},
	"involvedObject.uid":             {"involvedObject", "uid"},
	"involvedObject.apiVersion":      {"involvedObject", "apiVersion"},
	"involvedObject.resourceVersion": {"involvedObject", "resourceVersion"},
	"involvedObject.fieldPath":       {"involvedObject", "fieldPath"},
	"reason":                         {"reason"},
	"reportingComponent":             {"reportingComponent"},
	"source":                         {"source", "component"},
	"type":                           {"type"},
}

// StorageName keys a type in storage: "plural.group", or just "plural" in the core group.
func StorageName(plural, group string) string {
	if group == "" {
		return plural
	}
	return plural + "." + group
}
