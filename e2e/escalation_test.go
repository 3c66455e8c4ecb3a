package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The escalation table: every RBAC kind, written every way (create, update, JSON, merge and
// strategic merge patch, server-side apply; each also as a dry run), by writers who may write
// RBAC objects and hold the rules granted, may escalate or bind, hold neither, or change only
// the fields the garbage collector writes. kube-apiserver refuses exactly the writes of the
// writer holding neither, with a 403 naming what it lacks, and stores nothing.

const escalationNamespace = "esc"

// grantedRules are what every role of the table grants: reading secrets, which only the writer
// "holder" holds.
var grantedRules = []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}

// escalationKind is one kind of RBAC object: its resource, and the object the table starts
// from (granting nothing new) with the change that makes it grant grantedRules.
type escalationKind struct {
	name      string
	resource  string
	namespace string
	initial   func(name string) runtime.Object
	granting  fieldChange
}

// fieldChange sets top-level fields (or metadata fields, under "metadata") of an object.
type fieldChange map[string]any

var escalationKinds = []escalationKind{
	{"role", "roles", escalationNamespace, func(name string) runtime.Object {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: escalationNamespace}}
	}, fieldChange{"rules": grantedRules}},
	{"clusterrole", "clusterroles", "", func(name string) runtime.Object {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}, fieldChange{"rules": grantedRules}},
	{"rolebinding-role", "rolebindings", escalationNamespace, func(name string) runtime.Object {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: escalationNamespace},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "secret-reader"}}
	}, fieldChange{"subjects": []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "friend"}}}},
	{"rolebinding-clusterrole", "rolebindings", escalationNamespace, func(name string) runtime.Object {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: escalationNamespace},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secret-reader"}}
	}, fieldChange{"subjects": []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "friend"}}}},
	{"clusterrolebinding", "clusterrolebindings", "", func(name string) runtime.Object {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secret-reader"}}
	}, fieldChange{"subjects": []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "friend"}}}},
}

// escalationWriter is who writes, and whether its writes grant (or change only GC fields).
type escalationWriter struct {
	user    string
	groups  []string
	gcOnly  bool // the write adds only a finalizer and an ownerReference
	refused bool // kube refuses its writes
}

var escalationWriters = []escalationWriter{
	{user: "holder"},
	{user: "escalator"},
	{user: "master", groups: []string{"system:masters"}},
	{user: "mallory", refused: true},
	{user: "mallory", gcOnly: true},
}

func (w escalationWriter) String() string {
	if w.gcOnly {
		return w.user + "-gc"
	}
	return w.user
}

// escalationMethods are the ways to write: each sends the initial object (create, and an update
// of a missing object, which creates it as kube's RBAC types allow) or the change to the stored
// one.
var escalationMethods = []string{"create", "createbyupdate", "update", "jsonpatch", "mergepatch", "strategicpatch", "apply"}

// TestEscalationTable: see the top of the file. One server per backend serves the whole table.
func TestEscalationTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.dynamicClient()
		gcChange := setUpEscalationTable(t, s)
		writers := map[string]dynamic.Interface{}
		for _, w := range escalationWriters {
			if writers[w.user] == nil {
				writers[w.user] = dynamic.NewForConfigOrDie(s.userConfig(t, w.user, w.groups...))
			}
		}
		waitForEscalationWriters(t, writers)
		for _, kind := range escalationKinds {
			for _, method := range escalationMethods {
				for _, w := range escalationWriters {
					if w.gcOnly && creates(method) {
						continue // a create is always checked
					}
					for _, dryRun := range []bool{false, true} {
						name := fmt.Sprintf("%s-%s-%s", kind.name, method, w)
						if dryRun {
							name += "-dryrun"
						}
						change := kind.granting
						if w.gcOnly {
							change = gcChange
						}
						t.Run(name, func(t *testing.T) {
							c := escalationCase{kind: kind, method: method, writer: w, dryRun: dryRun, name: name, change: change}
							c.run(t, admin, writers[w.user])
						})
					}
				}
			}
		}
	})
}

