package server

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	endpointsmetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	compbasemetrics "k8s.io/component-base/metrics"

	"github.com/sqlkube/sqlkube/server/metrics"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

const (
	// defaultBookmarkInterval is how often kube-apiserver's cacher sends a watch a bookmark.
	defaultBookmarkInterval = time.Minute
	// bookmarkBeforeTimeout: the cacher also sends one this long before a watch's deadline, so
	// that the client resumes from a recent revision.
	bookmarkBeforeTimeout = 2 * time.Second
)

// watchWriteTimeout bounds each write to a watch client. A client that stops reading is
// disconnected once its socket buffers are full for this long, so it holds at most those buffers
// and the store's bounded queue (which ends the watch on its own once it is full).
var watchWriteTimeout = 10 * time.Second

// serveWatch answers a watch: a chunked stream of JSON watch events, one per line. Bad
// parameters are answered with a Status; once the stream has started, errors (a compacted start
// revision among them) are sent as an ERROR event, as kube-apiserver does.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, req *request) {
	ws, opts, err := s.newWatchStream(w, r, req)
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
	ctx, cancel := context.WithTimeout(r.Context(), watchTimeout(opts, s.limits.MinRequestTimeout))
	defer cancel()
	defer ws.watch.Close()
	defer metrics.WatcherOpened(req.res.Group, req.res.Kind)()
	if err := ws.watch.Start(ctx, ws.send); err != nil {
		ws.sendError(err)
		return
	}
	if err := ws.flush(); err != nil {
		return
	}
	// As in kube-apiserver, the header goes out once the watch has its starting point: a client
	// that has it sees every later write.
	ws.begin()
	// Priority and fairness counts a watch against its concurrency only until here.
	utilflowcontrol.WatchInitialized(r.Context())
	if err := ws.follow(ctx); err != nil {
		ws.sendError(err)
	}
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
	// encode turns an object as stored into the view the client asked for.
	encode func(value []byte) ([]byte, error)
	// fullObjects is true when the client asked for whole objects (not a Table or metadata).
	fullObjects bool
	bookmarks   bool
	begun       bool
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
	// apiserver_watch_events_sizes of the watched type, looked up once per watch.
	events     compbasemetrics.CounterMetric
	eventSizes compbasemetrics.ObserverMetric
}

// newWatchStream reads a watch request: the same options, selectors and negotiation as a list.
func (s *Server) newWatchStream(w http.ResponseWriter, r *http.Request, req *request) (*watchStream, *internalversion.ListOptions, error) {
	if req.subresource != "" {
		return nil, nil, errNotFoundPath()
	}
	out, err := negotiateOutput(r, false)
	if err != nil {
		return nil, nil, err
	}
	if out.yaml {
		return nil, nil, errNotAcceptable() // YAML has no stream framing
	}
	opts, err := parseListOptions(r)
	if err != nil {
		return nil, nil, err
	}
	if req.legacyWatch && !opts.Watch {
		// A /watch/ path watches whatever its query says: from resourceVersion "" or "0" it
		// starts with the current objects, as a watch=true request does.
		opts.Watch = true
		internalversion.SetListOptionsDefaults(opts, watchListEnabled)
	}
	watch, err := s.registry.NewWatch(req.ref(), opts)
	if err != nil {
		return nil, nil, err
	}
	encode, err := s.watchEncoder(r, req, out)
	if err != nil {
		return nil, nil, err
	}
	ws := &watchStream{s: s, w: w, rc: http.NewResponseController(w), req: req, watch: watch, encode: encode,
		fullObjects: out.view == viewObject,
		bookmarks:   opts.AllowWatchBookmarks, gzip: isWatchList(opts) && acceptsGzip(r)}
	labels := []string{req.res.Group, req.res.Version, req.res.Name}
	ws.events = endpointsmetrics.WatchEvents.WithContext(r.Context()).WithLabelValues(labels...)
	ws.eventSizes = endpointsmetrics.WatchEventsSizes.WithContext(r.Context()).WithLabelValues(labels...)
	return ws, opts, nil
}

