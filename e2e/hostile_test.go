package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

const (
	hostileNamespace    = "hostile"
	hostileConfigMaps   = "/api/v1/namespaces/" + hostileNamespace + "/configmaps"
	clusterRoles        = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	clusterRoleBindings = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
	hostileRoleBindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + hostileNamespace + "/rolebindings"
	// answerBound is how long any hostile request may take to be answered.
	answerBound = 5 * time.Second
	// rssBound is the resident memory the server may reach after the whole suite.
	rssBound = 512 << 10 // kB
	maxInt64 = "9223372036854775807"
)

var clusterRolesResource = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}

// hostileRequest is one request an attacker would try, and what kube-apiserver answers.
type hostileRequest struct {
	name    string
	method  string
	path    string // already escaped, as it goes on the wire
	body    []byte
	headers []string
	code    int
	// want is kube-apiserver's whole Status, when the answer is one and its text is known;
	// wantPrefix when the message ends in build-specific detail.
	want       *apierrors.StatusError
	wantPrefix *prefixStatus
	// stream: the answer is a watch, checked up to its status line and then closed.
	stream bool
}

// nameInvalid is kube-apiserver's 400 for a path's name that its storage cannot make a key of.
func nameInvalid(name, rule string) *apierrors.StatusError {
	return apierrors.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", name, rule))
}

// bindingJSON is a binding named for hostileNamespace (rb, or hostile-crb cluster-wide) of the
// ClusterRole role to the user mallory.
func bindingJSON(kind, namespace, role string) []byte {
	name := "rb"
	if namespace == "" {
		name = hostileNamespace + "-crb"
	}
	return []byte(fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":%q,"metadata":{"name":%q,"namespace":%q},`+
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":%q},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"mallory"}]}`,
		kind, name, namespace, role))
}

// roleRefImmutable is kube-apiserver's 422 for a new roleRef of a kind of binding.
func roleRefImmutable(kind, role string) *apierrors.StatusError {
	name := "rb"
	if kind == "ClusterRoleBinding" {
		name = hostileNamespace + "-crb"
	}
	internal := struct{ APIGroup, Kind, Name string }{rbacv1.GroupName, "ClusterRole", role}
	return apierrors.NewInvalid(schema.GroupKind{Group: rbacv1.GroupName, Kind: kind}, name,
		field.ErrorList{field.Invalid(field.NewPath("roleRef"), internal, validation.FieldImmutableErrorMsg)})
}

// notFoundNotUTF8 is kube-apiserver's 404 for a name that is not UTF-8, as it reaches the
// client: the message quotes the bytes, JSON turns each invalid one of the name into U+FFFD.
func notFoundNotUTF8(gr schema.GroupResource, name string) *apierrors.StatusError {
	err := apierrors.NewNotFound(gr, name)
	err.ErrStatus.Details.Name = strings.Repeat("\uFFFD", len(name))
	return err
}

// optionsError is kube-apiserver's 422 for invalid options of kind.
func optionsError(kind string, errs field.ErrorList) *apierrors.StatusError {
	return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
}

