package controllertest

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// configMap names the default namespace's configmap name (the collection, with name "").
func configMap(env *Env, name string) registry.Ref {
	return env.Ref("", "configmaps", "default", name)
}

// Backends runs its function on SQLite, then on PostgreSQL, each with a database of its own.
func TestBackendsRunsBoth(t *testing.T) {
	var ran []string
	Backends(t, func(t *testing.T, env *Env) {
		ran = append(ran, t.Name())
		configMaps := configMap(env, "")
		if _, err := env.Get(configMap(env, "left")); !apierrors.IsNotFound(err) {
			t.Fatalf("a configmap of an earlier backend is in this one's database: %v", err)
		}
		env.CreateNamed(configMaps, metav1.ObjectMeta{Name: "left"})
	})
	want := []string{t.Name() + "/sqlite", t.Name() + "/postgres"}
	if !sqltest.InCI() && len(ran) == 1 {
		want = want[:1] // PostgreSQL is not reachable: its subtest skipped
	}
	if !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}

// Create creates an object as FieldManager, and answers it as stored.
func TestCreate(t *testing.T) {
	env := New(t, sqltest.SQLiteDSN(t))
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	obj.SetName("c")
	created := env.Create(env.Ref("", "configmaps", "default", ""), obj)
	if created.GetUID() == "" || created.GetNamespace() != "default" || created.Object["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("created %v", created.Object)
	}
	if managers := created.GetManagedFields(); len(managers) != 1 || managers[0].Manager != FieldManager || managers[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Fatalf("created with managedFields %+v, want one Update entry of %s", managers, FieldManager)
	}
}

// CreateNamed creates an object of the ref's type with the name, owners and finalizers given;
// Get reads it back; Delete deletes it with the propagation policy given.
func TestCreateGetDelete(t *testing.T) {
	Backends(t, func(t *testing.T, env *Env) {
		configMaps := configMap(env, "")
		owner := env.CreateNamed(configMaps, metav1.ObjectMeta{Name: "owner"})
		if owner.GetAPIVersion() != "v1" || owner.GetKind() != "ConfigMap" || owner.GetNamespace() != "default" || owner.GetName() != "owner" ||
			owner.GetUID() == "" || owner.GetResourceVersion() == "" {
			t.Fatalf("created %v", owner.Object)
		}
		owners := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.GetUID()}}
		secrets := env.Ref("", "secrets", "default", "")
		dependent := env.CreateNamed(secrets, metav1.ObjectMeta{Name: "dependent", OwnerReferences: owners, Finalizers: []string{"example.com/keep"}})
		if got := dependent.GetOwnerReferences(); !slices.EqualFunc(got, owners, func(a, b metav1.OwnerReference) bool { return a.UID == b.UID && a.Name == b.Name }) ||
			!slices.Equal(dependent.GetFinalizers(), []string{"example.com/keep"}) {
			t.Fatalf("created dependent: owners %v, finalizers %v", got, dependent.GetFinalizers())
		}
		got, err := env.Get(configMap(env, "owner"))
		if err != nil || got.GetUID() != owner.GetUID() || got.GetResourceVersion() != owner.GetResourceVersion() {
			t.Fatalf("Get = %v, %v; want the created owner", got, err)
		}

		// No collector runs: the finalizers a policy sets stay, and the object with them.
		for policy, finalizer := range map[metav1.DeletionPropagation]string{
			metav1.DeletePropagationForeground: metav1.FinalizerDeleteDependents,
			metav1.DeletePropagationOrphan:     metav1.FinalizerOrphanDependents,
		} {
			name := strings.ToLower("deleted-" + cmp.Or(string(policy), "none"))
			env.CreateNamed(configMaps, metav1.ObjectMeta{Name: name})
			deleting := env.Delete(configMap(env, name), policy)
			if deleting.GetDeletionTimestamp() == nil || !slices.Equal(deleting.GetFinalizers(), []string{finalizer}) {
				t.Fatalf("%s delete answered deletionTimestamp %v, finalizers %v", policy, deleting.GetDeletionTimestamp(), deleting.GetFinalizers())
			}
			if stored, err := env.Get(configMap(env, name)); err != nil || !slices.Equal(stored.GetFinalizers(), []string{finalizer}) {
				t.Fatalf("after a %s delete: %v, %v", policy, stored, err)
			}
		}
		for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, ""} {
			name := strings.ToLower("deleted-" + cmp.Or(string(policy), "none"))
			env.CreateNamed(configMaps, metav1.ObjectMeta{Name: name})
			if deleted := env.Delete(configMap(env, name), policy); deleted.GetName() != name {
				t.Fatalf("%q delete answered %v", policy, deleted.Object)
			}
			if _, err := env.Get(configMap(env, name)); !apierrors.IsNotFound(err) {
				t.Fatalf("after a %q delete: %v, want NotFound", policy, err)
			}
		}
	})
}

