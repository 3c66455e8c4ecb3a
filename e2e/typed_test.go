package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// object is what every typed client returns: a pointer to a built-in type.
type object interface {
	metav1.Object
	runtime.Object
}

// typedClient is the part of a client-go typed client the CRUD checks use.
type typedClient[T object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
}

// crudCase describes one namespaced built-in type for checkCRUD.
type crudCase[T object, L runtime.Object] struct {
	resource schema.GroupResource
	kind     schema.GroupKind
	client   typedClient[T, L]
	// collectionPath is the raw URL path of the type's collection in the test namespace.
	collectionPath string
	// newObject returns a valid object; change edits its content for an update.
	newObject func(meta metav1.ObjectMeta) T
	change    func(T)
}

const typedNamespace = "e2e-typed"

func TestTypedClientCRUD(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		cs := s.clientset()
		createNamespace(t, cs, typedNamespace)
		t.Run("configmaps", func(t *testing.T) { checkCRUD(t, s, configMapCase(cs)) })
		t.Run("secrets", func(t *testing.T) { checkCRUD(t, s, secretCase(cs)) })
		t.Run("serviceaccounts", func(t *testing.T) { checkCRUD(t, s, serviceAccountCase(cs)) })
		t.Run("leases", func(t *testing.T) { checkCRUD(t, s, leaseCase(cs)) })
	})
}

func configMapCase(cs kubernetes.Interface) crudCase[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return crudCase[*corev1.ConfigMap, *corev1.ConfigMapList]{
		resource:       schema.GroupResource{Resource: "configmaps"},
		kind:           schema.GroupKind{Kind: "ConfigMap"},
		client:         cs.CoreV1().ConfigMaps(typedNamespace),
		collectionPath: "/api/v1/namespaces/" + typedNamespace + "/configmaps",
		newObject: func(m metav1.ObjectMeta) *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: m, Data: map[string]string{"a": "b"}}
		},
		change: func(c *corev1.ConfigMap) { c.Data["a"] = "changed" },
	}
}

func secretCase(cs kubernetes.Interface) crudCase[*corev1.Secret, *corev1.SecretList] {
	return crudCase[*corev1.Secret, *corev1.SecretList]{
		resource:       schema.GroupResource{Resource: "secrets"},
		kind:           schema.GroupKind{Kind: "Secret"},
		client:         cs.CoreV1().Secrets(typedNamespace),
		collectionPath: "/api/v1/namespaces/" + typedNamespace + "/secrets",
		newObject: func(m metav1.ObjectMeta) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: m, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}
		},
		change: func(s *corev1.Secret) { s.Data["k"] = []byte("changed") },
	}
}

func serviceAccountCase(cs kubernetes.Interface) crudCase[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return crudCase[*corev1.ServiceAccount, *corev1.ServiceAccountList]{
		resource:       schema.GroupResource{Resource: "serviceaccounts"},
		kind:           schema.GroupKind{Kind: "ServiceAccount"},
		client:         cs.CoreV1().ServiceAccounts(typedNamespace),
		collectionPath: "/api/v1/namespaces/" + typedNamespace + "/serviceaccounts",
		newObject: func(m metav1.ObjectMeta) *corev1.ServiceAccount {
			return &corev1.ServiceAccount{ObjectMeta: m, AutomountServiceAccountToken: ptr.To(false)}
		},
		change: func(sa *corev1.ServiceAccount) { sa.AutomountServiceAccountToken = ptr.To(true) },
	}
}

func leaseCase(cs kubernetes.Interface) crudCase[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return crudCase[*coordinationv1.Lease, *coordinationv1.LeaseList]{
		resource:       schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"},
		kind:           schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"},
		client:         cs.CoordinationV1().Leases(typedNamespace),
		collectionPath: "/apis/coordination.k8s.io/v1/namespaces/" + typedNamespace + "/leases",
		newObject: func(m metav1.ObjectMeta) *coordinationv1.Lease {
			return &coordinationv1.Lease{ObjectMeta: m, Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To("holder-a"), LeaseDurationSeconds: ptr.To(int32(15)),
			}}
		},
		change: func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("holder-b") },
	}
}

