package e2e

import (
	"net/http"
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

// tokenConfig is a client configuration that authenticates with a bearer token and trusts the
// server's CA.
func (s *sqlkubeServer) tokenConfig(token string) *rest.Config {
	admin := s.restConfig()
	return &rest.Config{Host: admin.Host, BearerToken: token, QPS: -1,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.TLSClientConfig.CAData}}
}

func requestToken(t *testing.T, cs kubernetes.Interface, namespace, name string, spec authenticationv1.TokenRequestSpec) string {
	t.Helper()
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// TestServiceAccountTokens: every namespace gets a default ServiceAccount and the root CA; a
// TokenRequest token authenticates as its ServiceAccount, is refused what RBAC does not grant,
// and stops authenticating when the ServiceAccount is deleted; tokens for other audiences or
// bound to a deleted Secret are 401; bad requests get kube's errors.
func TestServiceAccountTokens(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		createNamespace(t, admin, "demo")
		eventually(t, 10*time.Second, "default ServiceAccount and kube-root-ca.crt in a new namespace", func() (bool, error) {
			_, errSA := admin.CoreV1().ServiceAccounts("demo").Get(ctx, "default", metav1.GetOptions{})
			cm, errCM := admin.CoreV1().ConfigMaps("demo").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return errSA == nil && errCM == nil && strings.HasPrefix(cm.Data["ca.crt"], "-----BEGIN CERTIFICATE-----"), nil
		})

		if _, err := admin.CoreV1().ServiceAccounts("demo").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		token := requestToken(t, admin, "demo", "bot", authenticationv1.TokenRequestSpec{})
		bot := kubernetes.NewForConfigOrDie(s.tokenConfig(token))
		review, err := bot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := review.Status.UserInfo; got.Username != "system:serviceaccount:demo:bot" ||
			strings.Join(got.Groups, ",") != "system:serviceaccounts,system:serviceaccounts:demo,system:authenticated" {
			t.Errorf("whoami: %+v", got)
		}
		_, err = bot.CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
		assertAPIError(t, err, forbidden("system:serviceaccount:demo:bot", "list", "configmaps", "demo"))

		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bot-view"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "bot"}}}
		if _, err := admin.RbacV1().RoleBindings("demo").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the bound view role lets the bot list", func() (bool, error) {
			_, err := bot.CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
			return err == nil, err
		})

		c := s.anonymousClient(t)
		other := requestToken(t, admin, "demo", "bot", authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}})
		assertStatus(t, get(t, c, s.URL()+"/api/v1/namespaces/demo/configmaps", "Authorization", "Bearer "+other).status(t), apierrors.NewUnauthorized("Unauthorized"))
		assertStatus(t, get(t, c, s.URL()+"/api/v1/namespaces/demo/configmaps", "Authorization", "Bearer "+token[:len(token)-4]+"AAAA").status(t), apierrors.NewUnauthorized("Unauthorized"))

		reviewed, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil || !reviewed.Status.Authenticated || reviewed.Status.User.Username != "system:serviceaccount:demo:bot" {
			t.Errorf("TokenReview: %+v, %v", reviewed.Status, err)
		}
		assertTokenRequestErrors(t, admin)
		if err := admin.CoreV1().ServiceAccounts("demo").Delete(ctx, "bot", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "a deleted ServiceAccount's token is refused", func() (bool, error) {
			r := get(t, c, s.URL()+"/api/v1/namespaces/demo/configmaps", "Authorization", "Bearer "+token)
			return r.code == http.StatusUnauthorized, nil
		})
	})
}

func assertTokenRequestErrors(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	short := int64(60)
	_, err := admin.CoreV1().ServiceAccounts("demo").CreateToken(ctx, "bot",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &short}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes") {
		t.Errorf("a 60-second token: %v", err)
	}
	_, err = admin.CoreV1().ServiceAccounts("demo").CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	assertAPIError(t, err, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), "nobody"))
}

// TestIssuerDiscovery: ServiceAccounts may read the issuer discovery documents, which point at
// the key set; anonymous requests may not.
func TestIssuerDiscovery(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "verifier"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		token := requestToken(t, admin, "default", "verifier", authenticationv1.TokenRequestSpec{})
		c := s.anonymousClient(t)
		r := get(t, c, s.URL()+"/.well-known/openid-configuration", "Authorization", "Bearer "+token)
		if r.code != http.StatusOK || !strings.Contains(string(r.body), `"jwks_uri":"https://kubernetes.default.svc.cluster.local/openid/v1/jwks"`) {
			t.Fatalf("openid-configuration: %d %s", r.code, r.body)
		}
		if r := get(t, c, s.URL()+"/openid/v1/jwks", "Authorization", "Bearer "+token); r.code != http.StatusOK || !strings.Contains(string(r.body), `"use":"sig"`) {
			t.Fatalf("jwks: %d %s", r.code, r.body)
		}
		if r := get(t, c, s.URL()+"/openid/v1/jwks"); r.code != http.StatusForbidden {
			t.Fatalf("anonymous jwks: %d, want 403", r.code)
		}
	})
}
