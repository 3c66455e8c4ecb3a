package endpoints

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	endpointsmetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	compbasemetrics "k8s.io/component-base/metrics"

	"github.com/sqlkube/sqlkube/server/endpoints/wire"
	"github.com/sqlkube/sqlkube/server/metrics"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/views"
	"github.com/sqlkube/sqlkube/server/registry/watchevents"
	"github.com/sqlkube/sqlkube/server/resource"
)

// watchWriteTimeout bounds each write to a watch client. A client that stops reading is
// disconnected once its socket buffers are full for this long, so it holds at most those buffers
// and the store's bounded queue (which ends the watch on its own once it is full).
var watchWriteTimeout = 10 * time.Second

// watchIdleAfter is how long after its write deadline was set a stream with nothing to send
// clears it: well before it expires, since over HTTP/2 an expired deadline resets the stream
// even with no write pending, and a busy machine may run the stream late.
func watchIdleAfter() time.Duration { return watchWriteTimeout / 2 }

// serveWatch answers a watch: a chunked stream of watch events, in JSON one per line, in
// protobuf in length-prefixed frames. Bad parameters are answered with a Status; once the stream
// has started, errors (a compacted start revision among them) are sent as an ERROR event, as
// kube-apiserver does.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, req *request) {
	opts, out, err := parseWatchRequest(r, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), watchTimeout(opts, s.limits.MinRequestTimeout))
	defer cancel()
	ws, err := s.newWatchStream(ctx, w, r, req, opts, out)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer ws.closeGzipMember()
	defer ws.stopIdleTimer()
	// What is written after the watch (the gzip member's end, and the response's end that
	// net/http writes once the handler returns) gets a deadline of its own: not what is left of
	// the last event's, which may have passed, nor none, which would let a client that stopped
	// reading hold the handler.
	defer ws.setWriteDeadline()
	defer ws.watch.Stop()
	defer metrics.WatcherOpened(req.res.Group, req.res.Kind)()
	ws.stream(r)
}

