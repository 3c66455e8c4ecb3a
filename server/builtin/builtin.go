// Package builtin defines the built-in types sqlkube serves: their names and, in one strategy
// per type (resource.TypedStrategy), their Go types, decoding, validation, update rules and
// table columns, as resource descriptions the registry applies.
package builtin

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

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
// strategy (kube-apiserver's own for the workload, network, storage and other kube types, see
// kube). customresourcedefinitions gets
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
		builtin("", "v1", "configmaps", "ConfigMap", true, verbsAll, typed(rules[corev1.ConfigMap]{
			validate: validateConfigMap, table: configMapTable, untracked: true,
		}), func(r *resource.Resource) { r.ShortNames = []string{"cm"} }),
		builtin("", "v1", "secrets", "Secret", true, verbsAll, typed(rules[corev1.Secret]{
			adjust: decodeSecret, validate: validateSecret, table: secretTable, untracked: true,
			fields: map[string][]string{"type": {"type"}},
		}), nil),
		builtin("", "v1", "serviceaccounts", "ServiceAccount", true, verbsAll, typed(rules[corev1.ServiceAccount]{
			validate: validateServiceAccount, table: serviceAccountTable, untracked: true,
		}), func(r *resource.Resource) {
			r.ShortNames = []string{"sa"}
			// kube's TokenRequest, served by the server's token issuer.
			r.Subresources = []resource.Subresource{{Name: "token", Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: []string{"create"}}}
		}),
		builtin("", "v1", "events", "Event", true, verbsAll, typed(rules[corev1.Event]{
			validate: validateEvent, table: eventTable, untracked: true, createOnUpdate: true, fields: eventFields,
		}), describe(shortName("ev"), storedAs(corev1.SchemeGroupVersion))),
		builtin(CoordinationGroup, "v1", "leases", "Lease", true, verbsAll, typed(rules[coordinationv1.Lease]{
			validate: validateLease, table: leaseTable, untracked: true, createOnUpdate: true, conditional: true,
		}), nil),
		builtin(FlowControlGroup, "v1", "flowschemas", "FlowSchema", false, verbsAll, typed(rules[flowcontrolv1.FlowSchema]{
			validate: validateFlowSchema, table: flowSchemaTable,
		}), withStatus),
		builtin(FlowControlGroup, "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", false, verbsAll, typed(rules[flowcontrolv1.PriorityLevelConfiguration]{
			validate: validatePriorityLevel, table: priorityLevelTable,
		}), withStatus),
		builtin(RBACGroup, "v1", "roles", "Role", true, verbsAll, typed(rules[rbacv1.Role]{
			validate: validateRole, table: roleTable, untracked: true, createOnUpdate: true,
		}), nil),
		builtin(RBACGroup, "v1", "clusterroles", "ClusterRole", false, verbsAll, typed(rules[rbacv1.ClusterRole]{
			validate: validateClusterRole, table: roleTable, untracked: true, createOnUpdate: true,
		}), nil),
		builtin(RBACGroup, "v1", "rolebindings", "RoleBinding", true, verbsAll, typed(rules[rbacv1.RoleBinding]{
			adjust: defaultRoleBinding, validate: validateRoleBinding, table: bindingTable, untracked: true, createOnUpdate: true,
		}), nil),
		builtin(RBACGroup, "v1", "clusterrolebindings", "ClusterRoleBinding", false, verbsAll, typed(rules[rbacv1.ClusterRoleBinding]{
			adjust: defaultClusterRoleBinding, validate: validateClusterRoleBinding, table: bindingTable, untracked: true, createOnUpdate: true,
		}), nil),
		builtin(AdmissionGroup, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, verbsAll, typed(rules[admissionregistrationv1.ValidatingWebhookConfiguration]{
			adjust: defaultValidatingWebhookConfiguration, validate: validateValidatingWebhookConfiguration, table: validatingWebhookTable,
		}), apiExtension),
		builtin(AdmissionGroup, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, verbsAll, typed(rules[admissionregistrationv1.MutatingWebhookConfiguration]{
			adjust: defaultMutatingWebhookConfiguration, validate: validateMutatingWebhookConfiguration, table: mutatingWebhookTable,
		}), apiExtension),
		builtin(AdmissionGroup, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, verbsAll, typed(rules[admissionregistrationv1.ValidatingAdmissionPolicy]{
			adjust: defaultValidatingAdmissionPolicy, validate: validateValidatingAdmissionPolicy, table: validatingPolicyTable,
		}), func(r *resource.Resource) { withStatus(r); apiExtension(r) }),
		builtin(AdmissionGroup, "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, verbsAll, typed(rules[admissionregistrationv1.ValidatingAdmissionPolicyBinding]{
			adjust: defaultValidatingAdmissionPolicyBinding, validate: validateValidatingAdmissionPolicyBinding, table: validatingPolicyBindingTable,
		}), apiExtension),
		builtin(AdmissionGroup, "v1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", false, verbsAll, typed(rules[admissionregistrationv1.MutatingAdmissionPolicy]{
			adjust: defaultMutatingAdmissionPolicy, validate: validateMutatingAdmissionPolicy, table: mutatingPolicyTable,
		}), apiExtension),
		builtin(AdmissionGroup, "v1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", false, verbsAll, typed(rules[admissionregistrationv1.MutatingAdmissionPolicyBinding]{
			adjust: defaultMutatingAdmissionPolicyBinding, validate: validateMutatingAdmissionPolicyBinding, table: mutatingPolicyBindingTable,
		}), apiExtension),
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
		nodeResources(),
		certificatesResources(access),
		resourceResources(access),
		storageMigrationResources(),
		clusterResources(access),
		apiRegistrationResources(),
	)...)
}

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
	r.ReturnsDeletedObject = returnsDeletedObject[r.StorageName]
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

// returnsDeletedObject are the types whose immediate delete kube-apiserver answers with the
// deleted object rather than a Success Status (their storage's ReturnDeletedObject).
var returnsDeletedObject = map[string]bool{
	"pods": true, "podtemplates": true, "services": true, "serviceaccounts": true, "namespaces": true,
	"persistentvolumes": true, "persistentvolumeclaims": true, "resourcequotas": true,
	"storageclasses.storage.k8s.io": true, "volumeattachments.storage.k8s.io": true, "csidrivers.storage.k8s.io": true,
	"csinodes.storage.k8s.io": true, "volumeattributesclasses.storage.k8s.io": true,
	"deviceclasses.resource.k8s.io": true, "resourceclaims.resource.k8s.io": true,
	"resourceclaimtemplates.resource.k8s.io": true, "resourceslices.resource.k8s.io": true,
}

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
