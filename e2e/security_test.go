package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sqlkube/sqlkube/server/pki"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// forbidden is kube-apiserver's 403 for user doing verb on a core-group resource in namespace.
func forbidden(userName, verb, resource, namespace string) *apierrors.StatusError {
	where := fmt.Sprintf("in the namespace %q", namespace)
	if namespace == "" {
		where = "at the cluster scope"
	}
	err := apierrors.NewForbidden(corev1.Resource(resource), "",
		fmt.Errorf("User %q cannot %s resource %q in API group \"\" %s", userName, verb, resource, where))
	err.ErrStatus.Message = fmt.Sprintf("%s is forbidden: User %q cannot %s resource %q in API group \"\" %s", resource, userName, verb, resource, where)
	return err
}

// userConfig is a client configuration for user in groups, with a client certificate minted by
// `sqlkube kubeconfig` from the server's CA.
func (s *sqlkubeServer) userConfig(t *testing.T, name string, groups ...string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.userKubeconfig(t, name, groups...))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	return cfg
}

// userKubeconfig mints a kubeconfig file for user in groups with `sqlkube kubeconfig`.
func (s *sqlkubeServer) userKubeconfig(t *testing.T, name string, groups ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	args := []string{"kubeconfig", "--cert-dir", s.pkiDir, "--user", name, "--server", s.URL(), "-o", path}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	if out, err := exec.Command(binary(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("sqlkube kubeconfig: %v\n%s", err, out)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("minted kubeconfig: %v, mode %v; want mode 0600", err, st.Mode().Perm())
	}
	return path
}

// anonymousClient trusts the server's CA and presents no credentials.
func (s *sqlkubeServer) anonymousClient(t *testing.T) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(s.pkiDir, pki.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
}

func get(t *testing.T, c *http.Client, url string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, header: resp.Header, body: body}
}

// TestAnonymousSeesOnlyPublicPaths: without credentials, the health and version paths answer
// (system:public-info-viewer); everything else is kube's 403; bad credentials are 401.
func TestAnonymousSeesOnlyPublicPaths(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		c := s.anonymousClient(t)
		for _, path := range []string{"/livez", "/readyz", "/healthz", "/version"} {
			if r := get(t, c, s.URL()+path); r.code != http.StatusOK {
				t.Errorf("anonymous GET %s: %d %s, want 200", path, r.code, r.body)
			}
		}
		assertStatus(t, get(t, c, s.URL()+"/api/v1/namespaces").status(t), forbidden("system:anonymous", "list", "namespaces", ""))
		assertStatus(t, get(t, c, s.URL()+"/api/v1/namespaces/default/secrets/x").status(t), forbiddenNamed("system:anonymous", "get", "secrets", "default", "x"))
		if r := get(t, c, s.URL()+"/api"); r.code != http.StatusForbidden {
			t.Errorf("anonymous discovery: %d, want 403", r.code)
		}
		unauthorized := apierrors.NewUnauthorized("Unauthorized")
		assertStatus(t, get(t, c, s.URL()+"/api/v1/namespaces", "Authorization", "Bearer not-a-token").status(t), unauthorized)
	})
}

func forbiddenNamed(userName, verb, resource, namespace, name string) *apierrors.StatusError {
	err := forbidden(userName, verb, resource, namespace)
	err.ErrStatus.Details.Name = name
	err.ErrStatus.Message = fmt.Sprintf("%s %q is forbidden: User %q cannot %s resource %q in API group \"\" in the namespace %q", resource, name, userName, verb, resource, namespace)
	return err
}

// TestClientCertificateFromAnotherCAIsRefused: a certificate the client CA did not sign is bad
// credentials, 401, not anonymous.
func TestClientCertificateFromAnotherCAIsRefused(t *testing.T) {
	s := startServer(t, sqltest.SQLiteDSN(t))
	other := pki.Dir(t.TempDir())
	ca, err := other.Ensure([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := ca.Kubeconfig(s.URL(), "mallory", []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSClientConfig.CAData, _ = os.ReadFile(filepath.Join(s.pkiDir, pki.CACertFile))
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("a certificate of another CA claiming system:masters: %v, want 401", err)
	}
}

// TestRoleBindingGrantsAndRevokes: a user is refused with kube's message, a Role and RoleBinding
// let it in for exactly the Role's verbs (and SelfSubjectAccessReview agrees with what really
// happens), and deleting the binding shuts it out again.
func TestRoleBindingGrantsAndRevokes(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		createNamespace(t, admin, "demo")
		bob := kubernetes.NewForConfigOrDie(s.userConfig(t, "bob", "devs"))
		_, err := bob.CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
		assertAPIError(t, err, forbidden("bob", "list", "configmaps", "demo"))

		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-rw"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "create"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}
		if _, err := admin.RbacV1().Roles("demo").Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "devs-cm"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-rw"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"}}}
		if _, err := admin.RbacV1().RoleBindings("demo").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "bob lists configmaps once bound", func() (bool, error) {
			_, err := bob.CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
			return err == nil, err
		})
		assertCanIMatchesReality(t, bob)

		if err := admin.RbacV1().RoleBindings("demo").Delete(ctx, "devs-cm", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "bob refused once unbound", func() (bool, error) {
			_, err := bob.CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
			return apierrors.IsForbidden(err), err
		})
	})
}

