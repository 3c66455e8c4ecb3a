package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
)

// TestKubectlMutations drives the kubectl writes that go beyond create, replace, apply and delete:
// edit, delete waiting for finalizers, server dry runs, deletes by label and the delete options
// kubectl sends. Each check has a namespace of its own.
func TestKubectlMutations(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is needed for this test: %v", err)
	}
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		createCRD(t, s, scalableWidgetCRD())
		t.Run("edit", func(t *testing.T) { checkKubectlEdit(t, withNamespace(t, s, "edit")) })
		t.Run("delete waits for finalizers", func(t *testing.T) { checkDeleteWaitsForFinalizer(t, withNamespace(t, s, "finalizer")) })
		t.Run("server dry run", func(t *testing.T) { checkServerDryRun(t, withNamespace(t, s, "dry-run")) })
		t.Run("delete by label", func(t *testing.T) { checkDeleteByLabel(t, withNamespace(t, s, "by-label")) })
		t.Run("delete options", func(t *testing.T) { checkDeleteOptions(t, withNamespace(t, s, "delete-options")) })
	})
}

// scalableWidgetCRD is the e2e widgets CRD with a scale subresource on spec.size.
func scalableWidgetCRD() *apiextensionsv1.CustomResourceDefinition {
	crd := testCRD("widgets", "widget", "Widget", "wd", apiextensionsv1.NamespaceScoped)
	crd.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{
		Scale: &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.size", StatusReplicasPath: ".status.size"},
	}
	return crd
}

func widgetYAML(namespace, name string) string {
	return "apiVersion: e2e.example.com/v1\nkind: Widget\nmetadata:\n  name: " + name + "\n  namespace: " + namespace +
		"\nspec:\n  color: red\n  size: 1\n"
}

// namespacedKubectl runs kubectl on s in one namespace.
type namespacedKubectl struct {
	s         *sqlkubeServer
	namespace string
}

func withNamespace(t *testing.T, s *sqlkubeServer, namespace string) namespacedKubectl {
	createNamespace(t, s.clientset(), namespace)
	return namespacedKubectl{s: s, namespace: namespace}
}

// must fails the test if kubectl fails, and returns its output.
func (k namespacedKubectl) must(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	return k.s.mustKubectl(t, stdin, append([]string{"-n", k.namespace}, args...)...)
}

func (k namespacedKubectl) run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return k.s.kubectl(t, stdin, append([]string{"-n", k.namespace}, args...)...)
}

// useEditor makes kubectl edit run sed with script on the file it opens, and keep its files in
// a directory of the test's own (returned) rather than the system's.
func useEditor(t *testing.T, script string) (tmpDir string) {
	dir := t.TempDir()
	editor := filepath.Join(dir, "editor")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nexec sed -i -e '"+script+"' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", editor)
	t.Setenv("TMPDIR", dir)
	return dir
}

// checkKubectlEdit edits a configmap and a custom resource, then makes an edit the server
// rejects: kubectl reports the server's causes and nothing is written.
func checkKubectlEdit(t *testing.T, k namespacedKubectl) {
	k.must(t, "", "create", "configmap", "edited", "--from-literal=a=1")
	useEditor(t, `s/^  a: "1"$/  a: "2"/`)
	expectOutput(t, k.must(t, "", "edit", "configmap", "edited"), "configmap/edited edited")
	expectOutput(t, k.must(t, "", "get", "configmap", "edited", "-o", "jsonpath={.data}"), `{"a":"2"}`)

	k.must(t, widgetYAML(k.namespace, "edited"), "create", "-f", "-")
	useEditor(t, `s/^  color: red$/  color: blue/`)
	expectOutput(t, k.must(t, "", "edit", "widget", "edited"), "widget.e2e.example.com/edited edited")
	expectOutput(t, k.must(t, "", "get", "widget", "edited", "-o", "jsonpath={.spec}"), `{"color":"blue","size":1}`)

	before := listRevision(t, k.s)
	tmpDir := useEditor(t, `s/^  name: edited$/&\n  labels: {"bad key!": v}/`)
	_, err := k.run(t, "", "edit", "configmap", "edited")
	kerr, ok := err.(*kubectlError)
	if !ok {
		t.Fatalf("kubectl edit with an invalid label: %v, want it to fail", err)
	}
	// kubectl reopens the editor with the server's causes; the script changes nothing more, so
	// kubectl gives up and keeps the edited file.
	failed := regexp.MustCompile(`^error: configmaps "edited" is invalid
A copy of your changes has been stored to "(` + regexp.QuoteMeta(tmpDir) + `/kubectl-edit-\d+\.yaml)"
error: Edit cancelled, no valid changes were saved.
$`).FindStringSubmatch(kerr.stderr)
	if failed == nil {
		t.Fatalf("kubectl edit with an invalid label printed:\n%s", kerr.stderr)
	}
	checkEditCopyNamesCause(t, failed[1])
	if after := listRevision(t, k.s); after != before {
		t.Errorf("a rejected edit moved the revision from %s to %s", before, after)
	}
	expectOutput(t, k.must(t, "", "get", "configmap", "edited", "-o", "jsonpath={.data} {.metadata.labels}"), `{"a":"2"}`)
}

