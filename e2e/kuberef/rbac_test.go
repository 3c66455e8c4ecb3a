package kuberef

import (
	"fmt"
	"strings"
)

// identities are the users steps are sent as (by client certificate: the common name is the
// user, the organizations its groups), each with the groups it is bound through.
// rbacSetup grants them, on every server alike:
//   - writer may read and write every RBAC kind, and nothing else;
//   - holder may too, and also holds the rules the roles and bindings written grant (it reads
//     configmaps everywhere);
//   - escalator may too, and may escalate and bind every role and cluster role;
//   - crb-patcher may only get, list, update and patch cluster role bindings;
//   - cr-updater may only get, list, update and patch cluster roles;
//   - nobody is granted nothing; watcher may list and watch configmaps in one namespace
//     (watchIdentityScenarios grant it); editor holds edit's rules in one namespace
//     (editRulesScenario grants them);
//   - widget-editor may read and write Widgets in the default namespace but not their status,
//     widget-reader may read and watch them (randomIdentitySetup grants them).
var identities = map[string][]string{
	"writer":      {"rbac-writers"},
	"holder":      {"rbac-writers", "configmap-readers"},
	"escalator":   {"rbac-writers", "rbac-escalators"},
	"crb-patcher": nil,
	"cr-updater":  nil,
	"nobody":      nil,
	"watcher":     nil,
	"editor":      nil,
	"ctb-writer":  nil,
	"ghost":       nil,
	// The randomized requests' identities (randomIdentitySetup).
	"widget-editor": {"widget-editors"},
	"widget-reader": {"widget-readers"},
}

const (
	rbacAPI = "/apis/rbac.authorization.k8s.io/v1"
	rbacNS  = "rbac-test"
)

// clusterRoleAndBinding grants rules to a subject cluster-wide: a ClusterRole and its
// ClusterRoleBinding, both called name.
func clusterRoleAndBinding(name, rules, subject string) []step {
	return []step{
		{method: "POST", path: rbacAPI + "/clusterroles", setup: true,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"` + name + `"},"rules":[` + rules + `]}`},
		{method: "POST", path: rbacAPI + "/clusterrolebindings", setup: true,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"` + name + `"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + name + `"},"subjects":[` + subject + `]}`},
	}
}

func group(name string) string {
	return `{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"` + name + `"}`
}

func user(name string) string {
	return `{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"` + name + `"}`
}

const (
	rbacKinds = `"rbac.authorization.k8s.io"],"resources":["roles","clusterroles","rolebindings","clusterrolebindings"]`
	// grantedRules are what the roles and bindings written grant; holder holds them, writer
	// does not. baseRules are what the objects updated start with.
	grantedRules = `{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list"]}`
	baseRules    = `{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}`
)

// rbacSetup creates the namespace, the identities' permissions and the roles bindings refer to.
var rbacSetup = scenario{"rbac setup", concat(
	[]step{{method: "POST", path: "/api/v1/namespaces", setup: true,
		body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + rbacNS + `"}}`}},
	clusterRoleAndBinding("kuberef-rbac-writer", `{"apiGroups":[`+rbacKinds+`,"verbs":["get","list","create","update","patch","delete"]}`, group("rbac-writers")),
	clusterRoleAndBinding("kuberef-configmap-reader", `{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list","watch"]}`, group("configmap-readers")),
	clusterRoleAndBinding("kuberef-rbac-escalator", `{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles","clusterroles"],"verbs":["escalate","bind"]}`, group("rbac-escalators")),
	clusterRoleAndBinding("kuberef-crb-patcher", `{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterrolebindings"],"verbs":["get","list","update","patch"]}`, user("crb-patcher")),
	clusterRoleAndBinding("kuberef-cr-updater", `{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"verbs":["get","list","update","patch"]}`, user("cr-updater")),
	[]step{
		{method: "POST", path: rbacAPI + "/namespaces/" + rbacNS + "/roles", setup: true,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"granted"},"rules":[` + grantedRules + `]}`},
		// Compared, not setup: its uid is the owner in ownerReferences (cluster-scoped, so
		// that sqlkube's garbage collector keeps namespaced and cluster-scoped dependents).
		{method: "POST", path: rbacAPI + "/clusterroles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"kuberef-granted"},"rules":[` + grantedRules + `]}`},
		{method: "POST", path: "/api/v1/namespaces/" + rbacNS + "/configmaps",
			body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owner"}}`},
	},
)}

func concat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// rbacKind is one way to write RBAC: a kind, and for bindings the role they refer to.
type rbacKind struct {
	kind, resource string
	namespaced     bool
	// roleRef is a binding's role reference; empty for roles.
	roleRef string
}

