package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	endpointsmetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	"k8s.io/apiserver/pkg/storage"
	etcd3metrics "k8s.io/apiserver/pkg/storage/etcd3/metrics"

	"github.com/sqlkube/sqlkube/server/metrics"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// objectCountInterval is how often apiserver_storage_objects is refreshed, as kube-apiserver does.
const objectCountInterval = time.Minute

// startMetrics registers the metrics and keeps the object counts current until ctx ends.
func (s *Server) startMetrics(ctx context.Context) {
	metrics.Register()
	if src, ok := s.store.(metrics.StatsSource); ok {
		metrics.ReportOn(src)
	}
	go func() {
		ticker := time.NewTicker(objectCountInterval)
		defer ticker.Stop()
		for {
			s.countObjects(ctx)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

// countObjects sets apiserver_storage_objects for every type served, from the database's count.
func (s *Server) countObjects(ctx context.Context) {
	for _, r := range s.catalog.StorageResources() {
		count, err := s.countStored(ctx, r.StorageName)
		gr := schema.GroupResource{Group: r.Group, Resource: r.Name}
		etcd3metrics.UpdateStoreStats(gr, storage.Stats{ObjectCount: count}, err)
	}
}

// countStored counts the objects stored under a storage name: a one-object list says how many
// more there are.
func (s *Server) countStored(ctx context.Context, storageName string) (int64, error) {
	var n int64
	res, err := s.store.List(ctx, sqlstore.ListOptions{Resource: storageName, Limit: 1}, func(sqlstore.Object) error { n++; return nil })
	if err != nil || !res.More {
		return n, err
	}
	return n + res.Remaining, nil
}

// withRequestMetrics records each API request in kube-apiserver's request metrics
// (apiserver_request_total, apiserver_request_duration_seconds, apiserver_response_sizes),
// and a watch, while it lasts, in apiserver_longrunning_requests.
func withRequestMetrics(next http.Handler) http.Handler {
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
