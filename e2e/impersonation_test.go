package e2e

import (
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// impersonating is a clientset of cfg's user acting as who.
func impersonating(t *testing.T, cfg *rest.Config, who rest.ImpersonationConfig) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = who
	return kubernetes.NewForConfigOrDie(cfg)
}

// TestImpersonation: kube's Impersonate-* headers, authorized for the real user: an admin acts
// as a ServiceAccount and as a user in a group, and what the impersonated identity may do is
// what can-i says; a ServiceAccount allowed to impersonate one user gets exactly that.
func TestImpersonation(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		createNamespace(t, admin, "demo")
		if _, err := admin.CoreV1().ServiceAccounts("demo").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(t, admin, "bot-view", "view", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "bot", Namespace: "demo"})
		bind(t, admin, "devs-edit", "edit", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"})

		bot := "system:serviceaccount:demo:bot"
		if out := s.mustKubectl(t, "", "auth", "can-i", "list", "configmaps", "-n", "demo", "--as", bot); strings.TrimSpace(out) != "yes" {
			t.Errorf("can-i list configmaps --as %s: %q", bot, out)
		}
		assertCanIMatchesReality(t, impersonating(t, s.restConfig(), rest.ImpersonationConfig{UserName: bot}))
		assertCanIMatchesReality(t, impersonating(t, s.restConfig(), rest.ImpersonationConfig{UserName: "alice", Groups: []string{"devs"}}))
		_, err := impersonating(t, s.restConfig(), rest.ImpersonationConfig{UserName: "alice"}).CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
		assertAPIError(t, err, forbidden("alice", "list", "configmaps", "demo"))
		if out := s.mustKubectl(t, "", "auth", "whoami", "--as", "alice", "--as-group", "devs", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"); out != `alice ["devs","system:authenticated"]` {
			t.Errorf("whoami --as alice --as-group devs: %q", out)
		}

		// The bot ServiceAccount may impersonate alice, and nobody else, nor any group or uid.
		botConfig := s.tokenConfig(requestToken(t, admin, "demo", "bot", authenticationv1.TokenRequestSpec{}))
		_, err = impersonating(t, botConfig, rest.ImpersonationConfig{UserName: "alice"}).CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
		assertAPIError(t, err, impersonationForbidden(bot, "list", "configmaps", "demo"))
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "impersonate-alice"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"alice"}}}}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bot-impersonates-alice"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "bot", Namespace: "demo"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the bot acts as alice", func() (bool, error) {
			review, err := impersonating(t, botConfig, rest.ImpersonationConfig{UserName: "alice"}).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err == nil && review.Status.UserInfo.Username == "alice", err
		})
		for _, who := range []rest.ImpersonationConfig{{UserName: "carol"}, {UserName: "alice", Groups: []string{"devs"}}, {UserName: "alice", UID: "1234"}} {
			_, err := impersonating(t, botConfig, who).CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "`+bot+`" cannot impersonate`) {
				t.Errorf("the bot as %+v: %v, want 403 naming the bot", who, err)
			}
		}

		// Groups without a user are refused before anything is authorized.
		r := s.do(t, "GET", "/api/v1/namespaces", nil, "Impersonate-Group", "devs")
		if r.code != 400 || !strings.Contains(string(r.body), "without impersonating a user name") {
			t.Errorf("Impersonate-Group alone: %d %s, want 400", r.code, r.body)
		}
	})
}

// bind binds clusterRole to subject in namespace demo.
func bind(t *testing.T, c kubernetes.Interface, name, clusterRole string, subject rbacv1.Subject) {
	t.Helper()
	_, err := c.RbacV1().RoleBindings("demo").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// impersonationForbidden is kube's 403 (constrained impersonation) when user may not act as
// anyone for verb on a core-group resource in namespace.
func impersonationForbidden(userName, verb, resource, namespace string) *apierrors.StatusError {
	return forbidden(userName, "impersonate-on:user-info:"+verb, resource, namespace)
}
