package e2e

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// auditPolicy records secrets at Metadata without their RequestReceived stage, configmaps in
// namespace audited with requests and responses (no managedFields), no health checks, and
// everything else at Metadata.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/readyz*", "/livez*", "/healthz*"]
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
  omitStages: ["RequestReceived"]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
  namespaces: ["audited"]
  omitManagedFields: true
- level: Metadata
`

// writeTestFile writes content to a new file in a temporary directory and returns its path.
func writeTestFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// auditEvents are the events of an audit log, by audit ID, in the order they were written.
type auditEvents map[string][]auditv1.Event

func readAuditLog(t *testing.T, path string) auditEvents {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events := auditEvents{}
	lines := bufio.NewScanner(bytes.NewReader(data))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line %q: %v", lines.Text(), err)
		}
		events[string(ev.AuditID)] = append(events[string(ev.AuditID)], ev)
	}
	return events
}

// stages are the stages of events, in order.
func stages(events []auditv1.Event) []auditv1.Stage {
	var out []auditv1.Stage
	for _, ev := range events {
		out = append(out, ev.Stage)
	}
	return out
}

// auditedRequest is a request sent and the events it must leave: stages, and the fields of the
// last event.
type auditedRequest struct {
	name      string
	auditID   string
	stages    []auditv1.Stage
	level     auditv1.Level
	verb      string
	user      string
	objectRef *auditv1.ObjectReference
	code      int32
}

// check compares what was recorded for the request with what it must be.
func (want auditedRequest) check(t *testing.T, events []auditv1.Event) {
	t.Helper()
	if got := stages(events); !slices.Equal(got, want.stages) {
		t.Errorf("%s: stages %v, want %v", want.name, got, want.stages)
		return
	}
	last := events[len(events)-1]
	for _, ev := range events {
		if ev.Verb != want.verb || ev.User.Username != want.user || ev.Level != want.level {
			t.Errorf("%s: %s event: verb %q, user %q, level %q; want %q, %q, %q", want.name, ev.Stage, ev.Verb, ev.User.Username, ev.Level, want.verb, want.user, want.level)
		}
	}
	if want.objectRef != nil && (last.ObjectRef == nil || *last.ObjectRef != *want.objectRef) {
		t.Errorf("%s: objectRef %+v, want %+v", want.name, last.ObjectRef, want.objectRef)
	}
	if last.ResponseStatus == nil || last.ResponseStatus.Code != want.code {
		t.Errorf("%s: responseStatus %+v, want code %d", want.name, last.ResponseStatus, want.code)
	}
}

// waitForAuditEvents waits until every request has all its events in the log, and returns them.
func waitForAuditEvents(t *testing.T, path string, requests []auditedRequest) auditEvents {
	t.Helper()
	var events auditEvents
	eventually(t, 10*time.Second, "every request's events in the audit log", func() (bool, error) {
		events = readAuditLog(t, path)
		for _, r := range requests {
			if len(events[r.auditID]) < len(r.stages) {
				return false, nil
			}
		}
		return true, nil
	})
	return events
}

// auditID is the Audit-Id header of an answer, which every answer has.
func (r response) auditID(t *testing.T) string {
	t.Helper()
	id := r.header.Get("Audit-Id")
	if id == "" {
		t.Errorf("answer %d has no Audit-Id header", r.code)
	}
	return id
}

func configMapRef(name string) *auditv1.ObjectReference {
	return &auditv1.ObjectReference{Resource: "configmaps", Namespace: "audited", Name: name, APIVersion: "v1"}
}

// TestAuditLog: kube's audit policy and log: every request's stages and fields as kube-apiserver
// records them, with the Audit-Id the answer carried; Secrets at Metadata level leave no trace of
// their data; RequestResponse records the objects sent and answered; an impersonated request
// names both users; a failed authentication is recorded.
func TestAuditLog(t *testing.T) {
	policy := writeTestFile(t, "policy.yaml", auditPolicy)
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		logPath := filepath.Join(t.TempDir(), "audit", "audit.log")
		s := startServer(t, dsn, "--audit-policy-file", policy, "--audit-log-path", logPath)
		completed := []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete}
		var requests []auditedRequest
		send := func(want auditedRequest, method, path, body string, headers ...string) response {
			t.Helper()
			r := s.do(t, method, path, []byte(body), append([]string{"Content-Type", "application/json"}, headers...)...)
			if r.code != int(want.code) {
				t.Fatalf("%s: %d %s, want %d", want.name, r.code, r.body, want.code)
			}
			want.auditID = r.auditID(t)
			if want.stages == nil {
				want.stages = completed
			}
			if want.user == "" {
				want.user = "system:admin"
			}
			requests = append(requests, want)
			return r
		}

		send(auditedRequest{name: "create namespace", level: auditv1.LevelMetadata, verb: "create", code: 201,
			objectRef: &auditv1.ObjectReference{Resource: "namespaces", Name: "audited", APIVersion: "v1"}},
			"POST", "/api/v1/namespaces", `{"metadata":{"name":"audited"}}`)
		const cms = "/api/v1/namespaces/audited/configmaps"
		rr := auditv1.LevelRequestResponse
		send(auditedRequest{name: "create configmap", level: rr, verb: "create", code: 201, objectRef: configMapRef("cm")},
			"POST", cms, `{"metadata":{"name":"cm"},"data":{"k":"v"}}`)
		send(auditedRequest{name: "get configmap", level: rr, verb: "get", code: 200, objectRef: configMapRef("cm")}, "GET", cms+"/cm", "")
		send(auditedRequest{name: "list configmaps", level: rr, verb: "list", code: 200, objectRef: configMapRef("")}, "GET", cms, "")
		send(auditedRequest{name: "watch configmaps", level: rr, verb: "watch", code: 200, objectRef: configMapRef(""),
			stages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StageResponseComplete}},
			"GET", cms+"?watch=true&timeoutSeconds=1", "")
		send(auditedRequest{name: "impersonated list", level: rr, verb: "list", code: 200, objectRef: configMapRef("")},
			"GET", cms, "", "Impersonate-User", "alice", "Impersonate-Group", "system:masters")
		send(auditedRequest{name: "delete configmap", level: rr, verb: "delete", code: 200, objectRef: configMapRef("cm")}, "DELETE", cms+"/cm", "")
		send(auditedRequest{name: "missing configmap", level: rr, verb: "get", code: 404, objectRef: configMapRef("cm")}, "GET", cms+"/cm", "")
		secretRef := &auditv1.ObjectReference{Resource: "secrets", Namespace: "audited", Name: "s", APIVersion: "v1"}
		onlyComplete := []auditv1.Stage{auditv1.StageResponseComplete}
		const secretData = "c2VjcmV0LXZhbHVl" // "secret-value"
		send(auditedRequest{name: "create secret", level: auditv1.LevelMetadata, verb: "create", code: 201, objectRef: secretRef, stages: onlyComplete},
			"POST", "/api/v1/namespaces/audited/secrets", `{"metadata":{"name":"s"},"data":{"password":"`+secretData+`"}}`)
		send(auditedRequest{name: "get secret", level: auditv1.LevelMetadata, verb: "get", code: 200, objectRef: secretRef, stages: onlyComplete},
			"GET", "/api/v1/namespaces/audited/secrets/s", "")
		// A client's own Audit-Id is kept, as kube-apiserver keeps it.
		if r := send(auditedRequest{name: "client's audit ID", level: auditv1.LevelMetadata, verb: "get", code: 200},
			"GET", "/api/v1/namespaces/audited", "", "Audit-Id", "client-chosen-id"); r.auditID(t) != "client-chosen-id" {
			t.Errorf("Audit-Id %q, want the client's", r.auditID(t))
		}
		// Credentials no authenticator accepts: one ResponseStarted event, without a user.
		unauthorized := get(t, s.anonymousClient(t), s.URL()+cms, "Authorization", "Bearer not-a-token")
		requests = append(requests, auditedRequest{name: "401", auditID: unauthorized.auditID(t), level: auditv1.LevelRequestResponse,
			verb: "list", code: 401, objectRef: configMapRef(""), stages: []auditv1.Stage{auditv1.StageResponseStarted}})
		// Not audited by the policy, yet answered with an Audit-Id.
		if r := get(t, s.anonymousClient(t), s.URL()+"/readyz"); r.code != 200 || r.auditID(t) == "" {
			t.Errorf("GET /readyz: %d, Audit-Id %q", r.code, r.header.Get("Audit-Id"))
		}

		events := waitForAuditEvents(t, logPath, requests)
		for _, r := range requests {
			r.check(t, events[r.auditID])
		}
		checkRecordedObjects(t, requests, events)
		data, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), secretData) || strings.Contains(string(data), "secret-value") {
			t.Error("the audit log holds the Secret's data")
		}
	})
}

// checkRecordedObjects checks the objects TestAuditLog's events hold: the configmap sent and
// answered (without managedFields), the list answered, the users of the impersonated request,
// and no objects of the Secret.
func checkRecordedObjects(t *testing.T, requests []auditedRequest, events auditEvents) {
	t.Helper()
	last := func(name string) auditv1.Event {
		for _, r := range requests {
			if r.name == name && len(events[r.auditID]) > 0 {
				return events[r.auditID][len(events[r.auditID])-1]
			}
		}
		t.Fatalf("no events for %s", name)
		return auditv1.Event{}
	}
	created := last("create configmap")
	if created.RequestObject == nil || !strings.Contains(string(created.RequestObject.Raw), `"data":{"k":"v"}`) {
		t.Errorf("create configmap: requestObject %s, want the configmap sent", rawOf(created.RequestObject))
	}
	var answered struct {
		Metadata struct {
			UID           string
			ManagedFields []any
		}
		Data map[string]string
	}
	if created.ResponseObject == nil || json.Unmarshal(created.ResponseObject.Raw, &answered) != nil ||
		answered.Metadata.UID == "" || answered.Data["k"] != "v" || answered.Metadata.ManagedFields != nil {
		t.Errorf("create configmap: responseObject %s, want the stored configmap without managedFields", rawOf(created.ResponseObject))
	}
	if list := last("list configmaps"); list.ResponseObject == nil || !strings.Contains(string(list.ResponseObject.Raw), `"kind":"ConfigMapList"`) ||
		!strings.Contains(string(list.ResponseObject.Raw), `"name":"cm"`) {
		t.Errorf("list configmaps: responseObject %s, want the list", rawOf(list.ResponseObject))
	}
	if deleted := last("delete configmap"); deleted.ResponseStatus.Status != "Success" || deleted.ResponseStatus.Details == nil || deleted.ResponseStatus.Details.Name != "cm" {
		t.Errorf("delete configmap: responseStatus %+v, want kube's Success Status", deleted.ResponseStatus)
	}
	if missing := last("missing configmap"); missing.ResponseStatus.Reason != "NotFound" || missing.ResponseStatus.Message != `configmaps "cm" not found` {
		t.Errorf("missing configmap: responseStatus %+v, want kube's NotFound Status", missing.ResponseStatus)
	}
	wantImpersonated := &authnv1.UserInfo{Username: "alice", Groups: []string{"system:masters", "system:authenticated"}, Extra: map[string]authnv1.ExtraValue{}}
	if imp := last("impersonated list"); imp.ImpersonatedUser == nil || imp.ImpersonatedUser.Username != wantImpersonated.Username ||
		!slices.Equal(imp.ImpersonatedUser.Groups, wantImpersonated.Groups) {
		t.Errorf("impersonated list: impersonatedUser %+v, want %+v", imp.ImpersonatedUser, wantImpersonated)
	}
	for _, name := range []string{"create secret", "get secret", "create namespace"} {
		if ev := last(name); ev.RequestObject != nil || ev.ResponseObject != nil {
			t.Errorf("%s at Metadata level: requestObject %s, responseObject %s, want neither", name, rawOf(ev.RequestObject), rawOf(ev.ResponseObject))
		}
	}
}

func rawOf(obj *runtime.Unknown) string {
	if obj == nil {
		return "none"
	}
	return string(obj.Raw)
}

// auditWebhook is a real HTTPS server, with its own test CA, receiving audit events as
// kube-apiserver's webhook backend sends them.
type auditWebhook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events auditEvents
	errs   []string
}

func startAuditWebhook(t *testing.T) *auditWebhook {
	t.Helper()
	h := &auditWebhook{events: auditEvents{}}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		var list auditv1.EventList
		err := json.NewDecoder(r.Body).Decode(&list)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || err != nil ||
			list.Kind != "EventList" || list.APIVersion != "audit.k8s.io/v1" {
			h.errs = append(h.errs, fmt.Sprintf("%s %s: %v, kind %q, apiVersion %q", r.Method, r.Header.Get("Content-Type"), err, list.Kind, list.APIVersion))
		}
		for _, ev := range list.Items {
			h.events[string(ev.AuditID)] = append(h.events[string(ev.AuditID)], ev)
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// kubeconfig is the --audit-webhook-config-file pointing at the webhook and trusting its CA.
func (h *auditWebhook) kubeconfig(t *testing.T) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	return writeTestFile(t, "webhook.kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: %s/audit
    certificate-authority-data: %s
users:
- name: sqlkube
contexts:
- name: audit
  context: {cluster: audit, user: sqlkube}
current-context: audit
`, h.srv.URL, base64.StdEncoding.EncodeToString(ca)))
}

