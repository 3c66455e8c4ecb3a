package filters

import (
	"net/http"
	"time"

	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"k8s.io/apimachinery/pkg/util/sets"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
)

// Limits protect the server against overload and slow clients, with kube-apiserver's flags.
type Limits struct {
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the requests served at once
	// (--max-requests-inflight, --max-mutating-requests-inflight); long-running requests
	// (watches) are not counted; beyond them a request is answered 429 with Retry-After. 0 is
	// no limit. With PriorityAndFairness their sum is the server's concurrency, shared out by
	// priority level.
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	// PriorityAndFairness queues requests by FlowSchema and priority level, fairly between
	// flows (users), instead of refusing them at the limit (--enable-priority-and-fairness).
	PriorityAndFairness bool
	// RequestTimeout bounds a request that is not long-running (--request-timeout); one that
	// exceeds it is answered 504 and its work abandoned. Clients may ask for less (?timeout=).
	RequestTimeout time.Duration
	// MinRequestTimeout is the shortest a watch without timeoutSeconds lasts; each lasts a
	// random time between it and twice it, so that clients spread their reconnections
	// (--min-request-timeout).
	MinRequestTimeout time.Duration
}

// DefaultLimits are kube-apiserver's defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxRequestsInFlight:         400,
		MaxMutatingRequestsInFlight: 200,
		PriorityAndFairness:         true,
		RequestTimeout:              time.Minute,
		MinRequestTimeout:           30 * time.Minute,
	}
}

// LongRunning tells the requests no in-flight limit or request timeout applies to: watches, as
// kube-apiserver's check (the proxy, exec and log verbs it also names are not served here).
var LongRunning = genericfilters.BasicLongRunningRequestCheck(
	sets.NewString("watch", "proxy"),
	sets.NewString("attach", "exec", "proxy", "log", "portforward"),
)

// Timeouts gives each request that is not long-running a deadline of RequestTimeout, or the
// shorter ?timeout= it asks for, and answers kube's 504 Timeout Status when it is passed; the
// handler's context ends with it, which rolls back its transaction.
func Timeouts(next http.Handler, c Config) http.Handler {
	h := genericfilters.WithTimeoutForNonLongRunningRequests(withGrownStackUnlessLongRunning(next), LongRunning)
	audit := c.Audit // a request refused for a bad ?timeout= is audited, as in kube-apiserver
	return genericapifilters.WithRequestDeadline(h, audit.Backend, audit.Policy, LongRunning, StatusCodecs, c.Limits.RequestTimeout)
}

// OverloadProtection bounds the requests served at once: by priority and fairness, or by
// kube-apiserver's two plain in-flight limits.
func OverloadProtection(next http.Handler, c Config) http.Handler {
	l := c.Limits
	if c.FlowControl != nil {
		estimate := flowcontrolrequest.NewWorkEstimator(unknownObjectCount, noWatchCount,
			flowcontrolrequest.DefaultWorkEstimatorConfig(), c.FlowControl.GetMaxSeats)
		return genericfilters.WithPriorityAndFairness(next, LongRunning, c.FlowControl, estimate, l.RequestTimeout/4)
	}
	return genericfilters.WithMaxInFlightLimit(next, l.MaxRequestsInFlight, l.MaxMutatingRequestsInFlight, LongRunning)
}

// unknownObjectCount makes priority and fairness give a list the fewest seats: sqlkube streams a
// list from the database page by page, so a large one does not hold more memory than a small one.
func unknownObjectCount(string) (storage.Stats, error) {
	return storage.Stats{}, flowcontrolrequest.ObjectCountNotFoundErr
}

// noWatchCount: a write's cost does not grow with the watches it reaches, which are sent events
// from the change feed, not from the write's request.
func noWatchCount(*genericrequest.RequestInfo) int { return 0 }