// watchTimeout is timeoutSeconds, or as kube-apiserver a random time between minRequestTimeout
// and twice it, so that clients spread their reconnections.
func watchTimeout(opts *internalversion.ListOptions, minRequestTimeout time.Duration) time.Duration {
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds != 0 {
		return time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	if minRequestTimeout <= 0 {
		return math.MaxInt64 // no timeout, as kube-apiserver with --min-request-timeout=0
	}
	return time.Duration(float64(minRequestTimeout) * (rand.Float64() + 1))
}

// watchStream is one watch response in progress.
type watchStream struct {
	s     *Server
	w     http.ResponseWriter
	rc    *http.ResponseController
	req   *request
	watch *registry.Watch
	out   output
	// encode turns an event's object, as stored and as served, into the view the client asked for.
	encode func(stored, served []byte) ([]byte, error)
	begun  bool
	// initialized is true once the watch has its starting point and the client was told so.
	initialized bool
	// unflushed is true when events were written since the last flush.
	unflushed bool
	// gzip compresses a watch list's stream; each flush ends one gzip member, so that every
	// event is readable as soon as it is flushed.
	gzip     bool
	gzWriter *gzip.Writer
	// deadlineSet is when the write deadline was last set; zero when none is set.
	deadlineSet time.Time
	// idle fires shortly before the write deadline expires, so that a stream with nothing to send
	// clears it: over HTTP/2 an expired deadline resets the stream even with no write pending.
	idle *time.Timer
	// events and eventSizes are kube-apiserver's apiserver_watch_events_total and
	// apiserver_watch_events_sizes of the watched type, looked up once per watch. Without the
	// request's context: sqlkube records no traces, so there is no exemplar to attach, and
	// looking for one walked the context's chain on every event (~6% of a delivery's CPU).
	events     compbasemetrics.CounterMetric
	eventSizes compbasemetrics.ObserverMetric
}

// parseWatchRequest reads a watch request: the same options and negotiation as a list.
func parseWatchRequest(r *http.Request, req *request) (*internalversion.ListOptions, output, error) {
	if req.subresource != "" {
		return nil, output{}, errNotFoundPath()
	}
	out, err := negotiateOutput(r, req, false)
	if err != nil {
		return nil, output{}, err
	}
	if out.format == formatYAML {
		return nil, output{}, errNotAcceptableStream() // YAML has no stream framing
	}
	opts, err := parseListOptions(r)
	if err != nil {
		return nil, output{}, err
	}
	if req.legacyWatch && !opts.Watch {
		// A /watch/ path watches whatever its query says: from resourceVersion "" or "0" it
		// starts with the current objects, as a watch=true request does.
		opts.Watch = true
		internalversion.SetListOptionsDefaults(opts, watchListEnabled)
	}
	return opts, out, nil
}

// newWatchStream starts a watch response: the registry's watch, running until ctx ends (its
// selectors checked), and the encoder of the negotiated view.
func (s *Server) newWatchStream(ctx context.Context, w http.ResponseWriter, r *http.Request, req *request, opts *internalversion.ListOptions, out output) (*watchStream, error) {
	watch, err := s.api.Registry.Watch(ctx, req.ref(), opts)
	if err != nil {
		return nil, err
	}
	encode, err := s.watchEncoder(r, req, out)
	if err != nil {
		watch.Stop()
		return nil, err
	}
	ws := &watchStream{s: s, w: w, rc: http.NewResponseController(w), req: req, watch: watch, out: out, encode: encode,
		gzip: isWatchList(opts) && wire.AcceptsGzip(r)}
	labels := []string{req.res.Group, req.res.Version, req.res.Name}
	ws.events = endpointsmetrics.WatchEvents.WithLabelValues(labels...)
	ws.eventSizes = endpointsmetrics.WatchEventsSizes.WithLabelValues(labels...)
	return ws, nil
}

// watchEncoder gives how event objects are encoded for the negotiated view. A Table carries its
// column definitions in the first event only, as kube-apiserver's watch encoder does.
func (s *Server) watchEncoder(r *http.Request, req *request, out output) (func(stored, served []byte) ([]byte, error), error) {
	switch out.view {
	case viewPartial:
		return func(_, served []byte) ([]byte, error) { return views.PartialMetadataJSON(served, out.metaVersion) }, nil
	case viewTable:
		tc, err := newTable(r, req, out.metaVersion)
		if err != nil {
			return nil, err
		}
		headers := true
		return func(stored, served []byte) ([]byte, error) {
			row, obj, err := tc.Row(r.Context(), stored, served)
			if err != nil {
				return nil, err
			}
			table := tc.Empty()
			if !headers {
				table.ColumnDefinitions = nil
			}
			headers = false
			table.Rows = []metav1.TableRow{row}
			table.ResourceVersion = obj.GetResourceVersion()
			return json.Marshal(table)
		}, nil
	}
	return func(_, served []byte) ([]byte, error) { return served, nil }, nil
}

// begin sends the response header, once: from here on the answer is 200 and errors are events.
func (ws *watchStream) begin() {
	if ws.begun {
		return
	}
	ws.begun = true
	contentType := mediaTypeJSON
	if ws.out.format == formatProtobuf {
		contentType = wire.MediaTypeProtobufWatch
	}
	ws.w.Header().Set("Content-Type", contentType)
	if ws.gzip {
		ws.w.Header().Set("Content-Encoding", "gzip")
		ws.w.Header().Add("Vary", "Accept-Encoding")
	}
	ws.w.WriteHeader(http.StatusOK)
	ws.setWriteDeadline()
	_ = ws.flush()
}

// stream sends the watch's events until the watch ends (an ERROR event, the store's end, or
// ctx's timeout), the client goes away, or a write fails.
func (ws *watchStream) stream(r *http.Request) {
	for {
		ev, ok := ws.watch.Next(ws.idleC())
		if !ok {
			if ws.watch.Done() || ws.pause(r) != nil {
				return
			}
			continue
		}
		if ev.Type == watch.Error {
			ws.sendError(ev.Err)
			return
		}
		if err := ws.send(ev); err != nil {
			ws.sendFailed(err)
			return
		}
	}
}

// pause is what the stream does while the watch has nothing ready: it sends what was written;
// the first time, the watch has its starting point, and as in kube-apiserver the header goes out
// then (a client that has it sees every later write) and priority and fairness stops counting
// the watch against its concurrency; and it clears a write deadline about to expire.
func (ws *watchStream) pause(r *http.Request) error {
	if ws.unflushed {
		if err := ws.flush(); err != nil {
			return err
		}
	}
	if !ws.initialized && ws.watch.Started() {
		ws.initialized = true
		ws.begin()
		utilflowcontrol.WatchInitialized(r.Context())
	}
	if !ws.deadlineSet.IsZero() && time.Since(ws.deadlineSet) >= watchIdleAfter() {
		ws.clearWriteDeadline()
	}
	return nil
}

// sendFailed ends a watch whose event could not be sent. Before the watch has its starting
// point, the error is sent as an ERROR event; after, only an event that cannot be served is
// (it cannot be encoded in the client's view), and otherwise the client is gone or not reading,
// and nothing more can reach it.
func (ws *watchStream) sendFailed(err error) {
	if !ws.initialized || errors.As(err, new(apierrors.APIStatus)) {
		ws.sendError(err)
	}
}

// send sends one event, encoded for the client's view and format: once for every watch of the
// same version, view and format when the event is shared (watchevents.Event.Memo). A Table's
// are each watch's own: its first event carries the columns.
func (ws *watchStream) send(ev watchevents.Event) error {
	var e encodedEvent
	if ws.out.view == viewTable {
		e = ws.encodeEvent(ev)
	} else {
		e = ev.Memo(eventKey{ws.req.res, ws.out, ev.Type}, func() any { return ws.encodeEvent(ev) }).(encodedEvent)
	}
	if e.err != nil {
		return e.err
	}
	ws.events.Inc()
	ws.eventSizes.Observe(float64(e.objectSize))
	return ws.write(e.frame)
}

// eventKey names what an event's encoding depends on besides the event.
type eventKey struct {
	res       *resource.Resource
	out       output
	eventType watch.EventType
}

// encodedEvent is an event as sent on the stream.
type encodedEvent struct {
	frame      []byte
	objectSize int
	err        error
}

// encodeEvent encodes one event; a BOOKMARK of whole objects carries its object as it is.
func (ws *watchStream) encodeEvent(ev watchevents.Event) encodedEvent {
	object := ev.Object
	if ev.Type != watch.Bookmark || ws.out.view != viewObject {
		var err error
		if object, err = ws.encode(ev.Stored, ev.Object); err != nil {
			return encodedEvent{err: err}
		}
	}
	frame, size, err := eventFrame(ws.out.format, ev.Type, object)
	return encodedEvent{frame, size, err}
}

// sendError sends err as the stream's last event: an ERROR event carrying its Status.
func (ws *watchStream) sendError(err error) {
	status, _ := json.Marshal(apiStatus(err))
	frame, _, ferr := eventFrame(ws.out.format, watch.Error, status)
	if ferr == nil && ws.write(frame) == nil {
		_ = ws.flush()
	}
}

// eventFrame is one event of a stream in format, its object given as JSON, as kube-apiserver
// frames it: a JSON line {"type":T,"object":O}, or a length-prefixed metav1.WatchEvent whose
// object is in protobuf. size is the encoded object's.
func eventFrame(f format, eventType watch.EventType, object []byte) (frame []byte, size int, err error) {
	if f == formatProtobuf {
		if object, err = wire.ProtobufObject(object); err != nil {
			return nil, 0, err
		}
		frame, err = wire.ProtobufWatchEvent(string(eventType), object)
		return frame, len(object), err
	}
	opening := eventOpenings[eventType]
	frame = make([]byte, 0, len(opening)+len(object)+len(eventClosing))
	return append(append(append(frame, opening...), object...), eventClosing...), len(object), nil
}

// write sends one event within the write timeout.
func (ws *watchStream) write(frame []byte) error {
	ws.begin()
	ws.setWriteDeadline()
	ws.unflushed = true
	_, err := ws.body().Write(frame)
	return err
}

// eventOpenings are the bytes before the object of each type's JSON event line (every type a
// watch sends), made once rather than for every event.
var (
	eventOpenings = func() map[watch.EventType][]byte {
		openings := map[watch.EventType][]byte{}
		for _, t := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
			openings[t] = []byte(`{"type":"` + string(t) + `","object":`)
		}
		return openings
	}()
	eventClosing = []byte("}\n")
)

