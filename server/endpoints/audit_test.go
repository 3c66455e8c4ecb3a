package endpoints_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit/policy"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// recordedEvents is an audit backend that keeps copies of the events it receives.
type recordedEvents struct {
	mu     sync.Mutex
	events []*auditinternal.Event
}

func (r *recordedEvents) ProcessEvents(events ...*auditinternal.Event) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range events {
		r.events = append(r.events, ev.DeepCopy())
	}
	return true
}

func (r *recordedEvents) Run(<-chan struct{}) error { return nil }
func (r *recordedEvents) Shutdown()                 {}
func (r *recordedEvents) String() string            { return "recorded" }

// of are the events of one request, in order.
func (r *recordedEvents) of(auditID string) []*auditinternal.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*auditinternal.Event
	for _, ev := range r.events {
		if string(ev.AuditID) == auditID {
			out = append(out, ev)
		}
	}
	return out
}

func eventStages(events []*auditinternal.Event) []auditinternal.Stage {
	var out []auditinternal.Stage
	for _, ev := range events {
		out = append(out, ev.Stage)
	}
	return out
}

// auditedAPI is a Server on SQLite auditing every request at level, into the returned events.
func auditedAPI(t *testing.T, level auditinternal.Level) (*testAPI, *recordedEvents) {
	events := &recordedEvents{}
	evaluator := policy.NewPolicyRuleEvaluator(&auditinternal.Policy{Rules: []auditinternal.PolicyRule{{Level: level}}})
	return newTestAPI(t, sqltest.SQLiteDSN(t), apiserver.Options{Options: endpoints.Options{Audit: auditlog.Config{Policy: evaluator, Backend: events}}}), events
}

// panickingGets is a store whose reads of an object named "boom" panic.
type panickingGets struct{ apiserver.Storage }

func (s panickingGets) Get(ctx context.Context, key sqlstore.Key) (sqlstore.Object, error) {
	if key.Name == "boom" {
		panic("boom")
	}
	return s.Storage.Get(ctx, key)
}

// TestAuditPanic: a request whose handler panics is answered 500 and recorded in stage Panic,
// as kube-apiserver records it.
func TestAuditPanic(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := sqlstore.Open(ctx, sqlstore.SQLite(sqltest.SQLitePath(t)), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	events := &recordedEvents{}
	evaluator := policy.NewPolicyRuleEvaluator(&auditinternal.Policy{Rules: []auditinternal.PolicyRule{{Level: auditinternal.LevelMetadata}}})
	srv, err := apiserver.New(ctx, panickingGets{store}, apiserver.Options{NoDefaultObjects: true, Options: endpoints.Options{Audit: auditlog.Config{Policy: evaluator, Backend: events}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/boom", nil))
	if rec.Code != 500 {
		t.Fatalf("status %d, want 500: %s", rec.Code, rec.Body)
	}
	got := events.of(rec.Header().Get("Audit-Id"))
	if stages := eventStages(got); !slices.Equal(stages, []auditinternal.Stage{auditinternal.StageRequestReceived, auditinternal.StagePanic}) {
		t.Fatalf("stages %v, want RequestReceived, Panic", stages)
	}
	if st := got[1].ResponseStatus; st == nil || st.Code != 500 || st.Message != "APIServer panic'd: boom" {
		t.Errorf("Panic event's responseStatus %+v, want kube's 500", st)
	}
}

// TestAuditRequestLevel: at level Request, the objects sent are recorded (a patch as sent) and
// the answers are not; without a policy, answers still carry an Audit-Id.
func TestAuditRequestLevel(t *testing.T) {
	api, events := auditedAPI(t, auditinternal.LevelRequest)
	const cm = "/api/v1/namespaces/default/configmaps/c"
	created := api.do("POST", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}`, "Content-Type: application/json").expect(t, 201)
	patched := api.do("PATCH", cm, `{"data":{"k":"w"}}`, "Content-Type: application/merge-patch+json").expect(t, 200)
	for _, r := range []struct {
		resp        response
		verb        string
		requestJSON string
	}{{created, "create", `"data":{"k":"v"}`}, {patched, "patch", `{"data":{"k":"w"}}`}} {
		got := events.of(r.resp.header.Get("Audit-Id"))
		if len(got) != 2 {
			t.Fatalf("%s: %d events, want 2", r.verb, len(got))
		}
		last := got[1]
		if last.Verb != r.verb || last.RequestObject == nil || !strings.Contains(string(last.RequestObject.Raw), r.requestJSON) || last.ResponseObject != nil {
			t.Errorf("%s: verb %q, requestObject %v, responseObject %v; want the object sent only", r.verb, last.Verb, last.RequestObject, last.ResponseObject)
		}
	}

	if id := sqliteAPI(t).do("GET", "/livez", "").expect(t, 200).header.Get("Audit-Id"); id == "" {
		t.Error("no Audit-Id without an audit policy")
	}
}

// TestAuditBindingsNamesTheBinding: a POST to namespaces/NS/bindings names no object in its path;
// its audit event names the Binding the body names, as kube's create handler does, even when the
// Binding is then refused.
func TestAuditBindingsNamesTheBinding(t *testing.T) {
	api, events := auditedAPI(t, auditinternal.LevelMetadata)
	refused := api.do("POST", "/api/v1/namespaces/default/bindings",
		`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web","namespace":"other"},"target":{"name":"node-1"}}`).expect(t, 400)
	got := events.of(refused.header.Get("Audit-Id"))
	if len(got) == 0 || got[len(got)-1].ObjectRef == nil || got[len(got)-1].ObjectRef.Name != "web" || got[len(got)-1].ObjectRef.Namespace != "default" {
		t.Fatalf("audit events %+v: want the object named web in default", got)
	}
}