// WatchAfter delivers the events after the object's revision, in its namespace only; Receive
// skips progress notifications.
func TestWatchAfterDeliversTheNextEvents(t *testing.T) {
	Backends(t, func(t *testing.T, env *Env) {
		configMaps := configMap(env, "")
		from := env.CreateNamed(configMaps, metav1.ObjectMeta{Name: "before"})
		events := WatchAfter(t, env.Store, "configmaps", from)
		env.CreateNamed(env.Ref("", "configmaps", "kube-system", ""), metav1.ObjectMeta{Name: "elsewhere"})
		env.CreateNamed(configMaps, metav1.ObjectMeta{Name: "after"})
		env.Delete(configMap(env, "before"), "")
		var got []string
		for _, ev := range Receive(t, events, 2) {
			got = append(got, fmt.Sprintf("%s %s/%s", ev.Op, ev.Object.Namespace, ev.Object.Name))
		}
		if want := []string{"create default/after", "delete default/before"}; !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
}

func TestReceiveSkipsProgress(t *testing.T) {
	events := make(chan *sqlstore.Event, 3)
	events <- &sqlstore.Event{Progress: true, Revision: 1}
	events <- &sqlstore.Event{Op: sqlstore.OpCreate, Revision: 2}
	if got := Receive(t, events, 1); len(got) != 1 || got[0].Revision != 2 {
		t.Fatalf("Receive = %+v, want the event of revision 2", got)
	}
}

// ServeWidgets serves the widgets CRD: Ref finds widgets, and they can be created.
func TestServeWidgets(t *testing.T) {
	env := New(t, sqltest.SQLiteDSN(t))
	widgets := env.ServeWidgets()
	widgets.Namespace = "default"
	widget := env.CreateNamed(widgets, metav1.ObjectMeta{Name: "w"})
	if widget.GetAPIVersion() != "example.com/v1" || widget.GetKind() != "Widget" {
		t.Fatalf("created widget %v", widget.Object)
	}
}

// fatalTB is a testing.TB whose Fatalf records its message and ends the goroutine, as
// testing's does, so that a helper's failure can be tested.
type fatalTB struct {
	testing.TB
	failed chan string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Context() context.Context { return context.Background() }

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failed <- fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure is the message helper fails with on a fatalTB.
func failure(helper func(t testing.TB)) string {
	tb := &fatalTB{failed: make(chan string, 1)}
	go func() {
		defer func() { tb.failed <- "" }() // no failure: Goexit never ran or Fatalf already sent
		helper(tb)
	}()
	return <-tb.failed
}

// Eventually returns once its condition holds, and fails the test, saying what it waited for,
// once its deadline passes; Receive fails when the watch ends early.
func TestHelpersFail(t *testing.T) {
	t.Parallel() // Eventually's deadline is ten seconds
	calls := 0
	if msg := failure(func(t testing.TB) { Eventually(t, "the third call", func() bool { calls++; return calls == 3 }) }); msg != "" || calls != 3 {
		t.Fatalf("Eventually of a condition that comes true: failed %q after %d calls", msg, calls)
	}
	if msg := failure(func(t testing.TB) { Eventually(t, "never", func() bool { return false }) }); msg != "timed out waiting until never" {
		t.Fatalf("Eventually of a condition that never holds: failed %q", msg)
	}
	closed := make(chan *sqlstore.Event, 1)
	closed <- &sqlstore.Event{Op: sqlstore.OpCreate}
	close(closed)
	if msg := failure(func(t testing.TB) { Receive(t, closed, 2) }); msg != "watch ended after 1 events" {
		t.Fatalf("Receive from an ended watch: failed %q", msg)
	}
}