func hostileRequests() []hostileRequest {
	nul, notUTF8 := "a\x00b", "\xff\xfe"
	cmBody := func(name string) []byte {
		meta, _ := json.Marshal(map[string]string{"name": name})
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":` + string(meta) + `}`)
	}
	longName := strings.Repeat("n", 5000)
	longManager := strings.Repeat("m", 200)
	sqlText := "x'%20OR%20'1'%3D'1'%20--"
	return []hostileRequest{
		// Numbers at and past the edges of int64.
		{name: "limit of MaxInt64", method: "GET", path: hostileConfigMaps + "?limit=" + maxInt64, code: 200},
		{name: "limit of MaxInt64 across namespaces", method: "GET", path: "/api/v1/configmaps?limit=" + maxInt64, code: 200},
		{name: "negative limit", method: "GET", path: hostileConfigMaps + "?limit=-5", code: 200},
		{name: "limit past int64", method: "GET", path: hostileConfigMaps + "?limit=99999999999999999999", code: 400,
			wantPrefix: &prefixStatus{400, metav1.StatusReasonBadRequest, "strconv.ParseInt: parsing"}},
		{name: "resourceVersion past uint64", method: "GET", path: hostileConfigMaps + "?resourceVersion=99999999999999999999", code: 400},
		{name: "negative gracePeriodSeconds", method: "DELETE", path: hostileConfigMaps + "/absent?gracePeriodSeconds=-9223372036854775808", code: 404,
			want: apierrors.NewNotFound(configMaps, "absent")},
		{name: "gracePeriodSeconds of MaxInt64", method: "DELETE", path: hostileConfigMaps + "/absent?gracePeriodSeconds=" + maxInt64, code: 404,
			want: apierrors.NewNotFound(configMaps, "absent")},
		{name: "watch timeoutSeconds of MaxInt64", method: "GET", path: hostileConfigMaps + "?watch=1&timeoutSeconds=" + maxInt64, code: 200, stream: true},
		{name: "watch from a future resourceVersion", method: "GET", path: hostileConfigMaps + "?watch=1&resourceVersion=" + maxInt64, code: 200, stream: true},

		// Names and namespaces that cannot be keys.
		{name: "get a name with NUL", method: "GET", path: hostileConfigMaps + "/a%00b", code: 404, want: apierrors.NewNotFound(configMaps, nul)},
		{name: "get a name not UTF-8", method: "GET", path: hostileConfigMaps + "/%ff%fe", code: 404, want: notFoundNotUTF8(configMaps, notUTF8)},
		{name: "get in a namespace with NUL", method: "GET", path: "/api/v1/namespaces/a%00b/configmaps/x", code: 404, want: apierrors.NewNotFound(configMaps, "x")},
		{name: "list a namespace not UTF-8", method: "GET", path: "/api/v1/namespaces/%ff%fe/configmaps", code: 200},
		{name: "update a name with NUL", method: "PUT", path: hostileConfigMaps + "/a%00b", body: cmBody(nul),
			headers: []string{"Content-Type", "application/json"}, code: 404, want: apierrors.NewNotFound(configMaps, nul)},
		{name: "merge-patch a name with NUL", method: "PATCH", path: hostileConfigMaps + "/a%00b", body: []byte(`{}`),
			headers: []string{"Content-Type", "application/merge-patch+json"}, code: 404, want: apierrors.NewNotFound(configMaps, nul)},
		{name: "apply a name with NUL", method: "PATCH", path: hostileConfigMaps + "/a%00b?fieldManager=m", body: cmBody(nul),
			headers: []string{"Content-Type", "application/apply-patch+yaml"}, code: 422, want: invalidName(configMapKind, nul, validation.NameIsDNSSubdomain)},
		{name: "delete a name not UTF-8", method: "DELETE", path: hostileConfigMaps + "/%ff%fe", code: 404, want: notFoundNotUTF8(configMaps, notUTF8)},
		{name: "deletecollection in a namespace with NUL", method: "DELETE", path: "/api/v1/namespaces/a%00b/configmaps", code: 200},
		{name: "get a namespace with NUL", method: "GET", path: "/api/v1/namespaces/a%00b", code: 404, want: apierrors.NewNotFound(namespaces, nul)},
		{name: "delete a namespace not UTF-8", method: "DELETE", path: "/api/v1/namespaces/%ff%fe", code: 404, want: notFoundNotUTF8(namespaces, notUTF8)},
		{name: "get a clusterrole with NUL", method: "GET", path: clusterRoles + "/a%00b", code: 404, want: apierrors.NewNotFound(clusterRolesResource, nul)},
		{name: "watch a namespace with NUL from the start", method: "GET", path: "/api/v1/namespaces/a%00b/configmaps?watch=1&resourceVersion=1", code: 200, stream: true},
		{name: "get a name with %", method: "GET", path: hostileConfigMaps + "/%25", code: 400, want: nameInvalid("%", "may not contain '%'")},
		{name: "update a name with %", method: "PUT", path: hostileConfigMaps + "/a%25b", body: cmBody("a%b"),
			headers: []string{"Content-Type", "application/json"}, code: 400, want: nameInvalid("a%b", "may not contain '%'")},
		{name: "patch a name with %", method: "PATCH", path: hostileConfigMaps + "/%25", body: []byte(`{}`),
			headers: []string{"Content-Type", "application/merge-patch+json"}, code: 400, want: nameInvalid("%", "may not contain '%'")},
		{name: "delete a clusterrole named %", method: "DELETE", path: clusterRoles + "/%25", code: 400, want: nameInvalid("%", "may not contain '%'")},
		{name: "get a namespace named %", method: "GET", path: "/api/v1/namespaces/%25", code: 400, want: nameInvalid("%", "may not contain '%'")},
		{name: "get a name ..", method: "GET", path: hostileConfigMaps + "/..", code: 400, want: nameInvalid("..", "may not be '..'")},
		{name: "delete a clusterrole named .", method: "DELETE", path: clusterRoles + "/.", code: 400, want: nameInvalid(".", "may not be '.'")},
		{name: "create a clusterrole named with NUL", method: "POST", path: clusterRoles, body: []byte(`{"metadata":{"name":"a\u0000b"}}`),
			headers: []string{"Content-Type", "application/json"}, code: 400,
			// kube-apiserver stores it (RBAC names need only be path segments); PostgreSQL cannot.
			want: apierrors.NewBadRequest(`clusterroles.rbac.authorization.k8s.io "a\x00b": a name or namespace must be valid UTF-8 without NUL to be stored`)},
		{name: "a name with an escaped slash is two segments", method: "GET", path: hostileConfigMaps + "/a%2Fb", code: 404},
		{name: "get a very long name", method: "GET", path: hostileConfigMaps + "/" + longName, code: 404, want: apierrors.NewNotFound(configMaps, longName)},
		{name: "get a unicode name", method: "GET", path: hostileConfigMaps + "/%E2%98%83", code: 404, want: apierrors.NewNotFound(configMaps, "☃")},

		// Selectors and tokens that carry SQL, NUL or bulk.
		{name: "field selector with SQL text", method: "GET", path: hostileConfigMaps + "?fieldSelector=metadata.name%3D" + "x'%20OR%20name%20LIKE%20'%25'%20--", code: 200},
		{name: "field selector with an unescaped =", method: "GET", path: hostileConfigMaps + "?fieldSelector=metadata.name%3D" + sqlText, code: 400,
			want: apierrors.NewBadRequest("invalid field selector: unescaped character in value: 61")},
		{name: "field selector with NUL", method: "GET", path: "/api/v1/configmaps?fieldSelector=metadata.namespace%3Da%00b", code: 200},
		{name: "label selector with SQL text", method: "GET", path: hostileConfigMaps + "?labelSelector=a%3D" + sqlText, code: 400,
			wantPrefix: &prefixStatus{400, metav1.StatusReasonBadRequest, "unable to parse requirement: "}},
		{name: "huge label selector", method: "GET", path: hostileConfigMaps + "?labelSelector=" + strings.Repeat("a", 100000), code: 400,
			wantPrefix: &prefixStatus{400, metav1.StatusReasonBadRequest, "unable to parse requirement: "}},
		{name: "garbage continue token", method: "GET", path: hostileConfigMaps + "?limit=1&continue=%00%ff", code: 400,
			wantPrefix: &prefixStatus{400, metav1.StatusReasonBadRequest, "invalid continue token: "}},
		{name: "continue token naming a key with NUL", method: "GET", path: hostileConfigMaps + "?limit=1&continue=" + craftedContinue(hostileNamespace+"/a\x00b"), code: 400,
			wantPrefix: &prefixStatus{400, metav1.StatusReasonBadRequest, "invalid continue token: "}},

		// A binding's roleRef cannot change: kube's validation prints the value of its internal
		// type, whose fields have no JSON names.
		{name: "change a RoleBinding's roleRef", method: "PUT", path: hostileRoleBindings + "/rb", body: bindingJSON("RoleBinding", hostileNamespace, "edit"),
			headers: []string{"Content-Type", "application/json"}, code: 422, want: roleRefImmutable("RoleBinding", "edit")},
		{name: "change a ClusterRoleBinding's roleRef", method: "PUT", path: clusterRoleBindings + "/" + hostileNamespace + "-crb", body: bindingJSON("ClusterRoleBinding", "", "edit"),
			headers: []string{"Content-Type", "application/json"}, code: 422, want: roleRefImmutable("ClusterRoleBinding", "edit")},

		// Options.
		{name: "fieldManager too long", method: "POST", path: hostileConfigMaps + "?fieldManager=" + longManager, body: cmBody("fm"),
			headers: []string{"Content-Type", "application/json"}, code: 422,
			want: optionsError("CreateOptions", metav1validation.ValidateCreateOptions(&metav1.CreateOptions{FieldManager: longManager}))},
		{name: "fieldManager with NUL", method: "POST", path: hostileConfigMaps + "?fieldManager=%00", body: cmBody("fm"),
			headers: []string{"Content-Type", "application/json"}, code: 422,
			want: optionsError("CreateOptions", metav1validation.ValidateCreateOptions(&metav1.CreateOptions{FieldManager: "\x00"}))},
		{name: "dryRun garbage", method: "POST", path: hostileConfigMaps + "?dryRun=%ff", body: cmBody("dr"),
			headers: []string{"Content-Type", "application/json"}, code: 422,
			want: optionsError("CreateOptions", metav1validation.ValidateCreateOptions(&metav1.CreateOptions{DryRun: []string{"\xff"}}))},
		{name: "propagationPolicy garbage", method: "DELETE", path: hostileConfigMaps + "/absent?propagationPolicy=%00", code: 422,
			want: optionsError("DeleteOptions", metav1validation.ValidateDeleteOptions(&metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletionPropagation("\x00"))}))},

		// Headers and bodies.
		{name: "Content-Type garbage", method: "POST", path: hostileConfigMaps, body: cmBody("ct"), headers: []string{"Content-Type", `a/b; c="`}, code: 415,
			wantPrefix: &prefixStatus{415, metav1.StatusReasonUnsupportedMediaType, "the body of the request was in an unknown format - accepted media types include: "}},
		{name: "Accept garbage", method: "GET", path: hostileConfigMaps, headers: []string{"Accept", "application/json;as=Table;v=v9;g=x"}, code: 406,
			wantPrefix: &prefixStatus{406, metav1.StatusReasonNotAcceptable, "only the following media types are accepted: "}},
		// A header over the server's limit is refused by the HTTP/2 client itself; one just
		// under it must cost the server nothing.
		{name: "large header", method: "GET", path: hostileConfigMaps, headers: []string{"X-Junk", strings.Repeat("j", 900<<10)}, code: 200},
		{name: "a selector pair with ; is dropped, as Go's query parser drops it", method: "GET",
			path: hostileConfigMaps + "?labelSelector=a%3Db;DROP%20TABLE%20objects", code: 200},
		{name: "malformed update body", method: "PUT", path: hostileConfigMaps + "/x", body: []byte(`{"metadata":`),
			headers: []string{"Content-Type", "application/json"}, code: 400},
		{name: "JSON patch of an unknown op", method: "PATCH", path: hostileConfigMaps + "/absent", body: []byte(`[{"op":"explode","path":"/x"}]`),
			headers: []string{"Content-Type", "application/json-patch+json"}, code: 404, want: apierrors.NewNotFound(configMaps, "absent")},
	}
}