// setUpEscalationTable makes the namespace, the role granted (Role and ClusterRole
// "secret-reader") and binds the writers: all may write RBAC objects (rbac-writer), holder also
// holds the rules granted, escalator may escalate and bind. It returns the GC-only change: a
// finalizer and an ownerReference to the namespace.
func setUpEscalationTable(t *testing.T, s *sqlkubeServer) fieldChange {
	admin := s.clientset()
	ns := createNamespace(t, admin, escalationNamespace)
	rbacKinds := []string{"roles", "clusterroles", "rolebindings", "clusterrolebindings"}
	clusterRoles := []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"}, Rules: grantedRules},
		{ObjectMeta: metav1.ObjectMeta{Name: "rbac-writer"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "create", "update", "patch"},
			APIGroups: []string{rbacv1.GroupName}, Resources: rbacKinds}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "escalate-bind"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"escalate", "bind"},
			APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "clusterroles"}}}},
	}
	for _, r := range clusterRoles {
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.RbacV1().Roles(escalationNamespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"},
		Rules: grantedRules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bindClusterRole(t, admin, "rbac-writer", "holder", "escalator", "mallory")
	bindClusterRole(t, admin, "secret-reader", "holder")
	bindClusterRole(t, admin, "escalate-bind", "escalator")
	return fieldChange{"metadata": map[string]any{
		"finalizers":      []string{"example.com/keep"},
		"ownerReferences": []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}},
	}}
}

