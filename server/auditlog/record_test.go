package auditlog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// lastEvent is a sink keeping a copy of the last event it is given.
type lastEvent struct{ event *auditinternal.Event }

func (l *lastEvent) ProcessEvents(events ...*auditinternal.Event) bool {
	l.event = events[len(events)-1].DeepCopy()
	return true
}

// auditedCtx is a request's context for a create of a ConfigMap audited at level ("" for a
// request not audited), and the event it records.
func auditedCtx(level auditinternal.Level) (context.Context, func() *auditinternal.Event) {
	info := &genericrequest.RequestInfo{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "configmaps", Namespace: "default"}
	ctx := genericrequest.WithRequestInfo(context.Background(), info)
	if level == "" {
		return ctx, func() *auditinternal.Event { return nil }
	}
	ctx = audit.WithAuditContext(ctx)
	sink := &lastEvent{}
	_ = audit.AuditContextFrom(ctx).Init(audit.RequestAuditConfig{Level: level}, sink)
	return ctx, func() *auditinternal.Event {
		audit.AuditContextFrom(ctx).ProcessEventStage(ctx, auditinternal.StageResponseComplete)
		return sink.event
	}
}

const configMapJSON = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default","uid":"u1","resourceVersion":"7"}}`

func configMap(t *testing.T) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(configMapJSON)); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestRequestObject: the object sent is named in the event from level Metadata on, and recorded
// from level Request on.
func TestRequestObject(t *testing.T) {
	for _, tc := range []struct {
		level        auditinternal.Level
		named, whole bool
	}{
		{auditinternal.LevelNone, false, false},
		{auditinternal.LevelMetadata, true, false},
		{auditinternal.LevelRequest, true, true},
		{auditinternal.LevelRequestResponse, true, true},
	} {
		for name, record := range map[string]func(context.Context){
			"object": func(ctx context.Context) { RequestObject(ctx, configMap(t)) },
			"body":   func(ctx context.Context) { RequestBody(ctx, []byte(configMapJSON)) },
		} {
			ctx, event := auditedCtx(tc.level)
			record(ctx)
			ev := event()
			named := ev.ObjectRef != nil && ev.ObjectRef.Name == "c" && ev.ObjectRef.UID == "u1" && ev.ObjectRef.ResourceVersion == "7"
			wantNamed := tc.named
			if name == "body" && tc.level == auditinternal.LevelMetadata {
				wantNamed = false // a body is decoded only when it is recorded in full
			}
			if named != wantNamed {
				t.Errorf("%s at %s: object ref %+v, want named %v", name, tc.level, ev.ObjectRef, wantNamed)
			}
			if whole := ev.RequestObject != nil && strings.Contains(string(ev.RequestObject.Raw), `"uid":"u1"`); whole != tc.whole {
				t.Errorf("%s at %s: request object %v, want recorded %v", name, tc.level, ev.RequestObject, tc.whole)
			}
		}
	}
}

// TestNotAudited: without an audit context nothing is recorded, and nothing fails.
func TestNotAudited(t *testing.T) {
	ctx, _ := auditedCtx("")
	RequestObject(ctx, configMap(t))
	RequestBody(ctx, []byte(configMapJSON))
	RequestPatch(ctx, []byte(`{}`))
	Response(ctx, &metav1.Status{Code: 404}, nil)
	if ResponseCopy(ctx) != nil {
		t.Error("a copy of the answer for a request not audited")
	}
}

func TestRequestPatch(t *testing.T) {
	for level, recorded := range map[auditinternal.Level]bool{auditinternal.LevelMetadata: false, auditinternal.LevelRequest: true} {
		ctx, event := auditedCtx(level)
		RequestPatch(ctx, []byte(`{"data":{"a":"b"}}`))
		if got := event().RequestObject != nil; got != recorded {
			t.Errorf("%s: patch recorded %v, want %v", level, got, recorded)
		}
	}
}

// TestResponse: a Status is recorded from level Metadata on; other answers and the copy of a
// streamed answer only at RequestResponse.
func TestResponse(t *testing.T) {
	for _, tc := range []struct {
		level            auditinternal.Level
		status, response bool
	}{
		{auditinternal.LevelMetadata, true, false},
		{auditinternal.LevelRequest, true, false},
		{auditinternal.LevelRequestResponse, true, true},
	} {
		ctx, event := auditedCtx(tc.level)
		Response(ctx, &metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound}, nil)
		if got := event().ResponseStatus; (got != nil && got.Code == 404) != tc.status {
			t.Errorf("%s: response status %v, want recorded %v", tc.level, got, tc.status)
		}
		ctx, event = auditedCtx(tc.level)
		Response(ctx, nil, []byte(configMapJSON))
		if got := event().ResponseObject; (got != nil && strings.Contains(string(got.Raw), `"uid":"u1"`)) != tc.response {
			t.Errorf("%s: response object %v, want recorded %v", tc.level, got, tc.response)
		}
		if copied := ResponseCopy(ctx) != nil; copied != tc.response {
			t.Errorf("%s: copy of a streamed answer %v, want %v", tc.level, copied, tc.response)
		}
	}
}

// TestUnauthorized answers kube's 401 Status.
func TestUnauthorized(t *testing.T) {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/v1/namespaces", nil)
	r = r.WithContext(genericrequest.WithRequestInfo(r.Context(), &genericrequest.RequestInfo{Verb: "list"}))
	Config{}.Unauthorized().ServeHTTP(rec, r)
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `"reason":"Unauthorized"`) {
		t.Errorf("%d %s, want 401 Unauthorized", rec.Code, rec.Body)
	}
}
