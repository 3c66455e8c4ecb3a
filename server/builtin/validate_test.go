package builtin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sqlkube/sqlkube/server/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// configKeyMsg is IsConfigMapKey's message for a key with characters it does not allow.
const configKeyMsg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"

func TestBuiltinValidation(t *testing.T) {
	data := field.NewPath("data")
	binaryData := field.NewPath("binaryData")
	big := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name, resource string
		obj, old       string // YAML bodies; old empty for a create
		status         bool   // an update through /status
		want           field.ErrorList
	}{
		// configmaps
		{name: "configmap: valid keys", resource: "configmaps",
			obj: `{metadata: {name: c}, data: {a.b_C-1: x}, binaryData: {bin: eA==}}`},
		{name: "configmap: bad keys in data and binaryData", resource: "configmaps",
			obj: `{metadata: {name: c}, data: {"bad key!": x}, binaryData: {"..": eA==}}`,
			want: field.ErrorList{
				field.Invalid(data.Key("bad key!"), "bad key!", configKeyMsg),
				field.Invalid(binaryData.Key(".."), "..", "must not be '..'"),
			}},
		{name: "configmap: a key in both maps", resource: "configmaps",
			obj: `{metadata: {name: c}, data: {k: x}, binaryData: {k: eA==}}`,
			want: field.ErrorList{
				field.Invalid(data.Key("k"), "k", "duplicate of key present in binaryData"),
			}},
		{name: "configmap: metadata checked first, on create and update", resource: "configmaps",
			old: `{metadata: {name: c, generation: 2}}`,
			obj: `{metadata: {name: c, generation: 1, labels: {"a b": x}}, data: {"k!": x}}`,
			want: field.ErrorList{
				field.Invalid(field.NewPath("metadata", "labels"), "a b", "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
				field.Invalid(field.NewPath("metadata", "generation"), int64(1), "must not be decremented"),
				field.Invalid(field.NewPath("metadata", "labels"), "a b", "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
				field.Invalid(data.Key("k!"), "k!", configKeyMsg),
			}},
		{name: "configmap: over 1 MiB in all", resource: "configmaps",
			obj:  `{metadata: {name: c}, data: {a: ` + big + `}, binaryData: {b: eA==}}`,
			want: field.ErrorList{field.TooLong(field.NewPath(""), "", 1<<20)}},
		{name: "configmap: exactly 1 MiB", resource: "configmaps",
			obj: `{metadata: {name: c}, data: {a: ` + big + `}}`},
		{name: "configmap: immutable data changed and immutable unset", resource: "configmaps",
			old: `{metadata: {name: c}, immutable: true, data: {a: x}}`,
			obj: `{metadata: {name: c}, data: {a: yy}, binaryData: {b: eA==}}`,
			want: field.ErrorList{
				field.Forbidden(field.NewPath("immutable"), immutableWhenSetMsg),
				field.Forbidden(data, immutableWhenSetMsg),
				field.Forbidden(binaryData, immutableWhenSetMsg),
			}},
		{name: "configmap: immutable, only metadata changed", resource: "configmaps",
			old: `{metadata: {name: c}, immutable: true, data: {a: x}}`,
			obj: `{metadata: {name: c, labels: {l: v}}, immutable: true, data: {a: x}}`},
		{name: "configmap: mutable may become immutable", resource: "configmaps",
			old: `{metadata: {name: c}, data: {a: x}}`,
			obj: `{metadata: {name: c}, immutable: true, data: {a: yy}}`},
		{name: "configmap: unprefixed finalizer not standard", resource: "configmaps",
			obj: `{metadata: {name: c, finalizers: [orphan, example.com/f, custom]}}`,
			want: field.ErrorList{field.Invalid(field.NewPath("metadata", "finalizers").Index(2), "custom",
				"name is neither a standard finalizer name nor is it fully qualified")}},

		// secrets
		{name: "secret: bad key and over 1 MiB", resource: "secrets",
			obj: `{metadata: {name: s}, stringData: {"a b": ` + big + `, c: x}}`,
			want: field.ErrorList{
				field.Invalid(data.Key("a b"), "a b", configKeyMsg),
				field.TooLong(data, "", 1<<20),
			}},
		{name: "secret: service account token without the annotation", resource: "secrets",
			obj:  `{metadata: {name: s}, type: kubernetes.io/service-account-token}`,
			want: field.ErrorList{field.Required(field.NewPath("metadata", "annotations").Key("kubernetes.io/service-account.name"), "")}},
		{name: "secret: service account token with the annotation", resource: "secrets",
			obj: `{metadata: {name: s, annotations: {kubernetes.io/service-account.name: sa}}, type: kubernetes.io/service-account-token}`},
		{name: "secret: dockercfg missing", resource: "secrets",
			obj:  `{metadata: {name: s}, type: kubernetes.io/dockercfg}`,
			want: field.ErrorList{field.Required(data.Key(".dockercfg"), "")}},
		{name: "secret: dockerconfigjson not JSON", resource: "secrets",
			obj:  `{metadata: {name: s}, type: kubernetes.io/dockerconfigjson, stringData: {.dockerconfigjson: "{nope"}}`,
			want: field.ErrorList{field.Invalid(data.Key(".dockerconfigjson"), "<secret contents redacted>", "invalid character 'n' looking for beginning of object key string")}},
		{name: "secret: dockerconfigjson valid", resource: "secrets",
			obj: `{metadata: {name: s}, type: kubernetes.io/dockerconfigjson, stringData: {.dockerconfigjson: "{}"}}`},
		{name: "secret: basic-auth with neither key", resource: "secrets",
			obj:  `{metadata: {name: s}, type: kubernetes.io/basic-auth}`,
			want: field.ErrorList{field.Required(data.Key("username"), ""), field.Required(data.Key("password"), "")}},
		{name: "secret: basic-auth with an empty password only", resource: "secrets",
			obj: `{metadata: {name: s}, type: kubernetes.io/basic-auth, stringData: {password: ""}}`},
		{name: "secret: ssh-auth with an empty key", resource: "secrets",
			obj:  `{metadata: {name: s}, type: kubernetes.io/ssh-auth, stringData: {ssh-privatekey: ""}}`,
			want: field.ErrorList{field.Required(data.Key("ssh-privatekey"), "")}},
		{name: "secret: tls without its keys", resource: "secrets",
			obj:  `{metadata: {name: s}, type: kubernetes.io/tls}`,
			want: field.ErrorList{field.Required(data.Key("tls.crt"), ""), field.Required(data.Key("tls.key"), "")}},
		{name: "secret: type changed, immutable data changed", resource: "secrets",
			old: `{metadata: {name: s}, immutable: true, type: Opaque, data: {a: eA==}}`,
			obj: `{metadata: {name: s}, immutable: true, type: example.com/other}`,
			want: field.ErrorList{
				field.Invalid(field.NewPath("type"), "example.com/other", "field is immutable"),
				field.Forbidden(data, immutableWhenSetMsg),
			}},

		// namespaces
		{name: "namespace: bad spec finalizers on create", resource: "namespaces",
			obj: `{metadata: {name: nn}, spec: {finalizers: [kubernetes, custom]}}`,
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "finalizers"), "custom",
				"name is neither a standard finalizer name nor is it fully qualified")}},
		{name: "namespace: finalize writes a bad name", resource: "namespaces",
			old: `{metadata: {name: nn}, spec: {finalizers: [kubernetes]}, status: {phase: Active}}`,
			obj: `{metadata: {name: nn}, spec: {finalizers: [kubernetes, "a/b/c"]}, status: {phase: Active}}`,
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "finalizers"), "a/b/c",
				"a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")}},
		{name: "namespace: status Terminating without deletionTimestamp", resource: "namespaces", status: true,
			old:  `{metadata: {name: nn}, status: {phase: Active}}`,
			obj:  `{metadata: {name: nn}, status: {phase: Terminating}}`,
			want: field.ErrorList{field.Invalid(field.NewPath("status", "Phase"), "Terminating", "may only be 'Active' if `deletionTimestamp` is empty")}},

		// serviceaccounts
		{name: "serviceaccount: metadata only", resource: "serviceaccounts",
			obj: `{metadata: {name: sa}, secrets: [{name: x}], automountServiceAccountToken: false}`},

		// events
		{name: "event: involved object in another namespace", resource: "events",
			obj:  `{metadata: {name: e, namespace: ns1}, involvedObject: {kind: Pod, name: p, namespace: ns2}}`,
			want: field.ErrorList{field.Invalid(field.NewPath("involvedObject", "namespace"), "ns2", "does not match event.namespace")}},
		{name: "event: cluster-scoped object, event in default", resource: "events",
			obj: `{metadata: {name: e, namespace: default}, involvedObject: {kind: Node, name: nn}}`},
		{name: "event: cluster-scoped object, event elsewhere", resource: "events",
			obj:  `{metadata: {name: e, namespace: ns1}, involvedObject: {kind: Node, name: nn}}`,
			want: field.ErrorList{field.Invalid(field.NewPath("involvedObject", "namespace"), "", "does not match event.namespace")}},
		{name: "event: with eventTime, reporting fields missing", resource: "events",
			obj: `{metadata: {name: e, namespace: ns1}, involvedObject: {kind: Pod, name: p, namespace: ns1}, eventTime: "2026-01-01T00:00:00.000000Z", reason: ` + strings.Repeat("r", 129) + `}`,
			want: field.ErrorList{
				field.Required(field.NewPath("reportingComponent"), ""),
				field.Invalid(field.NewPath("reportingComponent"), "", "name part must be non-empty"),
				field.Invalid(field.NewPath("reportingComponent"), "", "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
				field.Required(field.NewPath("reportingInstance"), ""),
				field.Required(field.NewPath("action"), ""),
				field.Invalid(field.NewPath("reason"), "", "can have at most 128 characters"),
			}},

		// leases
		{name: "lease: bad duration, transitions, preferred holder, strategy", resource: "leases." + CoordinationGroup,
			obj: `{metadata: {name: l}, spec: {leaseDurationSeconds: 0, leaseTransitions: -1, preferredHolder: p, strategy: Newest}}`,
			want: field.ErrorList{
				field.Invalid(field.NewPath("spec", "leaseDurationSeconds"), int32(0), "must be greater than 0"),
				field.Invalid(field.NewPath("spec", "leaseTransitions"), int32(-1), "must be greater than or equal to 0"),
				field.NotSupported(field.NewPath("spec", "strategy"), "Newest", []string{"OldestEmulationVersion"}),
				field.Forbidden(field.NewPath("spec", "preferredHolder"), "may only be specified if `holderIdentity` is set"),
			}},
		// RBAC
		{name: "role: rule without verbs, resources or groups; URLs in a Role", resource: "roles." + RBACGroup,
			obj: `{metadata: {name: "system:r", namespace: ns1}, rules: [{apiGroups: [""]}, {verbs: [get], nonResourceURLs: [/healthz]}]}`,
			want: field.ErrorList{
				field.Required(field.NewPath("rules").Index(0).Child("resources"), "resource rules must supply at least one resource"),
				field.Invalid(field.NewPath("rules").Index(1).Child("nonResourceURLs"), []string{"/healthz"}, "namespaced rules cannot apply to non-resource URLs"),
				field.Required(field.NewPath("rules").Index(0).Child("verbs"), ""),
			}},
		{name: "clusterrole: URLs mixed with resources", resource: "clusterroles." + RBACGroup,
			obj:  `{metadata: {name: c}, rules: [{verbs: [get], apiGroups: [""], resources: [configmaps], nonResourceURLs: [/x]}]}`,
			want: field.ErrorList{field.Invalid(field.NewPath("rules").Index(0).Child("nonResourceURLs"), []string{"/x"}, "rules cannot apply to both regular resources and non-resource URLs")}},
		{name: "clusterrolebinding: Role ref, subject kinds, SA without namespace", resource: "clusterrolebindings." + RBACGroup,
			obj: `{metadata: {name: b}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}, subjects: [{kind: ServiceAccount, name: sa}, {kind: Robot, name: x}]}`,
			want: field.ErrorList{
				field.NotSupported(field.NewPath("roleRef", "kind"), "Role", []string{"ClusterRole"}),
				field.Required(field.NewPath("subjects").Index(0).Child("namespace"), ""),
				field.NotSupported(field.NewPath("subjects").Index(1).Child("kind"), "Robot", []string{"ServiceAccount", "User", "Group"}),
			}},
		{name: "rolebinding: roleRef changed", resource: "rolebindings." + RBACGroup,
			old:  `{metadata: {name: b, namespace: ns1}, roleRef: {kind: ClusterRole, name: view}, subjects: [{kind: User, name: u}]}`,
			obj:  `{metadata: {name: b, namespace: ns1}, roleRef: {kind: ClusterRole, name: edit}, subjects: [{kind: User, name: u}]}`,
			want: field.ErrorList{field.Invalid(field.NewPath("roleRef"), struct{ APIGroup, Kind, Name string }{RBACGroup, "ClusterRole", "edit"}, "field is immutable")}},
		{name: "lease: valid", resource: "leases." + CoordinationGroup,
			obj: `{metadata: {name: l}, spec: {holderIdentity: h, preferredHolder: p, leaseDurationSeconds: 15, leaseTransitions: 0, strategy: example.com/mine}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := builtinResource(t, tc.resource)
			obj := decodedForValidation(t, res, tc.obj)
			var got field.ErrorList
			if tc.old == "" {
				got = res.Strategy.Validate(t.Context(), obj)
			} else if tc.status {
				got = res.Strategy.StatusStrategy().ValidateUpdate(t.Context(), obj, decodedForValidation(t, res, tc.old))
			} else {
				got = res.Strategy.ValidateUpdate(t.Context(), obj, decodedForValidation(t, res, tc.old))
			}
			if g, w := errorsText(got), errorsText(tc.want); g != w {
				t.Errorf("errors\n got %s\nwant %s", g, w)
			}
		})
	}
}

// errorsText lists each error's type, field and detail, one a line, to compare lists exactly.
func errorsText(errs field.ErrorList) string {
	var lines []string
	for _, e := range errs {
		lines = append(lines, fmt.Sprintf("%s %q: %s", e.Type, e.Field, e.ErrorBody()))
	}
	return "\n" + strings.Join(lines, "\n")
}

func decodedForValidation(t *testing.T, res *resource.Resource, body string) *unstructured.Unstructured {
	t.Helper()
	content, _, err := decodeBuiltinYAML(t, res.StorageName, body)
	if err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	obj := &unstructured.Unstructured{Object: content}
	// What the server sets before validating, so that the metadata is valid.
	if res.Namespaced && obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	obj.SetResourceVersion("1")
	return obj
}

// builtinResource is the built-in resource stored under storageName.
func builtinResource(t testing.TB, storageName string) *resource.Resource {
	t.Helper()
	for _, r := range Resources(func(*resource.Resource) {}, nil) {
		if r.StorageName == storageName {
			return r
		}
	}
	t.Fatalf("no built-in %s", storageName)
	return nil
}