// body is where event lines go: the response, or the current gzip member.
func (ws *watchStream) body() io.Writer {
	if !ws.gzip {
		return ws.w
	}
	if ws.gzWriter == nil {
		ws.gzWriter = gzipWriters.Get().(*gzip.Writer)
		ws.gzWriter.Reset(ws.w)
	}
	return ws.gzWriter
}

// flush sends what was written, within the deadline the write before it set.
func (ws *watchStream) flush() error {
	if !ws.begun {
		return nil // nothing to send yet; flushing would send a header without its Content-Type
	}
	ws.unflushed = false
	if err := ws.closeGzipMember(); err != nil {
		return err
	}
	return ws.rc.Flush()
}

// closeGzipMember ends the gzip member in progress, if any, and returns its writer to the pool.
func (ws *watchStream) closeGzipMember() error {
	if ws.gzWriter == nil {
		return nil
	}
	// Flushing before closing puts the data in a block of its own, so that a gzip reader hands
	// it over before the member's end, rather than waiting for the next member's header.
	err := errors.Join(ws.gzWriter.Flush(), ws.gzWriter.Close())
	ws.gzWriter.Reset(nil)
	gzipWriters.Put(ws.gzWriter)
	ws.gzWriter = nil
	return err
}

// gzipWriters are shared by all watch lists: a gzip writer is large, and a stream holds one
// only between a write and the flush after it.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// isWatchList reports whether a watch is a watch list: initial events ended by a bookmark.
func isWatchList(opts *internalversion.ListOptions) bool {
	return opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.AllowWatchBookmarks
}

