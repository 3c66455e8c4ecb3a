package endpoints

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/discovery"
	"github.com/sqlkube/sqlkube/server/endpoints/filters"
	"github.com/sqlkube/sqlkube/server/endpoints/wire"
	"github.com/sqlkube/sqlkube/server/pods"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/server/reviews"
)

// What the HTTP tests (package endpoints_test, which build whole servers with server/apiserver)
// compare answers with.
const (
	AuthorizationPrefix  = "/apis/authorization.k8s.io/v1/"
	AuthenticationPrefix = "/apis/authentication.k8s.io/v1/"
	MediaTypeProtobuf    = wire.MediaTypeProtobuf
)

var (
	ErrDatabaseFault    = errDatabaseFault
	ErrPanicked         = errPanicked
	RequestInfoResolver = filters.RequestInfoResolver
	ProtobufScheme      = wire.ProtobufScheme
	ProtobufDecoder     = wire.ProtobufDecoder
)

// SetWatchWriteTimeout changes how long a watch event's write may take until the test ends.
func SetWatchWriteTimeout(d time.Duration) (restore func()) {
	old := watchWriteTimeout
	watchWriteTimeout = d
	return func() { watchWriteTimeout = old }
}

// WatchWriteTimeout is how long a watch event's write may take.
func WatchWriteTimeout() time.Duration { return watchWriteTimeout }

// DiscoveryRoutes are only the discovery routes of a server on types.
func DiscoveryRoutes(types *catalog.Catalog) http.Handler {
	ServeCreateOnly(types)
	s := &Server{log: slog.New(slog.DiscardHandler), api: API{Catalog: types, Discovery: discovery.NewCache(types, true)}}
	r := mux.NewRouter()
	s.routeDiscovery(r)
	return r
}

// DecodeRequestObject decodes r's body as a create of res does.
func DecodeRequestObject(r *http.Request, res *resource.Resource) error {
	s := &Server{opts: Options{MaxRequestBodyBytes: defaultMaxRequestBodyBytes}}
	_, _, err := s.decodeObject(r, res, "")
	return err
}

// Media types the tests ask for.
const (
	MediaTypeJSON                = mediaTypeJSON
	MediaTypeYAML                = mediaTypeYAML
	MediaTypeAggregatedDiscovery = mediaTypeAggregatedDiscovery
)

// CatalogOf is the catalog s serves.
func CatalogOf(s *Server) *catalog.Catalog { return s.api.Catalog.(*catalog.Catalog) }

// ServeWithRecovery makes s answer every request with h, behind the recovery filter.
func ServeWithRecovery(s *Server, h http.Handler) { s.handler = s.withRecovery(h) }

// ServeRoutesOnly makes s answer with its routes alone, without the filter chain.
func ServeRoutesOnly(s *Server) { s.handler = s.routes }

// Limited is inner behind s's request limits and timeouts.
func Limited(s *Server, inner http.Handler) http.Handler {
	c := s.filterConfig()
	return filters.Timeouts(filters.OverloadProtection(inner, c), c)
}

// MatchRoute finds the route s serves r with, as its router does before each request.
func MatchRoute(s *Server, r *http.Request) bool {
	return s.routes.(*mux.Router).Match(r, &mux.RouteMatch{})
}

// ServeCreateOnly has types serve the create-only types as the assembly does (without handlers
// that could answer them), for tests of their documents.
func ServeCreateOnly(types *catalog.Catalog) {
	podSubresources, err := pods.New(types, nil)
	if err != nil {
		panic(err)
	}
	types.ServeCreateOnly(append(reviews.New(nil, nil, nil).Resources(), podSubresources.Bindings())...)
}