// checkEditCopyNamesCause checks that the copy kubectl keeps of a rejected edit starts with the
// cause kube-apiserver gives for the invalid label.
func checkEditCopyNamesCause(t *testing.T, path string) {
	t.Helper()
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cause := v1validation.ValidateLabels(map[string]string{"bad key!": "v"}, field.NewPath("metadata", "labels"))[0]
	if want := "# configmaps \"edited\" was not valid:\n# * " + cause.Error() + "\n"; !strings.Contains(string(saved), want) {
		t.Errorf("the copy of the rejected edit does not say %q:\n%s", want, saved)
	}
}

// checkDeleteWaitsForFinalizer deletes configmaps that a finalizer holds: kubectl waits until
// client-go removes the finalizer, and a watch sees the object marked, then deleted.
func checkDeleteWaitsForFinalizer(t *testing.T, k namespacedKubectl) {
	cms := k.s.clientset().CoreV1().ConfigMaps(k.namespace)
	checkDeleteTimesOutWhileHeld(t, k, cms)
	held := createHeld(t, cms, "held")
	w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=held", ResourceVersion: held.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deleted := make(chan kubectlResult, 1)
	go func() {
		out, err := k.run(t, "", "delete", "configmap", "held", "--timeout=30s")
		deleted <- kubectlResult{out, err}
	}()

	marked := nextEvent(t, w, "held being deleted")
	marking, ok := marked.Object.(*corev1.ConfigMap)
	if !ok || marked.Type != watch.Modified || marking.DeletionTimestamp == nil {
		t.Fatalf("first event %s %+v, want MODIFIED with a deletionTimestamp", marked.Type, marked.Object)
	}
	got, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || !cmp.Equal(got, marking) {
		t.Fatalf("get after the MODIFIED event: %v (-event +get):\n%s", err, cmp.Diff(marking, got))
	}
	select {
	case r := <-deleted:
		t.Fatalf("kubectl delete returned while the finalizer held the object: %q, %v", r.out, r.err)
	default:
	}

	got.Finalizers = nil
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	// kube-apiserver answers with the update, which it deletes rather than writes.
	if updated.ResourceVersion != marking.ResourceVersion || updated.Finalizers != nil {
		t.Errorf("the update removing the finalizer answered resourceVersion %s, finalizers %v; want %s, none",
			updated.ResourceVersion, updated.Finalizers, marking.ResourceVersion)
	}
	checkDeletedEvent(t, nextEvent(t, w, "held deleted"), marking)
	r := <-deleted
	if r.err != nil {
		t.Fatal(r.err)
	}
	expectOutput(t, r.out, `configmap "held" deleted`)
}

// checkDeleteTimesOutWhileHeld checks that kubectl delete keeps waiting while a finalizer holds
// the object, until its --timeout.
func checkDeleteTimesOutWhileHeld(t *testing.T, k namespacedKubectl, cms typedcorev1.ConfigMapInterface) {
	held := createHeld(t, cms, "held-timeout")
	out, err := k.run(t, "", "delete", "configmap", held.Name, "--timeout=1s")
	expectOutput(t, out, `configmap "held-timeout" deleted`)
	// Before its error, kubectl may log how its own watch ended at the deadline, as it races
	// with the deadline whatever the server.
	const timedOut = "error: timed out waiting for the condition on configmaps/held-timeout\n"
	if kerr, ok := err.(*kubectlError); !ok || !strings.HasSuffix(kerr.stderr, timedOut) {
		t.Errorf("kubectl delete of a held configmap: %v, want it to end with %q", err, timedOut)
	}
}

type kubectlResult struct {
	out string
	err error
}

