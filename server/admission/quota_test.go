package admission

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// kube's ResourceQuota plugin refuses a create beyond a quota's status.hard, read through the
// registry as soon as it is written, with kube's message.
func TestQuotaRefusesCreatesBeyondTheQuota(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.store(`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"full"},"spec":{"hard":{"count/configmaps":"1"}}}`)
	eventually(t, "the quota is followed", func() bool {
		q := h.chain.quotas
		q.mu.RLock()
		defer q.mu.RUnlock()
		return q.synced && q.quotas["default"] == 1
	})
	quotas := h.resource("", "v1", "resourcequotas")
	ctx := asAdmin(t.Context())
	ref := registry.Ref{Resource: quotas, Namespace: "default", Name: "full"}
	stored, err := h.registry.Get(ctx, ref, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quota := decodeStored(t, quotas, stored)
	if err := unstructured.SetNestedStringMap(quota.Object, map[string]string{"count/configmaps": "1"}, "status", "hard"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringMap(quota.Object, map[string]string{"count/configmaps": "1"}, "status", "used"); err != nil {
		t.Fatal(err)
	}
	ref.Subresource = "status"
	if _, _, err := h.registry.Update(ctx, ref, quota, &metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	configMaps := h.resource("", "v1", "configmaps")
	_, err = h.createAs(ctx, configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"over"}}`, false)
	want := `configmaps "over" is forbidden: exceeded quota: full, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("a ConfigMap beyond the quota: %v, want %s", err, want)
	}
}

// quotaNamespaces holds the namespaces of the quotas listed and created, forgets those whose
// last quota is deleted, counts a namespace a quota is being created in until it is seen, and
// answers "may" for all while it does not follow storage.
func TestQuotaNamespacesFollowTheQuotas(t *testing.T) {
	q := newQuotaNamespaces()
	if !q.mayHold("a") {
		t.Error("before the first list, a namespace may hold quotas")
	}
	q.Relisting()
	q.Listed(sqlstore.Object{Key: sqlstore.Key{Namespace: "a", Name: "one"}})
	q.Listed(sqlstore.Object{Key: sqlstore.Key{Namespace: "a", Name: "two"}})
	q.ListDone(5)
	event := func(op sqlstore.Op, namespace string) *sqlstore.Event {
		return &sqlstore.Event{Op: op, Object: sqlstore.Object{Key: sqlstore.Key{Namespace: namespace}}}
	}
	q.Changed(event(sqlstore.OpDelete, "a"))
	q.Changed(event(sqlstore.OpUpdate, "b"))
	if !q.mayHold("a") || q.mayHold("b") {
		t.Errorf("after the list, a delete in a and an update in b: a %v, b %v", q.mayHold("a"), q.mayHold("b"))
	}
	q.Changed(event(sqlstore.OpDelete, "a"))
	q.creating("b")
	if q.mayHold("a") || !q.mayHold("b") {
		t.Errorf("a's last quota deleted, one being created in b: a %v, b %v", q.mayHold("a"), q.mayHold("b"))
	}
	q.Changed(event(sqlstore.OpCreate, "b"))
	q.Changed(event(sqlstore.OpDelete, "b"))
	if q.mayHold("b") {
		t.Error("b's quota seen then deleted: b still may hold one")
	}
	q.WatchEnded()
	if !q.mayHold("c") {
		t.Error("after the watch ended, a namespace may hold quotas")
	}
}