// setWriteDeadline gives the writes that follow watchWriteTimeout to complete. Setting a
// deadline costs as much CPU as writing a small event, so a deadline set within the last tenth of
// the timeout is kept: every write still gets at least nine tenths of it.
func (ws *watchStream) setWriteDeadline() {
	now := time.Now()
	if now.Sub(ws.deadlineSet) < watchWriteTimeout/10 {
		return
	}
	ws.deadlineSet = now
	_ = ws.rc.SetWriteDeadline(now.Add(watchWriteTimeout)) // unsupported only in tests' recorders
	if ws.idle == nil {
		ws.idle = time.NewTimer(watchIdleAfter())
	} else {
		ws.idle.Reset(watchIdleAfter())
	}
}

// clearWriteDeadline removes the write deadline while the stream waits for events: the deadline
// bounds writes, and over HTTP/2 it would end a stream that merely had nothing to send. The next
// write sets a new one.
func (ws *watchStream) clearWriteDeadline() {
	ws.deadlineSet = time.Time{}
	_ = ws.rc.SetWriteDeadline(time.Time{})
}

// idleC is the channel on which the write deadline is due to be cleared; nil (never ready)
// before the first write.
func (ws *watchStream) idleC() <-chan time.Time {
	if ws.idle == nil {
		return nil
	}
	return ws.idle.C
}

func (ws *watchStream) stopIdleTimer() {
	if ws.idle != nil {
		ws.idle.Stop()
	}
}