var rbacWriteKinds = []rbacKind{
	{kind: "Role", resource: "roles", namespaced: true},
	{kind: "ClusterRole", resource: "clusterroles"},
	{kind: "RoleBinding", resource: "rolebindings", namespaced: true, roleRef: `{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"granted"}`},
	{kind: "RoleBinding", resource: "rolebindings", namespaced: true, roleRef: `{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"kuberef-granted"}`},
	{kind: "ClusterRoleBinding", resource: "clusterrolebindings", roleRef: `{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"kuberef-granted"}`},
}

func (k rbacKind) collection() string {
	if k.namespaced {
		return rbacAPI + "/namespaces/" + rbacNS + "/" + k.resource
	}
	return rbacAPI + "/" + k.resource
}

// content is the object's rules (a role) or subjects (a binding): as an update finds it
// (base) or as a write leaves it, granting more.
func (k rbacKind) content(base bool) string {
	switch {
	case k.roleRef == "" && base:
		return `"rules":[` + baseRules + `]`
	case k.roleRef == "":
		return `"rules":[` + grantedRules + `]`
	case base:
		return `"subjects":[` + user("alice") + `]`
	default:
		return `"subjects":[` + user("alice") + `,` + user("bob") + `]`
	}
}

// object is the whole object; metadata is extra metadata fields (with a leading comma).
func (k rbacKind) object(name string, base bool, metadata string) string {
	roleRef := ""
	if k.roleRef != "" {
		roleRef = `"roleRef":` + k.roleRef + `,`
	}
	return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"` + k.kind + `","metadata":{"name":"` + name + `"` + metadata + `},` + roleRef + k.content(base) + `}`
}

// grantPatch is a JSON patch that grants more: the granted rules, or one more subject.
func (k rbacKind) grantPatch() string {
	if k.roleRef == "" {
		return `[{"op":"replace","path":"/rules","value":[` + grantedRules + `]}]`
	}
	return `[{"op":"add","path":"/subjects/-","value":` + user("bob") + `}]`
}

// rbacWrite is one way to write an object: create it, or update one the admin created.
type rbacWrite struct {
	name   string
	update bool
	step   func(k rbacKind, name string) step
}

var rbacWrites = []rbacWrite{
	{"create", false, func(k rbacKind, name string) step {
		return step{method: "POST", path: k.collection(), body: k.object(name, false, "")}
	}},
	{"create dry run", false, func(k rbacKind, name string) step {
		return step{method: "POST", path: k.collection() + "?dryRun=All", body: k.object(name, false, "")}
	}},
	{"apply create", false, func(k rbacKind, name string) step {
		return step{method: "PATCH", path: k.collection() + "/" + name + "?fieldManager=kuberef", body: k.object(name, false, ""), contentType: applyPatch}
	}},
	{"put", true, func(k rbacKind, name string) step {
		return step{method: "PUT", path: k.collection() + "/" + name, body: k.object(name, false, `,"resourceVersion":"{{rv:`+name+`}}"`)}
	}},
	{"put dry run", true, func(k rbacKind, name string) step {
		return step{method: "PUT", path: k.collection() + "/" + name + "?dryRun=All", body: k.object(name, false, `,"resourceVersion":"{{rv:`+name+`}}"`)}
	}},
	{"json patch", true, func(k rbacKind, name string) step {
		return step{method: "PATCH", path: k.collection() + "/" + name, body: k.grantPatch(), contentType: jsonPatch}
	}},
	{"merge patch", true, func(k rbacKind, name string) step {
		return step{method: "PATCH", path: k.collection() + "/" + name, body: "{" + k.content(false) + "}", contentType: mergePatch}
	}},
	{"merge patch dry run", true, func(k rbacKind, name string) step {
		return step{method: "PATCH", path: k.collection() + "/" + name + "?dryRun=All", body: "{" + k.content(false) + "}", contentType: mergePatch}
	}},
	{"strategic patch", true, func(k rbacKind, name string) step {
		return step{method: "PATCH", path: k.collection() + "/" + name, body: "{" + k.content(false) + "}", contentType: strategicPatch}
	}},
	{"apply", true, func(k rbacKind, name string) step {
		return step{method: "PATCH", path: k.collection() + "/" + name + "?fieldManager=kuberef&force=true", body: k.object(name, false, ""), contentType: applyPatch}
	}},
	// Changes only to the fields the garbage collector needs are allowed without the rules.
	{"gc fields", true, func(k rbacKind, name string) step {
		return step{method: "PATCH", path: k.collection() + "/" + name, contentType: mergePatch,
			body: `{"metadata":{"finalizers":["example.com/keep"],"ownerReferences":[{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","name":"kuberef-granted","uid":"{{uid:kuberef-granted}}"}]}}`}
	}},
	// Any other change is checked as if it granted the object's rules, changed or not.
	{"label", true, func(k rbacKind, name string) step {
		return step{method: "PATCH", path: k.collection() + "/" + name, body: `{"metadata":{"labels":{"team":"a"}}}`, contentType: mergePatch}
	}},
}

// rbacWriteScenarios write every RBAC kind every way as each user, then read what is stored.
func rbacWriteScenarios() []scenario {
	var out []scenario
	for _, k := range rbacWriteKinds {
		for _, w := range rbacWrites {
			for _, u := range []string{"writer", "holder", "escalator"} {
				name := strings.ToLower(fmt.Sprintf("%s-%s-%s", k.kind, strings.ReplaceAll(w.name, " ", "-"), u))
				if k.roleRef != "" {
					name += "-to-" + strings.ToLower(strings.SplitN(strings.SplitN(k.roleRef, `"kind":"`, 2)[1], `"`, 2)[0])
				}
				var steps []step
				if w.update {
					steps = append(steps, step{method: "POST", path: k.collection(), body: k.object(name, true, "")})
				}
				write := w.step(k, name)
				write.as = u
				steps = append(steps, write, step{method: "GET", path: k.collection() + "/" + name})
				out = append(out, scenario{"rbac " + name, steps})
			}
		}
	}
	return out
}

// rbacBootstrapScenarios are the escalations of issue 30: an ordinary user who may update a
// binding or a role but holds none of cluster-admin's rules.
func rbacBootstrapScenarios() []scenario {
	clusterAdminBinding := rbacAPI + "/clusterrolebindings/cluster-admin"
	clusterAdmin := rbacAPI + "/clusterroles/cluster-admin"
	read := func(path string) step { return step{method: "GET", path: path} }
	return []scenario{
		{"rbac subject added to cluster-admin's binding", []step{
			{method: "GET", path: clusterAdminBinding, as: "crb-patcher"},
			{method: "PATCH", path: clusterAdminBinding, contentType: jsonPatch, as: "crb-patcher",
				body: `[{"op":"add","path":"/subjects/-","value":` + user("crb-patcher") + `}]`},
			{method: "PATCH", path: clusterAdminBinding, contentType: mergePatch, as: "crb-patcher",
				body: `{"subjects":[` + group("system:masters") + `,` + user("crb-patcher") + `]}`},
			{method: "PATCH", path: clusterAdminBinding, contentType: strategicPatch, as: "crb-patcher",
				body: `{"subjects":[` + group("system:masters") + `,` + user("crb-patcher") + `]}`},
			{method: "PUT", path: clusterAdminBinding, as: "crb-patcher",
				body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"cluster-admin","resourceVersion":"{{rv:cluster-admin}}"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[` + group("system:masters") + `,` + user("crb-patcher") + `]}`},
			read(clusterAdminBinding),
			{method: "GET", path: "/api/v1/namespaces/kube-system/secrets", as: "crb-patcher"},
		}},
		// A denial's reason names the mode that gave it, as kube-apiserver names it ("rbac: RBAC:
		// clusterrole ... not found"). The second binding (to a role whose rules kube-controller-manager
		// does not have to aggregate), once it lets ghost read ConfigMaps (a 404 for one that does not
		// exist),
		// shows the authorizer has seen the first.
		{"rbac binding to a missing ClusterRole", []step{
			{method: "POST", path: rbacAPI + "/namespaces/" + rbacNS + "/rolebindings", body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding",
"metadata":{"name":"ghost-missing"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"never-created"},"subjects":[` + user("ghost") + `]}`},
			{method: "POST", path: rbacAPI + "/namespaces/" + rbacNS + "/rolebindings", body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding",
"metadata":{"name":"ghost-view"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:aggregate-to-view"},"subjects":[` + user("ghost") + `]}`},
			{method: "GET", path: "/api/v1/namespaces/" + rbacNS + "/configmaps/never-created", as: "ghost", waitFor: 404},
			{method: "GET", path: "/api/v1/namespaces/" + rbacNS + "/secrets", as: "ghost"},
		}},
		{"rbac aggregate-to-view label on cluster-admin", []step{
			{method: "PATCH", path: clusterAdmin, contentType: mergePatch, as: "cr-updater",
				body: `{"metadata":{"labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}}}`},
			{method: "PATCH", path: clusterAdmin, contentType: jsonPatch, as: "cr-updater",
				body: `[{"op":"add","path":"/metadata/labels/rbac.authorization.k8s.io~1aggregate-to-view","value":"true"}]`},
			{method: "PATCH", path: clusterAdmin, contentType: mergePatch, as: "cr-updater",
				body: `{"metadata":{"finalizers":["example.com/keep"]}}`},
			read(clusterAdmin),
			{method: "PATCH", path: clusterAdmin, contentType: mergePatch, as: "cr-updater",
				body: `{"metadata":{"finalizers":null}}`},
		}},
	}
}

// accessReview is a SelfSubjectAccessReview (kind Self) or SubjectAccessReview of verb on
// configmaps in the test namespace; user and groups are the subject's, for the latter.
func accessReview(kind, verb, subject string) string {
	return `{"apiVersion":"authorization.k8s.io/v1","kind":"` + kind + `SubjectAccessReview","spec":{` + subject +
		`"resourceAttributes":{"namespace":"` + rbacNS + `","verb":"` + verb + `","resource":"configmaps"}}}`
}

// reviewScenarios ask each server what a user may do, and send plain forbidden requests.
func reviewScenarios() []scenario {
	const (
		ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
		sar  = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
	)
	configmaps := "/api/v1/namespaces/" + rbacNS + "/configmaps"
	return []scenario{
		{"reviews of one's own access", []step{
			{method: "POST", path: ssar, body: accessReview("Self", "list", ""), as: "holder"},
			{method: "POST", path: ssar, body: accessReview("Self", "list", ""), as: "writer"},
			{method: "POST", path: ssar, body: accessReview("Self", "delete", ""), as: "holder"},
		}},
		{"reviews of another's access", []step{
			{method: "POST", path: sar, body: accessReview("", "list", `"user":"holder","groups":["configmap-readers"],`)},
			{method: "POST", path: sar, body: accessReview("", "list", `"user":"writer","groups":["rbac-writers"],`)},
			{method: "POST", path: sar, body: accessReview("", "list", `"user":"holder","groups":["configmap-readers"],`), as: "writer"},
		}},
		{"forbidden requests", []step{
			{method: "GET", path: configmaps, as: "writer"},
			{method: "GET", path: configmaps + "/owner", as: "writer"},
			{method: "POST", path: configmaps, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"nope"}}`, as: "holder"},
			{method: "DELETE", path: configmaps + "/owner", as: "holder"},
			{method: "GET", path: "/api/v1/namespaces", as: "holder"},
			{method: "GET", path: "/api/v1/nodes", as: "writer"},
		}},
		{"impersonation without the verb", []step{
			{method: "GET", path: configmaps, as: "writer", headers: map[string]string{"Impersonate-User": "holder"}},
			{method: "GET", path: configmaps, as: "writer", headers: map[string]string{"Impersonate-User": "holder", "Impersonate-Group": "configmap-readers"}},
			{method: "GET", path: configmaps, as: "holder", headers: map[string]string{"Impersonate-Group": "system:masters"}},
			{method: "GET", path: configmaps + "/owner", headers: map[string]string{"Impersonate-User": "holder", "Impersonate-Group": "configmap-readers"}},
		}},
	}
}

// fullScenarios are the scenarios compared with the full kube-apiserver, with the known
// differences marked.
func fullScenarios() []scenario {
	all := concat([]scenario{bootstrapPolicyScenario(), rbacSetup, editRulesScenario()}, rbacWriteScenarios(), rbacBootstrapScenarios(), reviewScenarios(), builtinPatchScenarios(), deploymentScenarios(), builtinScenarios(), identityScenarios(), admissionChainScenarios())
	return markKnown(all, knownFullDifferences)
}

// builtinPatchScenarios are patches of built-in objects whose answers come from kube's patch libraries:
// a strategic merge patch the library refuses in words kube's handler does not classify is
// answered as kube-apiserver answers it (a 500 with the library's message, found by FuzzPatch).
func builtinPatchScenarios() []scenario {
	cm := "/api/v1/namespaces/" + rbacNS + "/configmaps/patched"
	return []scenario{{name: "strategic merge patch errors", steps: []step{
		{method: "POST", path: "/api/v1/namespaces/" + rbacNS + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"patched"},"data":{"a":"1"}}`},
		{method: "PATCH", path: cm, body: `{"data":{"$setElementOrder/":[]}}`, contentType: strategicPatch},
		{method: "PATCH", path: cm, body: `{"data":{"b":"2"},"$setElementOrder/data":["b"]}`, contentType: strategicPatch},
		{method: "GET", path: cm},
	}}}
}
