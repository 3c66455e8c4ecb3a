package filters

import (
	"net/http"

	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// WithGrownStack grows the stack of the goroutine that serves a request, with grow, to what the
// request will need, in one step, before it goes deeper. Such goroutines are new for every request
// (net/http's for each HTTP/2 stream, and the timeout filter's, as in kube-apiserver) and start
// with a small stack; without this they grow it by doubling as the request descends, each time
// copying every frame above: a tenth of the server's CPU on gets (docs/benchmarks.md).
func WithGrownStack(next http.Handler, grow func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		grow()
		next.ServeHTTP(w, r)
	})
}

// withGrownStackUnlessLongRunning grows to 32 KiB the stack of the goroutine the timeout filter
// starts for a request that is not long-running. A watch is served on its stream's own goroutine
// (the timeout filter starts none for it) and keeps the stack it has for as long as it lasts:
// grown here, 10,000 idle watches held twice the stack they use (docs/benchmarks.md).
func withGrownStackUnlessLongRunning(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := genericrequest.RequestInfoFrom(r.Context()); !ok || !LongRunning(r, info) {
			growStackTo32KiB()
		}
		next.ServeHTTP(w, r)
	})
}

// GrowStackTo16KiB makes room for the filters outside the timeout filter, which then waits.
//
//go:noinline
func GrowStackTo16KiB() {
	var frame [12 << 10]byte
	touch(frame[:])
}

// growStackTo32KiB makes room for a request's own work, some 60 frames deep: the filter chain,
// the handler and the libraries under it (decoding, validation, managedFields).
//
//go:noinline
func growStackTo32KiB() {
	var frame [24 << 10]byte
	touch(frame[:])
}

// stackSink keeps the frames of the growStack functions from being optimized away.
var stackSink byte

//go:noinline
func touch(frame []byte) {
	frame[int(stackSink)%len(frame)] = 1
	stackSink = frame[len(frame)-1]
}