// createHeld creates a configmap with a finalizer no controller removes.
func createHeld(t *testing.T, cms typedcorev1.ConfigMapInterface, name string) *corev1.ConfigMap {
	t.Helper()
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{"e2e.example.com/hold"}}}
	created, err := cms.Create(ctx, held, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// checkDeletedEvent checks that ev is the deletion of the object marking showed being deleted:
// as kube-apiserver never writes the update that removes the last finalizer, the DELETED object
// is the marked one as stored, finalizers and all, at the deletion's later revision.
func checkDeletedEvent(t *testing.T, ev watch.Event, marking *corev1.ConfigMap) {
	t.Helper()
	gone, ok := ev.Object.(*corev1.ConfigMap)
	if !ok || ev.Type != watch.Deleted {
		t.Fatalf("second event %s %+v, want DELETED", ev.Type, ev.Object)
	}
	if revision(t, gone) <= revision(t, marking) {
		t.Errorf("DELETED at revision %s, want after the marking's %s", gone.ResourceVersion, marking.ResourceVersion)
	}
	want := marking.DeepCopy()
	want.ResourceVersion = gone.ResourceVersion
	if diff := cmp.Diff(want, gone); diff != "" {
		t.Errorf("DELETED object (-want +got):\n%s", diff)
	}
}

// dryRunCase is one kubectl command run with --dry-run=server, and what kubectl prints for it.
type dryRunCase struct {
	stdin string
	args  []string
	want  string
}

// checkServerDryRun runs every kind of write with --dry-run=server: kubectl prints what it
// prints for a server dry run, and nothing is stored, no revision is used and no watch event
// is sent.
func checkServerDryRun(t *testing.T, k namespacedKubectl) {
	k.must(t, "", "create", "configmap", "dry", "--from-literal=a=1")
	k.must(t, widgetYAML(k.namespace, "dry"), "create", "-f", "-")
	stored := k.must(t, "", "get", "configmaps,widgets", "-o", "json")
	before := listRevision(t, k.s)
	w, err := k.s.clientset().CoreV1().ConfigMaps(k.namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: before})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	for _, c := range dryRunCases(k.namespace) {
		out, err := k.run(t, c.stdin, append(c.args, "--dry-run=server")...)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		expectOutput(t, out, c.want)
	}

	if after := listRevision(t, k.s); after != before {
		t.Errorf("server dry runs moved the revision from %s to %s", before, after)
	}
	if diff := cmp.Diff(stored, k.must(t, "", "get", "configmaps,widgets", "-o", "json")); diff != "" {
		t.Errorf("server dry runs changed what is stored (-before +after):\n%s", diff)
	}
	// A real write after the dry runs must be the first event the watch sees.
	k.must(t, "", "create", "configmap", "marker")
	if ev := nextEvent(t, w, "marker"); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "marker" {
		t.Errorf("first event after the dry runs: %s %+v, want ADDED marker", ev.Type, ev.Object)
	}
	checkDryRunDeleteAnswer(t, k)
}

// checkDryRunDeleteAnswer sends the DELETE kubectl sends for a server dry run: kube-apiserver
// answers as for a real delete of a configmap, 200 with a Success Status naming it, and keeps it.
func checkDryRunDeleteAnswer(t *testing.T, k namespacedKubectl) {
	uid := k.must(t, "", "get", "configmap", "dry", "-o", "jsonpath={.metadata.uid}")
	resp := k.s.do(t, "DELETE", "/api/v1/namespaces/"+k.namespace+"/configmaps/dry",
		[]byte(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background","dryRun":["All"]}`), "Content-Type", "application/json")
	want := metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{Name: "dry", Kind: "configmaps", UID: types.UID(uid)}}
	if got := resp.status(t); resp.code != 200 || !cmp.Equal(got, want, cmpopts.IgnoreFields(metav1.Status{}, "TypeMeta")) {
		t.Errorf("dry-run DELETE answered %d %+v, want 200 %+v", resp.code, got, want)
	}
	expectOutput(t, k.must(t, "", "get", "configmap", "dry", "-o", "jsonpath={.metadata.uid}"), uid)
}

// dryRunCases write configmap dry (a=1), a new configmap and widget dry in namespace.
func dryRunCases(namespace string) []dryRunCase {
	newConfigMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new, namespace: " + namespace + "}\ndata: {a: \"1\"}\n"
	changed := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry, namespace: " + namespace + "}\ndata: {a: \"2\"}\n"
	return []dryRunCase{
		{"", []string{"create", "configmap", "new"}, "configmap/new created (server dry run)"},
		{newConfigMap, []string{"apply", "-f", "-"}, "configmap/new created (server dry run)"},
		{newConfigMap, []string{"apply", "--server-side", "-f", "-"}, "configmap/new serverside-applied (server dry run)"},
		{changed, []string{"apply", "-f", "-"}, "configmap/dry configured (server dry run)"},
		// kubectl create owns data.a: taking it over needs --force-conflicts.
		{changed, []string{"apply", "--server-side", "--force-conflicts", "-f", "-"}, "configmap/dry serverside-applied (server dry run)"},
		{changed, []string{"replace", "-f", "-"}, "configmap/dry replaced (server dry run)"},
		// kubectl patch prints no dry-run marker.
		{"", []string{"patch", "configmap", "dry", "-p", `{"data":{"a":"2"}}`}, "configmap/dry patched"},
		{"", []string{"label", "configmap", "dry", "app=x"}, "configmap/dry labeled (server dry run)"},
		{"", []string{"annotate", "configmap", "dry", "note=x"}, "configmap/dry annotated (server dry run)"},
		{"", []string{"scale", "widget/dry", "--replicas=3"}, "widget.e2e.example.com/dry scaled (server dry run)"},
		{"", []string{"delete", "configmap", "dry"}, `configmap "dry" deleted (server dry run)`},
		{"", []string{"delete", "configmap", "--all"}, "configmap \"dry\" deleted (server dry run)\nconfigmap \"kube-root-ca.crt\" deleted (server dry run)"},
		{"", []string{"delete", "widget", "dry"}, `widget.e2e.example.com "dry" deleted (server dry run)`},
	}
}

// checkDeleteByLabel deletes configmaps by label selector with kubectl (which lists, then
// deletes each) and with client-go's deletecollection, dry run first: exactly the matching ones go.
func checkDeleteByLabel(t *testing.T, k namespacedKubectl) {
	for _, name := range []string{"x1", "x2", "y1", "none"} {
		k.must(t, "", "create", "configmap", name)
	}
	k.must(t, "", "label", "configmap", "x1", "x2", "app=x")
	k.must(t, "", "label", "configmap", "y1", "app=y")
	expectOutput(t, k.must(t, "", "delete", "configmap", "-l", "app=x"), "configmap \"x1\" deleted\nconfigmap \"x2\" deleted")
	expectOutput(t, k.must(t, "", "get", "configmaps", "-o", "name"), "configmap/kube-root-ca.crt\nconfigmap/none\nconfigmap/y1")

	cms := k.s.clientset().CoreV1().ConfigMaps(k.namespace)
	byLabel := metav1.ListOptions{LabelSelector: "app=y"}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, byLabel); err != nil {
		t.Fatal(err)
	}
	expectOutput(t, k.must(t, "", "get", "configmaps", "-l", "app=y", "-o", "name"), "configmap/y1")
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, byLabel); err != nil {
		t.Fatal(err)
	}
	expectOutput(t, k.must(t, "", "get", "configmaps", "-o", "name"), "configmap/kube-root-ca.crt\nconfigmap/none")
}