// watchEncoder gives how event objects are encoded for the negotiated view. A Table carries its
// column definitions in the first event only, as kube-apiserver's watch encoder does.
func (s *Server) watchEncoder(r *http.Request, req *request, out output) (func([]byte) ([]byte, error), error) {
	switch out.view {
	case viewPartial:
		return func(value []byte) ([]byte, error) {
			served, err := registry.ServedJSON(req.res, value)
			if err != nil {
				return nil, err
			}
			return partialMetadataJSON(served, out.metaVersion)
		}, nil
	case viewTable:
		tc, err := s.newTableConverter(r, req, out.metaVersion)
		if err != nil {
			return nil, err
		}
		headers := true
		return func(value []byte) ([]byte, error) {
			served, err := registry.ServedJSON(req.res, value)
			if err != nil {
				return nil, err
			}
			row, obj, err := tc.row(r.Context(), served)
			if err != nil {
				return nil, err
			}
			table := tc.table()
			if !headers {
				table.ColumnDefinitions = nil
			}
			headers = false
			table.Rows = []metav1.TableRow{row}
			table.ResourceVersion = obj.GetResourceVersion()
			return json.Marshal(table)
		}, nil
	}
	return func(value []byte) ([]byte, error) { return registry.ServedJSON(req.res, value) }, nil
}

// begin sends the response header, once: from here on the answer is 200 and errors are events.
func (ws *watchStream) begin() {
	if ws.begun {
		return
	}
	ws.begun = true
	ws.w.Header().Set("Content-Type", mediaTypeJSON)
	if ws.gzip {
		ws.w.Header().Set("Content-Encoding", "gzip")
		ws.w.Header().Add("Vary", "Accept-Encoding")
	}
	ws.w.WriteHeader(http.StatusOK)
	ws.setWriteDeadline()
	_ = ws.flush()
}

// follow streams the watch's events until it times out, the client goes away, a write fails, or
// the store ends the watch.
func (ws *watchStream) follow(ctx context.Context) error {
	watcher := ws.watch
	bookmarks := newBookmarkSchedule(ctx, ws.bookmarks, ws.s.bookmarkInterval())
	defer bookmarks.stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-bookmarks.c():
			watcher.RequestProgress()
			bookmarks.next()
		case <-ws.idleC():
			ws.clearWriteDeadline()
		case ev, ok := <-watcher.Events():
			if !ok {
				return watcher.Err()
			}
			if err := ws.sendEvent(ev); err != nil {
				return unservable(err)
			}
			if len(watcher.Events()) == 0 {
				if err := ws.flush(); err != nil {
					return nil
				}
			}
		}
	}
}

// unservable is the error that ends a watch when an event could not be sent: an event that
// cannot be served (its conversion webhook failed) ends it with an ERROR event; otherwise the
// client is gone or not reading, and nothing more can reach it.
func unservable(err error) error {
	if errors.As(err, new(apierrors.APIStatus)) {
		return err
	}
	return nil
}

func (s *Server) bookmarkInterval() time.Duration {
	if s.opts.WatchBookmarkInterval > 0 {
		return s.opts.WatchBookmarkInterval
	}
	return defaultBookmarkInterval
}

// sendEvent sends one event of the store's feed as the client's selection sees it.
func (ws *watchStream) sendEvent(ev *sqlstore.Event) error {
	out, ok, err := ws.watch.Next(ev)
	if err != nil || !ok {
		return err
	}
	return ws.send(out)
}

// send sends one event to the client: an initial one or a change.
func (ws *watchStream) send(ev registry.WatchEvent) error {
	if ev.Type == watch.Bookmark {
		return ws.sendBookmark(ev.Revision, ev.InitialEventsEnd)
	}
	return ws.sendObject(ev.Type, ev.Value)
}

// sendObject sends one event carrying a stored object, encoded for the client's view.
func (ws *watchStream) sendObject(eventType watch.EventType, value []byte) error {
	object, err := ws.encode(value)
	if errors.As(err, new(*registry.NotDecodableError)) {
		// As kube-apiserver's storage answers an event it cannot decode.
		return apierrors.NewInternalError(err)
	}
	if err != nil {
		return err
	}
	return ws.sendEncoded(eventType, object)
}

