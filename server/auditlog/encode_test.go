package auditlog

import (
	"bytes"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	pluginlog "k8s.io/apiserver/plugin/pkg/audit/log"
)

// kubeLine is the line kube-apiserver's own log backend writes for ev.
func kubeLine(t testing.TB, ev *auditinternal.Event) string {
	var out bytes.Buffer
	if !pluginlog.NewBackend(&out, pluginlog.FormatJson, auditv1.SchemeGroupVersion).ProcessEvents(ev) {
		t.Fatalf("kube's backend failed on %#v", ev)
	}
	return out.String()
}

func ourLine(t testing.TB, ev *auditinternal.Event) string {
	var out bytes.Buffer
	if !NewBackend(&out).ProcessEvents(ev) {
		t.Fatalf("the backend failed on %#v", ev)
	}
	return out.String()
}

func assertSameLine(t testing.TB, ev *auditinternal.Event) {
	t.Helper()
	if want, got := kubeLine(t, ev), ourLine(t, ev); got != want {
		t.Errorf("line differs from kube's:\n got %s\nwant %s", got, want)
	}
}

// fullEvent has every field an event can carry set, as a request through impersonation that
// failed would.
func fullEvent() *auditinternal.Event {
	received := metav1.NewMicroTime(time.Date(2026, 11, 25, 7, 1, 2, 123456789, time.FixedZone("X", 3600)))
	remaining := int64(7)
	return &auditinternal.Event{
		Level:      auditinternal.LevelMetadata,
		AuditID:    "5f1c1c6e-2c52-4f1e-9a5c-0d1c0c2e6a11",
		Stage:      auditinternal.StageResponseComplete,
		RequestURI: "/api/v1/namespaces/default/secrets/s?fieldManager=a&dryRun=All",
		Verb:       "update",
		User: authnv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"system:authenticated", "dev"},
			Extra: map[string]authnv1.ExtraValue{"scopes": {"a", "b"}, "empty": nil, "another": {}}},
		ImpersonatedUser:       &authnv1.UserInfo{Username: "system:serviceaccount:ns:sa"},
		AuthenticationMetadata: &auditinternal.AuthenticationMetadata{ImpersonationConstraint: "impersonate:user-info"},
		SourceIPs:              []string{"10.0.0.1", "::1"},
		UserAgent:              "kubectl/v1.37.0 (linux/amd64) kubernetes/abcdef",
		ObjectRef: &auditinternal.ObjectReference{Resource: "secrets", Namespace: "default", Name: "s", UID: "uid-1",
			APIGroup: "", APIVersion: "v1", ResourceVersion: "42", Subresource: "status"},
		ResponseStatus: &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			ListMeta: metav1.ListMeta{SelfLink: "/x", ResourceVersion: "9", Continue: "c", RemainingItemCount: &remaining},
			Status:   metav1.StatusFailure, Message: `secrets "s" is forbidden: <&>`, Reason: metav1.StatusReasonForbidden,
			Details: &metav1.StatusDetails{Name: "s", Kind: "secrets", Causes: []metav1.StatusCause{{Type: "FieldValueInvalid", Message: "m", Field: "data"}}},
			Code:    403,
		},
		RequestReceivedTimestamp: received,
		StageTimestamp:           metav1.NewMicroTime(received.Add(1500 * time.Microsecond)),
		Annotations:              map[string]string{"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": `RBAC: "x"`},
	}
}