// assertCanIMatchesReality asks SelfSubjectAccessReview for a matrix of verbs and resources and
// checks each answer against the real request.
func assertCanIMatchesReality(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	tries := map[string]func(resource string) error{
		"list": func(resource string) error {
			if resource == "secrets" {
				_, err := c.CoreV1().Secrets("demo").List(ctx, metav1.ListOptions{})
				return err
			}
			_, err := c.CoreV1().ConfigMaps("demo").List(ctx, metav1.ListOptions{})
			return err
		},
		"create": func(resource string) error {
			if resource == "secrets" {
				_, err := c.CoreV1().Secrets("demo").Create(ctx, &corev1.Secret{ObjectMeta: cm.ObjectMeta}, metav1.CreateOptions{})
				return err
			}
			_, err := c.CoreV1().ConfigMaps("demo").Create(ctx, cm, metav1.CreateOptions{})
			return err
		},
		"deletecollection": func(resource string) error {
			if resource == "secrets" {
				return c.CoreV1().Secrets("demo").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			}
			return c.CoreV1().ConfigMaps("demo").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
	}
	for verb, try := range tries {
		for _, resource := range []string{"configmaps", "secrets"} {
			review, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: "demo", Verb: verb, Resource: resource}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = try(resource)
			if refused := apierrors.IsForbidden(err); refused == review.Status.Allowed {
				t.Errorf("can-i %s %s says allowed=%v, the request answered %v", verb, resource, review.Status.Allowed, err)
			}
		}
	}
}

// TestWhoAmI: SelfSubjectReview reports the certificate's user and groups, as kubectl auth
// whoami shows them.
func TestWhoAmI(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		bob := kubernetes.NewForConfigOrDie(s.userConfig(t, "bob", "devs", "qa"))
		review, err := bob.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A certificate's organizations come in DER order, not the order they were asked for.
		if info := review.Status.UserInfo; info.Username != "bob" || !slices.Equal(slices.Sorted(slices.Values(info.Groups)), []string{"devs", "qa", "system:authenticated"}) {
			t.Errorf("whoami: %+v, want bob in [devs qa system:authenticated]", info)
		}
		out := s.mustKubectl(t, "", "auth", "whoami")
		if !strings.Contains(out, "system:admin") || !strings.Contains(out, "system:masters") {
			t.Errorf("kubectl auth whoami with the admin kubeconfig:\n%s", out)
		}
	})
}

// TestTokenAuthFile: a static token from --token-auth-file authenticates as its user; an unknown
// token is 401.
func TestTokenAuthFile(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("s3cret-token,carol,uid-carol,\"ops,dev\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	forEachServerWith(t, []string{"--token-auth-file=" + tokens}, func(t *testing.T, s *sqlkubeServer) {
		c := s.anonymousClient(t)
		r := get(t, c, s.URL()+"/api/v1/namespaces", "Authorization", "Bearer s3cret-token")
		assertStatus(t, r.status(t), forbidden("carol", "list", "namespaces", ""))
		assertStatus(t, get(t, c, s.URL()+"/api/v1/namespaces", "Authorization", "Bearer wrong").status(t), apierrors.NewUnauthorized("Unauthorized"))
	})
}

// TestServingCertificateReload: a serving certificate replaced on disk is served to new
// connections without a restart.
func TestServingCertificateReload(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		if err := os.Remove(filepath.Join(s.pkiDir, pki.ServingCertFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := pki.Dir(s.pkiDir).Ensure([]string{"127.0.0.1", "reloaded.example"}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 90*time.Second, "the new serving certificate is served", func() (bool, error) {
			conn, err := tls.Dial("tcp", strings.TrimPrefix(s.URL(), "https://"), &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				return false, err
			}
			defer conn.Close()
			names := conn.ConnectionState().PeerCertificates[0].DNSNames
			return slices.Contains(names, "reloaded.example"), fmt.Errorf("serving %v", names)
		})
	})
}

// TestPlainHTTPIsAdmin: --plain-http serves plain HTTP, treats every request as an admin, and
// says so at start.
func TestPlainHTTPIsAdmin(t *testing.T) {
	s := startServer(t, sqltest.SQLiteDSN(t), plainHTTP)
	if !strings.HasPrefix(s.URL(), "http://") {
		t.Fatalf("URL %s, want http://", s.URL())
	}
	r := get(t, http.DefaultClient, s.URL()+"/api/v1/namespaces")
	if r.code != http.StatusOK {
		t.Fatalf("plain HTTP list: %d %s", r.code, r.body)
	}
	if !strings.Contains(s.log.String(), "--plain-http: serving plain HTTP") {
		t.Error("no warning at start")
	}
}