// checkDeleteOptions sends the delete options kubectl has flags for, on objects without
// dependents.
func checkDeleteOptions(t *testing.T, k namespacedKubectl) {
	k.must(t, "", "create", "configmap", "forced")
	out, stderr, err := k.s.kubectlStreams(t, "", "-n", k.namespace, "delete", "configmap", "forced", "--grace-period=0", "--force")
	if err != nil {
		t.Fatal(err)
	}
	expectOutput(t, out, `configmap "forced" force deleted`)
	expectOutput(t, stderr, "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. "+
		"The resource may continue to run on the cluster indefinitely.")

	// Orphan puts the garbage collector's orphan finalizer on the object, which then removes it
	// and the object; kubectl waits for that.
	k.must(t, "", "create", "configmap", "orphaned")
	expectOutput(t, k.must(t, "", "delete", "configmap", "orphaned", "--cascade=orphan", "--timeout=30s"), `configmap "orphaned" deleted`)
	_, err = k.s.clientset().CoreV1().ConfigMaps(k.namespace).Get(ctx, "orphaned", metav1.GetOptions{})
	assertAPIError(t, err, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "orphaned"))
	checkOrphanAnswer(t, k)
}

// checkOrphanAnswer sends the DELETE kubectl sends for --cascade=orphan: kube-apiserver answers
// 200 with the object marked for deletion and holding the orphan finalizer.
func checkOrphanAnswer(t *testing.T, k namespacedKubectl) {
	k.must(t, "", "create", "configmap", "orphaned")
	resp := k.s.do(t, "DELETE", "/api/v1/namespaces/"+k.namespace+"/configmaps/orphaned",
		[]byte(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Orphan"}`), "Content-Type", "application/json")
	var marked corev1.ConfigMap
	if err := json.Unmarshal(resp.body, &marked); err != nil || resp.code != 200 || marked.Kind != "ConfigMap" {
		t.Fatalf("DELETE with propagationPolicy Orphan answered %d (%v): %s", resp.code, err, resp.body)
	}
	if marked.DeletionTimestamp == nil || !cmp.Equal(marked.DeletionGracePeriodSeconds, ptr.To[int64](0)) ||
		!cmp.Equal(marked.Finalizers, []string{metav1.FinalizerOrphanDependents}) {
		t.Errorf("DELETE with propagationPolicy Orphan answered %+v, want it marked with the orphan finalizer", marked.ObjectMeta)
	}
	eventually(t, 30*time.Second, "the garbage collector deletes the orphaned configmap", func() (bool, error) {
		_, err := k.s.clientset().CoreV1().ConfigMaps(k.namespace).Get(ctx, "orphaned", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}