// sendEncoded sends one event whose object is encoded already.
func (ws *watchStream) sendEncoded(eventType watch.EventType, object []byte) error {
	ws.events.Inc()
	ws.eventSizes.Observe(float64(len(object)))
	return ws.write(eventType, object)
}

// sendBookmark sends a BOOKMARK at revision; the one that ends a watch list's initial events
// carries the k8s.io/initial-events-end annotation.
func (ws *watchStream) sendBookmark(revision int64, initialEventsEnd bool) error {
	object, err := bookmarkObject(ws.req.res, revision, initialEventsEnd)
	if err != nil {
		return err
	}
	if ws.fullObjects {
		// Sent as built: the served view would give it a stored object's defaults (generation).
		return ws.sendEncoded(watch.Bookmark, object)
	}
	return ws.sendObject(watch.Bookmark, object)
}

// bookmarkObject is the object of a BOOKMARK event as kube-apiserver encodes it: an empty object
// of the type, with only kind, apiVersion and metadata.resourceVersion (and the initial-events-end
// annotation). Built-in types are encoded from their Go type, so that their fields without
// omitempty appear as they do there; custom resources are bare unstructured objects.
func bookmarkObject(res *resource.Resource, revision int64, initialEventsEnd bool) ([]byte, error) {
	gvk := schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil || res.Schema != nil {
		obj = &unstructured.Unstructured{Object: map[string]any{}}
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	accessor.SetResourceVersion(strconv.FormatInt(revision, 10))
	if initialEventsEnd {
		accessor.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return json.Marshal(u.Object) // what kube-apiserver's unstructured encoder writes
	}
	return json.Marshal(obj)
}

// sendError sends err as the stream's last event: an ERROR event carrying its Status.
func (ws *watchStream) sendError(err error) {
	status, _ := json.Marshal(apiStatus(err))
	if ws.write(watch.Error, status) == nil {
		_ = ws.flush()
	}
}

// write sends one event line, {"type":T,"object":O}, within the write timeout. The parts are
// written as they are, so that the stream holds no buffer of its own the size of an object.
func (ws *watchStream) write(eventType watch.EventType, object []byte) error {
	ws.begin()
	ws.setWriteDeadline()
	body := ws.body()
	if _, err := body.Write(eventOpenings[eventType]); err != nil {
		return err
	}
	if _, err := body.Write(object); err != nil {
		return err
	}
	_, err := body.Write(eventClosing)
	return err
}

// eventOpenings are the bytes before the object of each type's event line (every type a watch
// sends), made once rather than for every event sent to every watch.
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

// acceptsGzip reads Accept-Encoding as kube-apiserver does: any "gzip" token.
func acceptsGzip(r *http.Request) bool {
	for token := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(token) == "gzip" {
			return true
		}
	}
	return false
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
	before := watchWriteTimeout * 9 / 10
	if ws.idle == nil {
		ws.idle = time.NewTimer(before)
	} else {
		ws.idle.Reset(before)
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

// bookmarkSchedule times a watch's bookmarks as kube-apiserver's cacher does: every interval, and
// once more shortly before the watch's deadline.
type bookmarkSchedule struct {
	timer    *time.Timer
	interval time.Duration
	deadline time.Time
}

func newBookmarkSchedule(ctx context.Context, enabled bool, interval time.Duration) *bookmarkSchedule {
	b := &bookmarkSchedule{interval: interval}
	if !enabled {
		return b
	}
	b.deadline, _ = ctx.Deadline()
	b.timer = time.NewTimer(time.Hour)
	b.next()
	return b
}

// next arms the timer for the next bookmark, if there is one before the deadline.
func (b *bookmarkSchedule) next() {
	now := time.Now()
	at := now.Add(b.interval)
	if !b.deadline.IsZero() {
		if last := b.deadline.Add(-bookmarkBeforeTimeout); last.Before(at) {
			at = last
		}
	}
	if at.Before(now) {
		b.stop()
		return
	}
	b.timer.Reset(at.Sub(now))
}

// c is the channel the next bookmark is due on; nil (never ready) without bookmarks.
func (b *bookmarkSchedule) c() <-chan time.Time {
	if b.timer == nil {
		return nil
	}
	return b.timer.C
}

func (b *bookmarkSchedule) stop() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}