// TestEscalationIsRefused: a user allowed to write roles and bindings may grant only what it
// holds; more is kube's 403 naming what is missing.
func TestEscalationIsRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		createNamespace(t, admin, "demo")
		writer := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "rbac-writer"}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"create"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}},
			{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
		}}
		if _, err := admin.RbacV1().Roles("demo").Create(ctx, writer, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings("demo").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-writer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rbac-writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		carol := kubernetes.NewForConfigOrDie(s.userConfig(t, "carol"))
		held := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-get"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}
		eventually(t, 10*time.Second, "carol grants a rule she holds", func() (bool, error) {
			_, err := carol.RbacV1().Roles("demo").Create(ctx, held, metav1.CreateOptions{})
			return err == nil, err
		})
		more := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secret-delete"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}}
		_, err := carol.RbacV1().Roles("demo").Create(ctx, more, metav1.CreateOptions{})
		assertAPIError(t, err, apierrors.NewForbidden(rbacv1.Resource("roles"), "secret-delete", fmt.Errorf(
			"user \"carol\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"delete\"]}")))
		_, err = carol.RbacV1().RoleBindings("demo").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-admin"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"}}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is attempting to grant RBAC permissions not currently held") {
			t.Errorf("binding herself to admin: %v, want 403 naming the missing permissions", err)
		}
	})
}

// TestKubectlAuthCommands: kubectl's auth and token commands work against the secure default.
func TestKubectlAuthCommands(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		if out := s.mustKubectl(t, "", "auth", "can-i", "delete", "secrets", "-n", "default"); strings.TrimSpace(out) != "yes" {
			t.Errorf("kubectl auth can-i as admin: %q", out)
		}
		list := s.mustKubectl(t, "", "auth", "can-i", "--list", "-n", "default")
		if !strings.Contains(list, "*.*") {
			t.Errorf("kubectl auth can-i --list as admin:\n%s", list)
		}
		token := strings.TrimSpace(s.mustKubectl(t, "", "create", "token", "default", "-n", "default"))
		if strings.Count(token, ".") != 2 {
			t.Fatalf("kubectl create token printed %q, want a JWT", token)
		}
		r := get(t, s.anonymousClient(t), s.URL()+"/api/v1/namespaces/default/configmaps", "Authorization", "Bearer "+token)
		assertStatus(t, r.status(t), forbidden("system:serviceaccount:default:default", "list", "configmaps", "default"))
	})
}

// TestClusterRoleAggregation: a ClusterRole labelled to aggregate into view adds its rules to
// view (and so to edit and admin), and a user bound to view gains them.
func TestClusterRoleAggregation(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		admin := s.clientset()
		widgets := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widgets-view",
			Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}}}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, widgets, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, role := range []string{"view", "edit", "admin"} {
			eventually(t, 10*time.Second, role+" aggregates the widgets rule", func() (bool, error) {
				r, err := admin.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				return slices.ContainsFunc(r.Rules, func(rule rbacv1.PolicyRule) bool { return slices.Contains(rule.Resources, "widgets") }), nil
			})
		}
		if err := admin.RbacV1().ClusterRoles().Delete(ctx, "widgets-view", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "view drops the deleted role's rule", func() (bool, error) {
			r, err := admin.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
			return err == nil && !slices.ContainsFunc(r.Rules, func(rule rbacv1.PolicyRule) bool { return slices.Contains(rule.Resources, "widgets") }), err
		})
	})
}

// TestReviewsThroughDiscovery: a controller-runtime client finds the review kinds and the
// ServiceAccount token subresource through discovery, as it does on kube-apiserver.
func TestReviewsThroughDiscovery(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		c, err := client.New(s.restConfig(), client.Options{Scheme: scheme.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "secrets", Namespace: "default"}}}
		if err := c.Create(ctx, review); err != nil || !review.Status.Allowed {
			t.Errorf("SelfSubjectAccessReview through controller-runtime: %v, allowed %v", err, review.Status.Allowed)
		}
		token := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}}}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}}
		if err := c.SubResource("token").Create(ctx, sa, token); err != nil || strings.Count(token.Status.Token, ".") != 2 {
			t.Errorf("TokenRequest through controller-runtime: %v, token %q", err, token.Status.Token)
		}
		out := s.mustKubectl(t, "", "api-resources", "--api-group", "authorization.k8s.io", "-o", "name")
		for _, want := range []string{"localsubjectaccessreviews.authorization.k8s.io", "selfsubjectaccessreviews.authorization.k8s.io", "selfsubjectrulesreviews.authorization.k8s.io", "subjectaccessreviews.authorization.k8s.io"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl api-resources does not list %s:\n%s", want, out)
			}
		}
	})
}