// craftedContinue is a continue token of the list of hostileNamespace's configmaps whose last key
// is start: what a client forging tokens would send.
func craftedContinue(start string) string {
	data, _ := json.Marshal(map[string]any{"v": "meta.k8s.io/v1", "rv": 1, "start": start, "resource": "configmaps", "namespace": hostileNamespace})
	return base64.RawURLEncoding.EncodeToString(data)
}

// waitForNamespaceKeeper waits until the server has given namespace its own objects, so that
// the snapshot taken next does not change by itself.
func waitForNamespaceKeeper(t *testing.T, s *sqlkubeServer, namespace string) {
	t.Helper()
	eventually(t, 10*time.Second, "default ServiceAccount and kube-root-ca.crt in "+namespace, func() (bool, error) {
		_, errSA := s.clientset().CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		_, errCM := s.clientset().CoreV1().ConfigMaps(namespace).Get(ctx, rootCAConfigMap, metav1.GetOptions{})
		return errSA == nil && errCM == nil, nil
	})
}

// TestHostileInput sends what an attacker would try at every entry point (path segments, query
// parameters, selectors, headers, bodies, for each verb) and checks each answer's status (and
// Status where kube-apiserver's is known), that it comes within answerBound, that the server's
// memory stays bounded, and that nothing stored changed.
func TestHostileInput(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		createNamespace(t, s.clientset(), hostileNamespace)
		if resp := s.do(t, "POST", hostileConfigMaps, []byte(`{"metadata":{"name":"victim"},"data":{"k":"v"}}`), "Content-Type", "application/json"); resp.code != http.StatusCreated {
			t.Fatalf("create victim: %d %s", resp.code, resp.body)
		}
		for path, body := range map[string][]byte{hostileRoleBindings: bindingJSON("RoleBinding", hostileNamespace, "view"), clusterRoleBindings: bindingJSON("ClusterRoleBinding", "", "view")} {
			if resp := s.do(t, "POST", path, body, "Content-Type", "application/json"); resp.code != http.StatusCreated {
				t.Fatalf("create a binding: %d %s", resp.code, resp.body)
			}
		}
		waitForNamespaceKeeper(t, s, hostileNamespace)
		before := storedSnapshot(t, s)
		for _, tc := range hostileRequests() {
			t.Run(tc.name, func(t *testing.T) { checkHostile(t, s, tc) })
		}
		// kubectl pages with the chunk size as the limit: the largest it takes is no limit.
		if out := s.mustKubectl(t, "", "get", "configmaps", "-n", hostileNamespace, "--chunk-size="+maxInt64, "-o", "name"); out != "configmap/"+rootCAConfigMap+"\nconfigmap/victim\n" {
			t.Errorf("kubectl get --chunk-size=%s: %q", maxInt64, out)
		}
		if after := storedSnapshot(t, s); after != before {
			t.Errorf("stored objects changed:\nbefore %s\nafter  %s", before, after)
		}
		rss := processMemory(t, s.proc.cmd.Process.Pid)["VmRSS"]
		t.Logf("server VmRSS after the hostile suite: %d MiB", rss>>10)
		if rss > rssBound {
			t.Errorf("server VmRSS %d kB after the hostile suite, want at most %d kB", rss, rssBound)
		}
	})
}