// checkCRUD drives one type through create, get, update, list and delete, with the errors
// kube-apiserver answers on the way.
func checkCRUD[T object, L runtime.Object](t *testing.T, s *sqlkubeServer, c crudCase[T, L]) {
	before := time.Now().Truncate(time.Second)
	created, err := c.client.Create(ctx, c.newObject(metav1.ObjectMeta{Name: "a"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	checkNewObjectMeta(t, created, before)
	assertGet(t, c.client, "a", created)

	_, err = c.client.Create(ctx, c.newObject(metav1.ObjectMeta{Name: "a"}), metav1.CreateOptions{})
	assertAPIError(t, err, apierrors.NewAlreadyExists(c.resource, "a"))

	updated := checkUpdate(t, c, created)

	stale := copyOf(created)
	c.change(stale)
	_, err = c.client.Update(ctx, stale, metav1.UpdateOptions{})
	assertAPIError(t, err, conflictOnStale(c.resource, "a"))
	assertGet(t, c.client, "a", updated)

	_, err = c.client.Get(ctx, "missing", metav1.GetOptions{})
	assertAPIError(t, err, apierrors.NewNotFound(c.resource, "missing"))

	checkList(t, s, c)
	checkDelete(t, s, c, created, updated)
	checkCreateErrors(t, c)
}

// checkUpdate updates the object and checks the metadata rules of an update.
func checkUpdate[T object, L runtime.Object](t *testing.T, c crudCase[T, L], created T) T {
	t.Helper()
	change := copyOf(created)
	c.change(change)
	updated, err := c.client.Update(ctx, change, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.GetResourceVersion() == created.GetResourceVersion() {
		t.Errorf("update kept resourceVersion %s", updated.GetResourceVersion())
	}
	if revision(t, updated) <= revision(t, created) {
		t.Errorf("resourceVersion went from %s to %s, want it to grow", created.GetResourceVersion(), updated.GetResourceVersion())
	}
	if updated.GetUID() != created.GetUID() || !updated.GetCreationTimestamp().Time.Equal(created.GetCreationTimestamp().Time) {
		t.Errorf("update changed uid or creationTimestamp: %s %v -> %s %v",
			created.GetUID(), created.GetCreationTimestamp(), updated.GetUID(), updated.GetCreationTimestamp())
	}
	if updated.GetGeneration() != 0 {
		t.Errorf("generation = %d, want unset: kube-apiserver keeps no generation on this type", updated.GetGeneration())
	}
	want := copyOf(change)
	want.SetResourceVersion(updated.GetResourceVersion())
	want.SetManagedFields(updated.GetManagedFields())
	if diff := cmp.Diff(want, updated); diff != "" {
		t.Errorf("update answer differs from the object sent (-want +got):\n%s", diff)
	}
	assertGet(t, c.client, "a", updated)
	return updated
}

func checkList[T object, L runtime.Object](t *testing.T, s *sqlkubeServer, c crudCase[T, L]) {
	t.Helper()
	if _, err := c.client.Create(ctx, c.newObject(metav1.ObjectMeta{Name: "b"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create b: %v", err)
	}
	list, err := c.client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if got := clientNames(t, list); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("list names = %v, want [a b]", got)
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strconv.ParseUint(listMeta.GetResourceVersion(), 10, 64); err != nil {
		t.Errorf("list resourceVersion %q is not a revision: %v", listMeta.GetResourceVersion(), err)
	}
	checkListItemsHaveNoTypeMeta(t, s, c.collectionPath)
}

// checkListItemsHaveNoTypeMeta checks a kube-apiserver quirk clients rely on not mattering: the
// items of a built-in type's list carry no kind or apiVersion, only the list itself does.
func checkListItemsHaveNoTypeMeta(t *testing.T, s *sqlkubeServer, collectionPath string) {
	t.Helper()
	resp := s.do(t, http.MethodGet, collectionPath, nil, "Accept", "application/json")
	var list struct {
		Kind       string           `json:"kind"`
		APIVersion string           `json:"apiVersion"`
		Items      []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(resp.body, &list); err != nil || resp.code != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %s", collectionPath, resp.code, err, resp.body)
	}
	if list.Kind == "" || list.APIVersion == "" {
		t.Errorf("list has kind %q, apiVersion %q; want both", list.Kind, list.APIVersion)
	}
	for _, item := range list.Items {
		if _, ok := item["kind"]; ok {
			t.Errorf("list item has kind %v, apiVersion %v; kube-apiserver sends neither in a list", item["kind"], item["apiVersion"])
			return
		}
	}
}

// checkDelete deletes "a": first with a stale precondition (refused), then for real, reading the
// Status body kube-apiserver returns for a delete.
func checkDelete[T object, L runtime.Object](t *testing.T, s *sqlkubeServer, c crudCase[T, L], created, updated T) {
	t.Helper()
	err := c.client.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To(created.GetResourceVersion())}})
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) {
		t.Fatalf("delete with a stale resourceVersion precondition: %v, want 409 Conflict", err)
	}
	st := status.Status()
	// kube-apiserver names the kind where the resource would be.
	wantPrefix := fmt.Sprintf("Operation cannot be fulfilled on %s %q: ", schema.GroupResource{Group: c.kind.Group, Resource: c.kind.Kind}, "a")
	wantDetail := fmt.Sprintf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified",
		created.GetResourceVersion(), updated.GetResourceVersion())
	if !strings.HasPrefix(st.Message, wantPrefix) || !strings.Contains(st.Message, wantDetail) {
		t.Errorf("precondition conflict message %q, want %q...%q", st.Message, wantPrefix, wantDetail)
	}
	assertGet(t, c.client, "a", updated)

	resp := s.do(t, http.MethodDelete, c.collectionPath+"/a", nil)
	if resp.code != http.StatusOK {
		t.Fatalf("DELETE answered %d: %s", resp.code, resp.body)
	}
	if c.resource.Resource == "serviceaccounts" {
		// kube's ServiceAccount storage answers a delete with the deleted object.
		var deleted metav1.PartialObjectMetadata
		if err := json.Unmarshal(resp.body, &deleted); err != nil || deleted.Kind != "ServiceAccount" || deleted.UID != created.GetUID() {
			t.Errorf("DELETE answered %s, want the deleted ServiceAccount", resp.body)
		}
	} else {
		want := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{
			Name: "a", Group: c.resource.Group, Kind: c.resource.Resource, UID: created.GetUID(),
		}}}
		assertStatus(t, resp.status(t), want)
	}

	_, err = c.client.Get(ctx, "a", metav1.GetOptions{})
	assertAPIError(t, err, apierrors.NewNotFound(c.resource, "a"))
	err = c.client.Delete(ctx, "a", metav1.DeleteOptions{})
	assertAPIError(t, err, apierrors.NewNotFound(c.resource, "a"))
}

