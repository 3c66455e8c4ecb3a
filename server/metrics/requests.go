package metrics

import (
	"net/http"
	"strings"
	"time"

	endpointsmetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// WithRequests records each API request next serves in kube-apiserver's request metrics
// (apiserver_request_total, apiserver_request_duration_seconds, apiserver_response_sizes),
// and a long-running one (a watch), while it lasts, in apiserver_longrunning_requests. It
// belongs inside the filter that resolves the request's information.
func WithRequests(next http.Handler, longRunning genericrequest.LongRunningRequestCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := genericrequest.RequestInfoFrom(r.Context())
		if !ok || !info.IsResourceRequest {
			next.ServeHTTP(w, r)
			return
		}
		start, ok := genericrequest.ReceivedTimestampFrom(r.Context())
		if !ok {
			start = time.Now()
		}
		delegate := &endpointsmetrics.ResponseWriterDelegator{ResponseWriter: w}
		rw := responsewriter.WrapForHTTP1Or2(delegate)
		if longRunning(r, info) {
			endpointsmetrics.RecordLongRunning(r, info, endpointsmetrics.APIServerComponent, func() { next.ServeHTTP(rw, r) })
		} else {
			next.ServeHTTP(rw, r)
		}
		endpointsmetrics.MonitorRequest(r, routeVerb(info), info.APIGroup, info.APIVersion, info.Resource, info.Subresource,
			endpointsmetrics.CleanScope(info), endpointsmetrics.APIServerComponent, false, "", delegate.Status(), delegate.ContentLength(), time.Since(start))
	})
}

// routeVerb is the verb kube-apiserver's routes report a request under; the metrics tell
// APPLY, WATCH and the dry runs apart from it.
func routeVerb(info *genericrequest.RequestInfo) string {
	switch info.Verb {
	case "create":
		return "POST"
	case "update":
		return "PUT"
	default:
		return strings.ToUpper(info.Verb)
	}
}
