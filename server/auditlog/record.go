package auditlog

import (
	"bytes"
	"context"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Config is what kube-apiserver's --audit-* flags configure: which requests are recorded at
// which level, and where the events go. Either nil records nothing (the Audit-Id header is still
// sent).
type Config struct {
	Policy audit.PolicyRuleEvaluator
	// Backend receives the events; its owner runs it and shuts it down.
	Backend audit.Backend
}

// Codecs encode a metav1.Status, or an object given as unstructured, in the media type the
// client asked for: the objects audit events record, and the refusals kube-apiserver's filters
// answer with (401, 403), which the HTTP layer's filters encode with the same codecs.
var Codecs = func() runtime.NegotiatedSerializer {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(scheme).WithoutConversion()
}()

// WithAudit records every request next serves (stages RequestReceived, ResponseStarted for the
// long-running requests (watches), ResponseComplete or Panic), as kube-apiserver's WithAudit
// does. It belongs inside authentication and outside impersonation, so that an event names both
// the user and the user impersonated.
func (c Config) WithAudit(next http.Handler, longRunning genericrequest.LongRunningRequestCheck) http.Handler {
	return genericfilters.WithAudit(next, c.Backend, c.Policy, longRunning)
}

// Unauthorized is kube-apiserver's 401 answer, recorded as an event when the policy asks.
func (c Config) Unauthorized() http.Handler {
	return genericfilters.WithFailedAuthenticationAudit(genericfilters.Unauthorized(Codecs), c.Backend, c.Policy)
}

// eventLevel is the level the policy gave the request: "" without one (when auditing is off).
func eventLevel(ctx context.Context) auditinternal.Level {
	ac := audit.AuditContextFrom(ctx)
	if ac == nil {
		return ""
	}
	return ac.GetEventLevel()
}

// RequestObject records the object a request sent, as kube-apiserver's handlers do: it
// names the object in the event (name, uid, resourceVersion) at every level, and is the event's
// requestObject from level Request on.
func RequestObject(ctx context.Context, obj *unstructured.Unstructured) {
	level := eventLevel(ctx)
	info, _ := genericrequest.RequestInfoFrom(ctx)
	if level.Less(auditinternal.LevelMetadata) || info == nil {
		return
	}
	var encoding runtime.NegotiatedSerializer = Codecs
	if level.Less(auditinternal.LevelRequest) {
		// The library encodes the object, then drops it below Request.
		encoding = discardEncoding{}
	}
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	audit.LogRequestObject(ctx, obj, gvr.GroupVersion(), gvr, info.Subresource, encoding)
}

// RequestBody records a JSON request body as RequestObject does, for the handlers that
// decode it into types of their own; it is decoded only when it is recorded in full.
func RequestBody(ctx context.Context, body []byte) {
	if eventLevel(ctx).Less(auditinternal.LevelRequest) {
		return
	}
	obj := &unstructured.Unstructured{}
	if obj.UnmarshalJSON(body) == nil {
		RequestObject(ctx, obj)
	}
}

// RequestPatch records a patch as the request object, as kube-apiserver's patch handler
// does, from level Request on.
func RequestPatch(ctx context.Context, patch []byte) {
	if !eventLevel(ctx).Less(auditinternal.LevelRequest) {
		audit.LogRequestPatch(ctx, patch)
	}
}

// Response records an answer, as kube-apiserver's response writers do: a Status (status
// non-nil) is the event's responseStatus from level Metadata on; any answer, given as its JSON,
// is the event's responseObject at level RequestResponse.
func Response(ctx context.Context, status *metav1.Status, jsonBody []byte) {
	level := eventLevel(ctx)
	switch {
	case level.Less(auditinternal.LevelMetadata):
	case status != nil:
		audit.LogResponseObject(ctx, status, metav1.SchemeGroupVersion, Codecs)
	case level == auditinternal.LevelRequestResponse:
		obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, jsonBody)
		if err == nil {
			audit.LogResponseObject(ctx, obj, obj.GetObjectKind().GroupVersionKind().GroupVersion(), Codecs)
		}
	}
}

// ResponseCopy is where a streamed answer (a list) is copied for Response: nil unless
// the request is recorded at level RequestResponse.
func ResponseCopy(ctx context.Context) *bytes.Buffer {
	if eventLevel(ctx) != auditinternal.LevelRequestResponse {
		return nil
	}
	return &bytes.Buffer{}
}

// discardEncoding encodes every object as nothing, for encodings nobody reads.
type discardEncoding struct{}

func (discardEncoding) SupportedMediaTypes() []runtime.SerializerInfo { return discardSerializers }

// discardSerializers is built once: the library asks for it on every audited write.
var discardSerializers = []runtime.SerializerInfo{{MediaType: runtime.ContentTypeJSON, Serializer: discardEncoder{}}}

func (discardEncoding) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (discardEncoding) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// discardEncoder writes nothing; it is never asked to decode.
type discardEncoder struct{ runtime.Decoder }

func (discardEncoder) Encode(runtime.Object, io.Writer) error { return nil }

func (discardEncoder) Identifier() runtime.Identifier { return "discard" }