// bindClusterRole binds the ClusterRole role to users in a ClusterRoleBinding of the same name.
func bindClusterRole(t *testing.T, admin kubernetes.Interface, role string, users ...string) {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	for _, u := range users {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForEscalationWriters waits until the server's RBAC copy has the table's roles and
// bindings: each writer lists roles, and holder may bind the Role secret-reader (the check
// reads it).
func waitForEscalationWriters(t *testing.T, writers map[string]dynamic.Interface) {
	t.Helper()
	for user, c := range writers {
		eventually(t, 10*time.Second, user+" lists roles", func() (bool, error) {
			_, err := c.Resource(rbacResource("roles")).Namespace(escalationNamespace).List(ctx, metav1.ListOptions{})
			return err == nil, err
		})
	}
	probe := toUnstructuredObject(t, escalationKinds[2].initial("probe"))
	eventually(t, 10*time.Second, "holder binds the Role secret-reader", func() (bool, error) {
		_, err := writers["holder"].Resource(rbacResource("rolebindings")).Namespace(escalationNamespace).
			Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, err
	})
}

func rbacResource(resource string) schema.GroupVersionResource {
	return rbacv1.SchemeGroupVersion.WithResource(resource)
}

func toUnstructuredObject(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

// escalationCase is one row of the table.
type escalationCase struct {
	kind   escalationKind
	method string
	writer escalationWriter
	dryRun bool
	name   string
	change fieldChange
}

func (c escalationCase) run(t *testing.T, admin, writer dynamic.Interface) {
	resource := admin.Resource(rbacResource(c.kind.resource)).Namespace(c.kind.namespace)
	var before *unstructured.Unstructured
	if !creates(c.method) {
		var err error
		if before, err = resource.Create(ctx, c.object(t), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err := c.write(t, writer.Resource(rbacResource(c.kind.resource)).Namespace(c.kind.namespace), before)
	after, getErr := resource.Get(ctx, c.name, metav1.GetOptions{})
	switch {
	case c.writer.refused:
		assertAPIError(t, err, escalationRefused(c.kind.resource, c.name))
	case err != nil:
		t.Fatalf("refused: %v", err)
	}
	stored := !c.writer.refused && !c.dryRun
	switch {
	case before == nil && stored:
		if getErr != nil {
			t.Errorf("not created: %v", getErr)
		}
	case before == nil:
		if !apierrors.IsNotFound(getErr) {
			t.Errorf("created (%v), want nothing stored", getErr)
		}
	case stored:
		if getErr != nil || after.GetResourceVersion() == before.GetResourceVersion() {
			t.Errorf("not updated: %v", getErr)
		}
	default:
		if getErr != nil {
			t.Fatal(getErr)
		}
		if diff := cmp.Diff(before.Object, after.Object); diff != "" {
			t.Errorf("stored object changed (-before +after):\n%s", diff)
		}
	}
}

// object is the case's object as the admin creates it (the initial one), or as a create sends
// it (with the change).
func (c escalationCase) object(t *testing.T) *unstructured.Unstructured {
	obj := toUnstructuredObject(t, c.kind.initial(c.name))
	obj.SetAPIVersion(rbacv1.SchemeGroupVersion.String())
	obj.SetKind(kindOf(c.kind.resource))
	if creates(c.method) {
		c.change.applyTo(t, obj)
	}
	return obj
}

// creates tells the methods that write an object that does not exist yet.
func creates(method string) bool { return method == "create" || method == "createbyupdate" }

func kindOf(resource string) string {
	return map[string]string{"roles": "Role", "clusterroles": "ClusterRole", "rolebindings": "RoleBinding",
		"clusterrolebindings": "ClusterRoleBinding"}[resource]
}

// write sends the case's write as the writer.
func (c escalationCase) write(t *testing.T, r dynamic.ResourceInterface, stored *unstructured.Unstructured) error {
	var dryRun []string
	if c.dryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	var err error
	switch c.method {
	case "create":
		_, err = r.Create(ctx, c.object(t), metav1.CreateOptions{DryRun: dryRun})
	case "createbyupdate":
		_, err = r.Update(ctx, c.object(t), metav1.UpdateOptions{DryRun: dryRun})
	case "update":
		updated := stored.DeepCopy()
		c.change.applyTo(t, updated)
		_, err = r.Update(ctx, updated, metav1.UpdateOptions{DryRun: dryRun})
	case "jsonpatch":
		_, err = r.Patch(ctx, c.name, types.JSONPatchType, c.change.jsonPatch(t), metav1.PatchOptions{DryRun: dryRun})
	case "mergepatch", "strategicpatch":
		patchType := map[string]types.PatchType{"mergepatch": types.MergePatchType, "strategicpatch": types.StrategicMergePatchType}[c.method]
		_, err = r.Patch(ctx, c.name, patchType, mustJSON(t, c.change), metav1.PatchOptions{DryRun: dryRun})
	case "apply":
		applied := c.kind.applyConfiguration(c.name)
		c.change.applyTo(t, applied)
		force := true
		_, err = r.Patch(ctx, c.name, types.ApplyPatchType, mustJSON(t, applied.Object),
			metav1.PatchOptions{DryRun: dryRun, FieldManager: "escalation-test", Force: &force})
	}
	return err
}

// applyConfiguration is what an apply of the change names besides it: the object's identity.
func (k escalationKind) applyConfiguration(name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(rbacv1.SchemeGroupVersion.String())
	obj.SetKind(kindOf(k.resource))
	obj.SetName(name)
	obj.SetNamespace(k.namespace)
	return obj
}

// applyTo sets the change's fields in obj.
func (fc fieldChange) applyTo(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	var content map[string]any
	if err := json.Unmarshal(mustJSON(t, fc), &content); err != nil {
		t.Fatal(err)
	}
	for field, value := range content {
		if field != "metadata" {
			obj.Object[field] = value
			continue
		}
		for metaField, metaValue := range value.(map[string]any) {
			if err := unstructured.SetNestedField(obj.Object, metaValue, "metadata", metaField); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// jsonPatch is the change as JSON patch "add" operations, which replace what is there.
func (fc fieldChange) jsonPatch(t *testing.T) []byte {
	t.Helper()
	var ops []map[string]any
	for field, value := range fc {
		if field != "metadata" {
			ops = append(ops, map[string]any{"op": "add", "path": "/" + field, "value": value})
			continue
		}
		for metaField, metaValue := range value.(map[string]any) {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/" + metaField, "value": metaValue})
		}
	}
	return mustJSON(t, ops)
}

// escalationRefused is kube's 403 for mallory granting grantedRules through the object name
// of resource.
func escalationRefused(resource, name string) *apierrors.StatusError {
	return apierrors.NewForbidden(rbacv1.Resource(resource), name, errors.New(
		`user "mallory" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch"]}`))
}

// clusterAdminRefused is kube's 403 for mallory writing an object granting cluster-admin's rules.
func clusterAdminRefused(resource, name string) *apierrors.StatusError {
	return apierrors.NewForbidden(rbacv1.Resource(resource), name, errors.New(
		`user "mallory" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}
{NonResourceURLs:["*"], Verbs:["*"]}`))
}

// TestEscalationAttacks: the ways issue 30 found to become cluster-admin, as mallory, who may
// get, list, update and patch RBAC objects and is bound to view. kubectl patch and server-side
// apply of cluster-admin's binding, labelling cluster-admin to aggregate into view, and taking
// over view's aggregationRule are all 403 (also when the admin impersonates mallory), nothing
// changes, and mallory still may not do everything. A binding to a missing role is a 404.
func TestEscalationAttacks(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "rbac-writer"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "create", "update", "patch"}, APIGroups: []string{rbacv1.GroupName},
				Resources: []string{"clusterroles", "clusterrolebindings"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bindClusterRole(t, admin, "rbac-writer", "mallory")
		bindClusterRole(t, admin, "view", "mallory")
		kubeconfig := s.userKubeconfig(t, "mallory")
		mallory := func(args ...string) (string, error) {
			return s.kubectl(t, "", append([]string{"--kubeconfig", kubeconfig}, args...)...)
		}
		eventually(t, 10*time.Second, "mallory may read clusterroles", func() (bool, error) {
			_, err := mallory("get", "clusterrole", "cluster-admin")
			return err == nil, err
		})
		bindingBefore, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		roleBefore, err := admin.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		viewBefore, err := admin.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}

		refusedBinding := clusterAdminRefused("clusterrolebindings", "cluster-admin")
		_, err = mallory("patch", "clusterrolebinding", "cluster-admin", "--type=json", "-p",
			`[{"op":"add","path":"/subjects/-","value":{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"mallory"}}]`)
		assertKubectlError(t, err, kubectlForbidden(refusedBinding))
		applied := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"cluster-admin"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},
"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"mallory"}]}`
		for _, dryRun := range []string{"--dry-run=server", "--dry-run=none"} {
			_, err = s.kubectl(t, applied, "--kubeconfig", kubeconfig, "apply", "--server-side", "--force-conflicts", dryRun, "-f", "-")
			assertKubectlError(t, err, kubectlForbidden(refusedBinding))
		}
		_, err = mallory("label", "clusterrole", "cluster-admin", "rbac.authorization.k8s.io/aggregate-to-view=true")
		assertKubectlError(t, err, kubectlForbidden(clusterAdminRefused("clusterroles", "cluster-admin")))

		aggregationRefused := func(name string) *apierrors.StatusError {
			return apierrors.NewForbidden(rbacv1.Resource("clusterroles"), name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
		_, err = mallory("patch", "clusterrole", "view", "--type=merge", "-p",
			`{"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"kubernetes.io/bootstrapping":"rbac-defaults"}}]}}`)
		assertKubectlError(t, err, kubectlForbidden(aggregationRefused("view")))
		gatherer := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"gatherer"},
"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"kubernetes.io/bootstrapping":"rbac-defaults"}}]}}`
		_, err = s.kubectl(t, gatherer, "--kubeconfig", kubeconfig, "create", "-f", "-")
		assertKubectlError(t, err, kubectlForbidden(aggregationRefused("gatherer"), "creating"))

		impersonating := s.restConfig()
		impersonating.Impersonate = rest.ImpersonationConfig{UserName: "mallory", Groups: []string{"system:authenticated"}}
		subjects := append(bindingBefore.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"})
		patch := mustJSON(t, map[string]any{"subjects": subjects})
		_, err = kubernetes.NewForConfigOrDie(impersonating).RbacV1().ClusterRoleBindings().Patch(ctx, "cluster-admin", types.MergePatchType, patch, metav1.PatchOptions{})
		assertAPIError(t, err, clusterAdminRefused("clusterrolebindings", "cluster-admin"))

		// A binding to a role that does not exist names the role, as kube's 404 (the check
		// reads the role before comparing rules).
		_, err = kubernetes.NewForConfigOrDie(s.userConfig(t, "mallory")).RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "to-nothing"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nope"},
		}, metav1.CreateOptions{})
		assertAPIError(t, err, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), "nope"))

		if out, _ := mallory("auth", "can-i", "*", "*"); strings.TrimSpace(out) != "no" {
			t.Errorf("kubectl auth can-i '*' '*' as mallory: %q, want no", out)
		}
		assertUnchanged(t, bindingBefore, func() (metav1.Object, error) {
			return admin.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
		})
		assertUnchanged(t, roleBefore, func() (metav1.Object, error) {
			return admin.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{})
		})
		assertUnchanged(t, viewBefore, func() (metav1.Object, error) {
			return admin.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
		})
		if _, err := admin.RbacV1().ClusterRoles().Get(ctx, "gatherer", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("gatherer: %v, want not found", err)
		}
	})
}

// kubectlForbidden is how kubectl prints a Status error; kubectl create says first what it
// was doing with which file.
func kubectlForbidden(err *apierrors.StatusError, doing ...string) string {
	prefix := "Error from server (Forbidden): "
	if len(doing) > 0 {
		prefix += fmt.Sprintf("error when %s %q: ", doing[0], "STDIN")
	}
	return prefix + err.ErrStatus.Message
}

func assertKubectlError(t *testing.T, err error, want string) {
	t.Helper()
	var kerr *kubectlError
	if !errors.As(err, &kerr) {
		t.Fatalf("kubectl: %v, want it to fail with %q", err, want)
	}
	if got := strings.TrimSpace(kerr.stderr); got != want {
		t.Errorf("kubectl said\n%s\nwant\n%s", got, want)
	}
}

// assertUnchanged checks the object is still at its resourceVersion.
func assertUnchanged(t *testing.T, before metav1.Object, get func() (metav1.Object, error)) {
	t.Helper()
	after, err := get()
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("%s changed: resourceVersion %s, was %s", before.GetName(), after.GetResourceVersion(), before.GetResourceVersion())
	}
}

