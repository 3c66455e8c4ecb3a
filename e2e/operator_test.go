package e2e

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestOperatorAsServiceAccount: an unmodified controller-runtime manager, running as a
// ServiceAccount with a narrow Role in its namespace and leader election on a Lease, reconciles;
// what its Role leaves out stays forbidden.
func TestOperatorAsServiceAccount(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		createNamespace(t, admin, "app")
		if _, err := admin.CoreV1().ServiceAccounts("app").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "operator"}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get", "list", "watch", "update", "patch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
			{Verbs: []string{"get", "create", "update"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}},
			{Verbs: []string{"create", "patch"}, APIGroups: []string{""}, Resources: []string{"events"}},
		}}
		if _, err := admin.RbacV1().Roles("app").Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings("app").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "operator"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "operator"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "operator"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		token := requestToken(t, admin, "app", "operator", authenticationv1.TokenRequestSpec{})
		startOperator(t, s, token)

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "input"}, Data: map[string]string{"want": "blue"}}
		if _, err := admin.CoreV1().ConfigMaps("app").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the operator reconciles the configmap", func() (bool, error) {
			got, err := admin.CoreV1().ConfigMaps("app").Get(ctx, "input", metav1.GetOptions{})
			return err == nil && got.Annotations["reconciled"] == "blue", err
		})
		if _, err := admin.CoordinationV1().Leases("app").Get(ctx, "operator-lock", metav1.GetOptions{}); err != nil {
			t.Errorf("leader election lease: %v", err)
		}
		operator, err := client.New(s.tokenConfig(token), client.Options{Scheme: scheme.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		err = operator.List(ctx, &corev1.SecretList{}, client.InNamespace("app"))
		if !apierrors.IsForbidden(err) {
			t.Errorf("the operator lists secrets: %v, want 403", err)
		}
	})
}

// startOperator runs a manager whose one controller copies each configmap's data["want"] to its
// "reconciled" annotation.
func startOperator(t *testing.T, s *sqlkubeServer, token string) {
	t.Helper()
	mgr, err := ctrl.NewManager(s.tokenConfig(token), ctrl.Options{
		Scheme:                  scheme.Scheme,
		Cache:                   cache.Options{DefaultNamespaces: map[string]cache.Config{"app": {}}},
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "operator-lock",
		LeaderElectionNamespace: "app",
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each backend's subtest runs its own manager in this process: their controllers share a name.
	skipNameValidation := true
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
		WithOptions(controller.Options{SkipNameValidation: &skipNameValidation}).Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var cm corev1.ConfigMap
		if err := mgr.GetClient().Get(ctx, req.NamespacedName, &cm); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if cm.Data["want"] == "" || cm.Annotations["reconciled"] == cm.Data["want"] {
			return reconcile.Result{}, nil
		}
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations["reconciled"] = cm.Data["want"]
		return reconcile.Result{}, mgr.GetClient().Update(ctx, &cm)
	}))
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, mgr)
}

// runManager runs mgr until the test ends, then stops it and checks that it stopped cleanly.
func runManager(t *testing.T, mgr ctrl.Manager) {
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-stopped; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}