// TestAuditWebhook: events reach an HTTPS webhook in batches (audit.k8s.io/v1 EventList), each
// request's stages complete.
func TestAuditWebhook(t *testing.T) {
	policy := writeTestFile(t, "policy.yaml", auditPolicy)
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		hook := startAuditWebhook(t)
		s := startServer(t, dsn, "--audit-policy-file", policy, "--audit-webhook-config-file", hook.kubeconfig(t),
			"--audit-webhook-batch-max-wait", "100ms")
		r := s.do(t, "POST", "/api/v1/namespaces", []byte(`{"metadata":{"name":"hooked"}}`), "Content-Type", "application/json")
		if r.code != 201 {
			t.Fatalf("create namespace: %d %s", r.code, r.body)
		}
		want := auditedRequest{name: "create namespace", auditID: r.auditID(t), level: auditv1.LevelMetadata, verb: "create", user: "system:admin", code: 201,
			objectRef: &auditv1.ObjectReference{Resource: "namespaces", Name: "hooked", APIVersion: "v1"},
			stages:    []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete}}
		var events []auditv1.Event
		eventually(t, 10*time.Second, "the request's events at the webhook", func() (bool, error) {
			hook.mu.Lock()
			defer hook.mu.Unlock()
			events = slices.Clone(hook.events[want.auditID])
			return len(events) >= len(want.stages), nil
		})
		want.check(t, events)
		hook.mu.Lock()
		defer hook.mu.Unlock()
		if len(hook.errs) > 0 {
			t.Errorf("the webhook received malformed batches: %v", hook.errs)
		}
	})
}