// TestBootstrapReconciliationHonoursAutoupdate: at start the server gives the bootstrap policy
// back what it lacks (as kube-apiserver does), but never to a role or binding annotated
// rbac.authorization.kubernetes.io/autoupdate=false: an operator's narrowing stays narrow.
func TestBootstrapReconciliationHonoursAutoupdate(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		roles, bindings := admin.RbacV1().ClusterRoles(), admin.RbacV1().ClusterRoleBindings()
		versionOnly := []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}}
		narrow := func(name, autoupdate string) {
			r, err := roles.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r.Annotations["rbac.authorization.kubernetes.io/autoupdate"] = autoupdate
			r.Rules = versionOnly
			if _, err := roles.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		narrow("system:discovery", "false")
		narrow("system:public-info-viewer", "true")
		b, err := bindings.Get(ctx, "system:basic-user", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.Annotations["rbac.authorization.kubernetes.io/autoupdate"] = "false"
		b.Subjects = nil
		if _, err := bindings.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}

		s.stop()
		s.restart()
		admin = s.clientset()
		roles, bindings = admin.RbacV1().ClusterRoles(), admin.RbacV1().ClusterRoleBindings()
		if r, err := roles.Get(ctx, "system:discovery", metav1.GetOptions{}); err != nil || !cmp.Equal(r.Rules, versionOnly) {
			t.Errorf("system:discovery (autoupdate false) after a restart: %v, %v; want only %v", r.Rules, err, versionOnly)
		}
		if r, err := roles.Get(ctx, "system:public-info-viewer", metav1.GetOptions{}); err != nil || len(r.Rules) <= len(versionOnly) {
			t.Errorf("system:public-info-viewer (autoupdate true) after a restart: %v, %v; want its rules back", r.Rules, err)
		}
		if b, err := bindings.Get(ctx, "system:basic-user", metav1.GetOptions{}); err != nil || len(b.Subjects) != 0 {
			t.Errorf("system:basic-user binding (autoupdate false) after a restart: %v, %v; want no subjects", b.Subjects, err)
		}
	})
}