func TestLinesAreKubes(t *testing.T) {
	cases := map[string]func(ev *auditinternal.Event){
		"every field":     func(*auditinternal.Event) {},
		"empty event":     func(ev *auditinternal.Event) { *ev = auditinternal.Event{} },
		"success status":  func(ev *auditinternal.Event) { ev.ResponseStatus = &metav1.Status{Code: 201} },
		"empty status":    func(ev *auditinternal.Event) { ev.ResponseStatus = &metav1.Status{} },
		"status metadata": func(ev *auditinternal.Event) { ev.ResponseStatus.ListMeta = metav1.ListMeta{Continue: "c"} },
		"no optional parts": func(ev *auditinternal.Event) {
			ev.ImpersonatedUser, ev.AuthenticationMetadata, ev.ObjectRef, ev.ResponseStatus = nil, nil, nil, nil
		},
		"empty collections": func(ev *auditinternal.Event) {
			ev.SourceIPs, ev.Annotations, ev.User = []string{}, map[string]string{}, authnv1.UserInfo{Groups: []string{}, Extra: map[string]authnv1.ExtraValue{}}
		},
		"empty nested objects": func(ev *auditinternal.Event) {
			ev.ObjectRef, ev.AuthenticationMetadata, ev.ImpersonatedUser = &auditinternal.ObjectReference{}, &auditinternal.AuthenticationMetadata{}, &authnv1.UserInfo{}
		},
		"far times": func(ev *auditinternal.Event) {
			ev.RequestReceivedTimestamp = metav1.NewMicroTime(time.Date(12345, 1, 2, 3, 4, 5, 6000, time.UTC))
			ev.StageTimestamp = metav1.NewMicroTime(time.Date(-5, 1, 2, 3, 4, 5, 999999999, time.UTC))
		},
		"early times": func(ev *auditinternal.Event) {
			ev.RequestReceivedTimestamp = metav1.NewMicroTime(time.Date(7, 1, 2, 3, 4, 5, 0, time.UTC))
			ev.StageTimestamp = metav1.NewMicroTime(time.Date(0, 1, 1, 0, 0, 0, 1000, time.UTC))
		},
		"only a uid": func(ev *auditinternal.Event) { ev.User = authnv1.UserInfo{UID: "u"} },
		"escaped strings": func(ev *auditinternal.Event) {
			ev.RequestURI = "/api?x=<script>&y=\"\\\n\t\x01\u2028é\xff"
			ev.User.Username = "{\"user\"}"
			ev.Annotations = map[string]string{"a&b": "<>", "é": "\u2029", "{": "}"}
		},
		"request object": func(ev *auditinternal.Event) {
			ev.RequestObject = &runtime.Unknown{Raw: []byte(`{"kind": "ConfigMap", "data": {"a": "<b>"}}`), ContentType: runtime.ContentTypeJSON}
		},
		"response object": func(ev *auditinternal.Event) {
			ev.ResponseObject = &runtime.Unknown{Raw: []byte(`{"kind":"Status"}`), ContentType: runtime.ContentTypeJSON}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			ev := fullEvent()
			change(ev)
			assertSameLine(t, ev)
		})
	}
}

// FuzzLinesAreKubes compares the line of events whose strings come from the fuzzer with kube's.
func FuzzLinesAreKubes(f *testing.F) {
	f.Add("alice", "/api/v1/namespaces", "default", "reason", "10.0.0.1", int64(1))
	f.Add("<&>", "\u2028\xff", "\"\\", "{", "\x00\t", int64(0))
	f.Fuzz(func(t *testing.T, user, uri, namespace, annotation, ip string, nanos int64) {
		ev := fullEvent()
		ev.User.Username, ev.User.Extra = user, map[string]authnv1.ExtraValue{user: {annotation}, ip: nil}
		ev.RequestURI, ev.ObjectRef.Namespace, ev.SourceIPs = uri, namespace, []string{ip}
		ev.Annotations = map[string]string{annotation: user, namespace: uri}
		ev.ResponseStatus.Message, ev.ResponseStatus.Details = annotation, nil
		ev.StageTimestamp = metav1.NewMicroTime(time.Unix(0, nanos))
		assertSameLine(t, ev)
	})
}

// BenchmarkLine compares an event at level Metadata written by kube's backend and by this one.
func BenchmarkLine(b *testing.B) {
	ev := fullEvent()
	ev.ResponseStatus = &metav1.Status{Code: 201}
	for name, backend := range map[string]interface {
		ProcessEvents(...*auditinternal.Event) bool
	}{
		"kube":     pluginlog.NewBackend(discard{}, pluginlog.FormatJson, auditv1.SchemeGroupVersion),
		"auditlog": NewBackend(discard{}),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				backend.ProcessEvents(ev)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