// checkHostile sends one request and checks its answer.
func checkHostile(t *testing.T, s *sqlkubeServer, tc hostileRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), answerBound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, tc.method, s.URL()+tc.path, bytes.NewReader(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	for i := 0; i+1 < len(tc.headers); i += 2 {
		req.Header.Set(tc.headers[i], tc.headers[i+1])
	}
	start := time.Now()
	resp, err := s.httpClient().Do(req)
	if err != nil {
		t.Fatalf("no answer within %v: %v", answerBound, err)
	}
	defer resp.Body.Close()
	if tc.stream {
		if resp.StatusCode != tc.code {
			t.Errorf("watch answered %d, want %d", resp.StatusCode, tc.code)
		}
		return // the stream is closed with the context; the status line came within the bound
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatalf("answer not read within %v: %v", answerBound, err)
	}
	t.Logf("%d in %v", resp.StatusCode, time.Since(start).Round(time.Millisecond))
	got := response{code: resp.StatusCode, header: resp.Header, body: body.Bytes()}
	if got.code != tc.code {
		t.Fatalf("answered %d, want %d: %.300s", got.code, tc.code, got.body)
	}
	switch {
	case tc.want != nil:
		assertStatus(t, got.status(t), tc.want)
	case tc.wantPrefix != nil:
		st := got.status(t)
		assertStatusPrefix(t, st, tc.wantPrefix.code, tc.wantPrefix.reason, tc.wantPrefix.message)
	}
}

// storedSnapshot is every object of the collections hostile requests aim at, as
// "resource namespace/name@resourceVersion" lines.
func storedSnapshot(t *testing.T, s *sqlkubeServer) string {
	t.Helper()
	var lines []string
	for _, collection := range []string{"/api/v1/namespaces", "/api/v1/configmaps", "/api/v1/secrets", "/api/v1/serviceaccounts",
		clusterRoles, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
		"/apis/rbac.authorization.k8s.io/v1/roles", "/apis/rbac.authorization.k8s.io/v1/rolebindings"} {
		resp := s.do(t, "GET", collection, nil, "Accept", "application/json")
		var list struct {
			Items []struct{ Metadata metav1.ObjectMeta }
		}
		if resp.code != http.StatusOK || json.Unmarshal(resp.body, &list) != nil {
			t.Fatalf("list %s: %d %.300s", collection, resp.code, resp.body)
		}
		for _, item := range list.Items {
			lines = append(lines, fmt.Sprintf("%s %s/%s@%s", collection, item.Metadata.Namespace, item.Metadata.Name, item.Metadata.ResourceVersion))
		}
	}
	return strings.Join(lines, "\n")
}