func checkCreateErrors[T object, L runtime.Object](t *testing.T, c crudCase[T, L]) {
	t.Helper()
	_, err := c.client.Create(ctx, c.newObject(metav1.ObjectMeta{Name: "Bad_Name"}), metav1.CreateOptions{})
	assertAPIError(t, err, invalidName(c.kind, "Bad_Name", validation.NameIsDNSSubdomain))

	generated, err := c.client.Create(ctx, c.newObject(metav1.ObjectMeta{GenerateName: "gen-"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create with generateName: %v", err)
	}
	if !regexp.MustCompile(`^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(generated.GetName()) {
		t.Errorf("generated name %q, want gen- and 5 random characters", generated.GetName())
	}
	if generated.GetGenerateName() != "gen-" {
		t.Errorf("generateName = %q, want it kept", generated.GetGenerateName())
	}
	assertGet(t, c.client, generated.GetName(), generated)
}

// checkNewObjectMeta checks what the server must set on create.
func checkNewObjectMeta(t *testing.T, obj metav1.Object, before time.Time) {
	t.Helper()
	if !uuidPattern.MatchString(string(obj.GetUID())) {
		t.Errorf("uid %q is not a UUID", obj.GetUID())
	}
	created := obj.GetCreationTimestamp().Time
	if created.Before(before) || created.After(time.Now().Add(time.Second)) {
		t.Errorf("creationTimestamp %v is not the time of the create (after %v)", created, before)
	}
	if v, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64); err != nil || v == 0 {
		t.Errorf("resourceVersion %q is not a revision", obj.GetResourceVersion())
	}
	if obj.GetGeneration() != 0 || obj.GetDeletionTimestamp() != nil {
		t.Errorf("generation %d, deletionTimestamp %v: want neither on a new object of this type", obj.GetGeneration(), obj.GetDeletionTimestamp())
	}
}

// assertGet reads name and checks it equals want.
func assertGet[T object, L runtime.Object](t *testing.T, client typedClient[T, L], name string, want T) {
	t.Helper()
	got, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get %s (-want +got):\n%s", name, diff)
	}
}

// createNamespace creates a namespace and waits for what the server puts in each (the default
// ServiceAccount, the root CA ConfigMap), so that tests see the namespace as it stays.
func createNamespace(t *testing.T, cs kubernetes.Interface, name string) *corev1.Namespace {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	eventually(t, 10*time.Second, "the default ServiceAccount and root CA in namespace "+name, func() (bool, error) {
		_, errSA := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		_, errCM := cs.CoreV1().ConfigMaps(name).Get(ctx, rootCAConfigMap, metav1.GetOptions{})
		return errSA == nil && errCM == nil, errors.Join(errSA, errCM)
	})
	return ns
}

func copyOf[T object](obj T) T { return obj.DeepCopyObject().(T) }

func revision(t *testing.T, obj metav1.Object) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", obj.GetResourceVersion(), err)
	}
	return v
}

func names(t *testing.T, list runtime.Object) []string {
	t.Helper()
	return namesWhere(t, list, func(runtime.Object) bool { return true })
}

// uuidPattern matches the UUIDs kube-apiserver gives as uids.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// mustJSON marshals v for request bodies.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
