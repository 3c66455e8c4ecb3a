// Package builtin defines the built-in types sqlkube serves: their names, Go types, decoding,
// validation and table columns, as resource descriptions the registry applies.
package builtin

import (
	"reflect"
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

// goTypes are the built-ins' Go types, by storage name: strategic merge patches take their merge
// keys from them, and OpenAPI their schemas.
var goTypes = map[string]reflect.Type{
	"configmaps":                      reflect.TypeFor[corev1.ConfigMap](),
	"secrets":                         reflect.TypeFor[corev1.Secret](),
	"namespaces":                      reflect.TypeFor[corev1.Namespace](),
	"serviceaccounts":                 reflect.TypeFor[corev1.ServiceAccount](),
	"events":                          reflect.TypeFor[corev1.Event](),
	"leases." + CoordinationGroup:     reflect.TypeFor[coordinationv1.Lease](),
	"flowschemas." + FlowControlGroup: reflect.TypeFor[flowcontrolv1.FlowSchema](),
	"prioritylevelconfigurations." + FlowControlGroup: reflect.TypeFor[flowcontrolv1.PriorityLevelConfiguration](),
	CRDStorageName:                     reflect.TypeFor[apiextensionsv1.CustomResourceDefinition](),
	"roles." + RBACGroup:               reflect.TypeFor[rbacv1.Role](),
	"clusterroles." + RBACGroup:        reflect.TypeFor[rbacv1.ClusterRole](),
	"rolebindings." + RBACGroup:        reflect.TypeFor[rbacv1.RoleBinding](),
	"clusterrolebindings." + RBACGroup: reflect.TypeFor[rbacv1.ClusterRoleBinding](),
	validatingPolicies:                 reflect.TypeFor[admissionregistrationv1.ValidatingAdmissionPolicy](),
	validatingPolicyBindings:           reflect.TypeFor[admissionregistrationv1.ValidatingAdmissionPolicyBinding](),
	mutatingPolicies:                   reflect.TypeFor[admissionregistrationv1.MutatingAdmissionPolicy](),
	mutatingPolicyBindings:             reflect.TypeFor[admissionregistrationv1.MutatingAdmissionPolicyBinding](),
	validatingWebhookConfigs:           reflect.TypeFor[admissionregistrationv1.ValidatingWebhookConfiguration](),
	mutatingWebhookConfigs:             reflect.TypeFor[admissionregistrationv1.MutatingWebhookConfiguration](),
}

// The verbs kube-apiserver's discovery lists for the built-ins, sorted as it lists them.
var (
	verbsAll          = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	verbsNoCollection = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
)

// Resources lists the built-in types, stored as opaque JSON beyond metadata, except
// customresourcedefinitions, whose hooks bindCRDHooks sets (the catalog's, which validate and
// establish CRDs against the names already served).
func Resources(bindCRDHooks func(*resource.Resource)) []*resource.Resource {
	return []*resource.Resource{
		builtin("", "v1", "namespaces", "Namespace", false, verbsNoCollection, func(r *resource.Resource) {
			r.ShortNames = []string{"ns"}
			r.Status = true
			r.Finalize = true
		}),
		builtin("", "v1", "configmaps", "ConfigMap", true, verbsAll, func(r *resource.Resource) {
			r.ShortNames = []string{"cm"}
		}),
		builtin("", "v1", "secrets", "Secret", true, verbsAll, nil),
		builtin("", "v1", "serviceaccounts", "ServiceAccount", true, verbsAll, func(r *resource.Resource) {
			r.ShortNames = []string{"sa"}
			r.TokenRequest = true
		}),
		builtin("", "v1", "events", "Event", true, verbsAll, func(r *resource.Resource) {
			r.ShortNames = []string{"ev"}
		}),
		builtin(CoordinationGroup, "v1", "leases", "Lease", true, verbsAll, nil),
		builtin(FlowControlGroup, "v1", "flowschemas", "FlowSchema", false, verbsAll, withStatus),
		builtin(FlowControlGroup, "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", false, verbsAll, withStatus),
		builtin(RBACGroup, "v1", "roles", "Role", true, verbsAll, nil),
		builtin(RBACGroup, "v1", "clusterroles", "ClusterRole", false, verbsAll, nil),
		builtin(RBACGroup, "v1", "rolebindings", "RoleBinding", true, verbsAll, nil),
		builtin(RBACGroup, "v1", "clusterrolebindings", "ClusterRoleBinding", false, verbsAll, nil),
		builtin(AdmissionGroup, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, verbsAll, nil),
		builtin(AdmissionGroup, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, verbsAll, nil),
		builtin(AdmissionGroup, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, verbsAll, withStatus),
		builtin(AdmissionGroup, "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, verbsAll, nil),
		builtin(AdmissionGroup, "v1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", false, verbsAll, nil),
		builtin(AdmissionGroup, "v1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", false, verbsAll, nil),
		builtin(APIExtensionsGroup, "v1", "customresourcedefinitions", "CustomResourceDefinition", false, verbsAll, func(r *resource.Resource) {
			r.ShortNames = []string{"crd", "crds"}
			r.Categories = []string{"api-extensions"}
			r.Status = true
			r.StorageVersionHashVersion = "v1beta1"
			bindCRDHooks(r)
		}),
	}
}

// builtin describes a built-in type whose singular name is its lower-case kind, and which is
// stored in one version, then lets customize add what is particular to it.
func builtin(group, version, plural, kind string, namespaced bool, verbs []string, customize func(*resource.Resource)) *resource.Resource {
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
	r.Decode = decoders[r.StorageName]
	r.ValidateBuiltin = validators[r.StorageName]
	r.GoType = goTypes[r.StorageName]
	if table, ok := tables[r.StorageName]; ok {
		r.Table = table
	}
	if customize != nil {
		customize(r)
	}
	return r
}

func withStatus(r *resource.Resource) { r.Status = true }

// StorageName keys a type in storage: "plural.group", or just "plural" in the core group.
func StorageName(plural, group string) string {
	if group == "" {
		return plural
	}
	return plural + "." + group
}
