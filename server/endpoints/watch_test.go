package endpoints_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// eventWait bounds every wait for an event; a healthy stream delivers within milliseconds.
const eventWait = 10 * time.Second

// wireEvent is one watch event as read from the wire.
type wireEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

func (e wireEvent) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Object, &m); err != nil {
		t.Fatalf("event object is not JSON: %v: %s", err, e.Object)
	}
	return m
}

// summary is "TYPE name resourceVersion", how the tests state expected sequences.
func (e wireEvent) summary(t testing.TB) string {
	o := e.object(t)
	return fmt.Sprintf("%s %s %s", e.Type, str(o, "metadata", "name"), str(o, "metadata", "resourceVersion"))
}

// wireWatch is a watch response being read line by line: every line must be one event.
type wireWatch struct {
	t      testing.TB
	resp   *http.Response
	events chan wireEvent
	cancel context.CancelFunc
}

// watch opens a watch on path (with its query) and checks it started as kube-apiserver starts
// one: 200, Content-Type application/json. headers are "Name: value" strings.
func (a *testAPI) watch(path string, headers ...string) *wireWatch {
	a.t.Helper()
	ww := a.openWatch(path, headers...)
	if ww.resp.StatusCode != http.StatusOK {
		a.t.Fatalf("watch %s: status %d", path, ww.resp.StatusCode)
	}
	if ct := ww.resp.Header.Get("Content-Type"); ct != "application/json" {
		a.t.Fatalf("watch Content-Type %q, want application/json", ct)
	}
	go ww.read()
	return ww
}

// openWatch sends a watch request; reading the response is up to the caller.
func (a *testAPI) openWatch(path string, headers ...string) *wireWatch {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.http.URL+path, nil)
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	resp, err := a.http.Client().Do(req)
	if err != nil {
		cancel()
		a.t.Fatalf("watch %s: %v", path, err)
	}
	ww := &wireWatch{t: a.t, resp: resp, events: make(chan wireEvent, 10000), cancel: cancel}
	a.t.Cleanup(ww.close)
	return ww
}

func (ww *wireWatch) read() {
	defer close(ww.events)
	scanner := bufio.NewScanner(ww.resp.Body)
	scanner.Buffer(nil, 16<<20)
	for scanner.Scan() {
		var ev wireEvent
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil {
			ev = wireEvent{Type: "UNPARSABLE LINE: " + scanner.Text()}
		}
		ww.events <- ev
	}
}

func (ww *wireWatch) close() {
	ww.cancel()
	_ = ww.resp.Body.Close()
}

// next returns the next event, failing if the stream ends or nothing comes in time.
func (ww *wireWatch) next() wireEvent {
	ww.t.Helper()
	select {
	case ev, ok := <-ww.events:
		if !ok {
			ww.t.Fatal("watch ended, want an event")
		}
		return ev
	case <-time.After(eventWait):
		ww.t.Fatal("no watch event in time")
	}
	return wireEvent{}
}

// expect reads len(want) events and compares their summaries.
func (ww *wireWatch) expect(want ...string) {
	ww.t.Helper()
	for i, w := range want {
		if got := ww.next().summary(ww.t); got != w {
			ww.t.Fatalf("event %d: got %q, want %q", i, got, w)
		}
	}
}

// expectEnd waits for the stream to end, failing on any further event.
func (ww *wireWatch) expectEnd() {
	ww.t.Helper()
	select {
	case ev, ok := <-ww.events:
		if ok {
			ww.t.Fatalf("unexpected event %s %s, want the end of the stream", ev.Type, ev.Object)
		}
	case <-time.After(eventWait):
		ww.t.Fatal("watch did not end in time")
	}
}

// configMap is a ConfigMap body in namespace default.
func configMap(name string, labels map[string]string, data string) string {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "labels": labels},
		"data":     map[string]string{"v": data},
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

const configMapsPath = "/api/v1/namespaces/default/configmaps"

// put writes a ConfigMap (create when new, update otherwise) and returns its resourceVersion.
func (a *testAPI) put(name string, labels map[string]string, data string) string {
	a.t.Helper()
	body := configMap(name, labels, data)
	resp := a.do(http.MethodPut, configMapsPath+"/"+name, body)
	if resp.code == http.StatusNotFound {
		resp = a.do(http.MethodPost, configMapsPath, body).expect(a.t, http.StatusCreated)
	}
	return str(resp.expect(a.t, resp.code).object(a.t), "metadata", "resourceVersion")
}

// remove deletes a ConfigMap and returns the delete's revision.
func (a *testAPI) remove(name string) string {
	a.t.Helper()
	a.do(http.MethodDelete, configMapsPath+"/"+name, "").expect(a.t, http.StatusOK)
	return a.listRV()
}

// listRV is the resourceVersion of a list of the configmaps: the store's current revision.
func (a *testAPI) listRV() string {
	a.t.Helper()
	return str(a.do(http.MethodGet, configMapsPath, "").expect(a.t, http.StatusOK).object(a.t), "metadata", "resourceVersion")
}

func TestWatchCreateUpdateDelete(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		start := api.listRV()
		ww := api.watch(configMapsPath + "?watch=1&resourceVersion=" + start)
		rv1 := api.put("a", nil, "1")
		created := api.do(http.MethodGet, configMapsPath+"/a", "").expect(t, http.StatusOK).body
		rv2 := api.put("a", nil, "2")
		rv3 := api.remove("a")
		added := ww.next()
		if added.Type != "ADDED" || string(added.Object) != string(created) {
			t.Fatalf("first event %s %s, want ADDED with the stored object %s (rv %s)", added.Type, added.Object, created, rv1)
		}
		ww.expect("MODIFIED a "+rv2, "DELETED a "+rv3)
	})
}

func TestWatchLabelSelectorEnterAndLeave(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		in, out := map[string]string{"app": "x"}, map[string]string{"app": "y"}
		start := api.listRV()
		ww := api.watch(configMapsPath + "?watch=1&labelSelector=app%3Dx&resourceVersion=" + start)
		api.put("other", out, "0") // never selected: not sent
		rv1 := api.put("a", in, "1")
		rv2 := api.put("a", in, "2")
		rv3 := api.put("a", out, "3") // leaves the selection
		api.put("a", out, "4")        // outside before and after: not sent
		rv5 := api.put("a", in, "5")  // enters again
		rv6 := api.remove("a")
		ww.expect("ADDED a "+rv1, "MODIFIED a "+rv2)
		left := ww.next()
		// kube-apiserver's cacher sends the last selected state at the revision it left.
		if got := left.summary(t); got != "DELETED a "+rv3 {
			t.Fatalf("leaving the selection: %s, want DELETED a %s", got, rv3)
		}
		if o := left.object(t); str(o, "metadata", "labels", "app") != "x" || str(o, "data", "v") != "2" {
			t.Fatalf("DELETED on leaving carries %s, want the previous state", left.Object)
		}
		ww.expect("ADDED a "+rv5, "DELETED a "+rv6)
	})
}

func TestWatchFieldSelectorSingleObject(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		start := api.listRV()
		byField := api.watch(configMapsPath + "?watch=1&fieldSelector=metadata.name%3Da&resourceVersion=" + start)
		byPath := api.watch("/api/v1/watch/namespaces/default/configmaps/a?resourceVersion=" + start)
		api.put("b", nil, "0")
		rv1 := api.put("a", nil, "1")
		api.put("b", nil, "1")
		rv2 := api.remove("a")
		api.remove("b")
		rv3 := api.put("a", nil, "again")
		for _, ww := range []*wireWatch{byField, byPath} {
			ww.expect("ADDED a "+rv1, "DELETED a "+rv2, "ADDED a "+rv3)
		}
		api.do(http.MethodGet, "/api/v1/watch/namespaces/default/configmaps/a?fieldSelector=metadata.name%3Db", "").
			expectStatus(t, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: "fieldSelector metadata.name doesn't match requested name"})
	})
}

func TestWatchStartingPoints(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		rvA := api.put("a", nil, "1")
		rvB := api.put("b", nil, "1")
		for _, query := range []string{"", "&resourceVersion=0"} {
			// Unset and "0": the current state as ADDED events, then the changes after it.
			ww := api.watch(configMapsPath + "?watch=true" + query)
			ww.expect("ADDED a "+rvA, "ADDED b "+rvB)
			rv := api.put("a", nil, "changed"+query)
			ww.expect("MODIFIED a " + rv)
			rvA = rv
		}
		// N: exactly the changes after N, without the state.
		ww := api.watch(configMapsPath + "?watch=true&resourceVersion=" + rvB)
		ww.expect("MODIFIED a "+strconv.Itoa(mustAtoi(t, rvB)+1), "MODIFIED a "+rvA)
		rv := api.put("b", nil, "2")
		ww.expect("MODIFIED b " + rv)
	})
}

func mustAtoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// expectError reads an ERROR event and compares its Status, then expects the stream to end.
func (ww *wireWatch) expectError(want metav1.Status) {
	ww.t.Helper()
	ev := ww.next()
	want.Kind, want.APIVersion, want.Status = "Status", "v1", metav1.StatusFailure
	wantJSON, _ := json.Marshal(want)
	if ev.Type != "ERROR" || string(ev.Object) != string(wantJSON) {
		ww.t.Fatalf("got %s %s\nwant ERROR %s", ev.Type, ev.Object, wantJSON)
	}
	ww.expectEnd()
}

func TestWatchFromCompactedRevision(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		old := api.put("a", nil, "1")
		second := api.put("a", nil, "2")
		current := api.put("a", nil, "3")
		// The change feed must have read the writes before they are compacted away: a feed that
		// finds its history compacted ends every watch (PostgreSQL's feed polls, and lagged here).
		caughtUp := api.watch(configMapsPath + "?watch=1&resourceVersion=" + old)
		caughtUp.expect("MODIFIED a "+second, "MODIFIED a "+current)
		if err := api.store.Compact(context.Background(), int64(mustAtoi(t, current))); err != nil {
			t.Fatal(err)
		}
		ww := api.watch(configMapsPath + "?watch=1&resourceVersion=" + old)
		ww.expectError(metav1.Status{Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
			Message: fmt.Sprintf("too old resource version: %s (%s)", old, current)})
		// From the compacted revision itself, every later change is still there.
		ww = api.watch(configMapsPath + "?watch=1&resourceVersion=" + current)
		rv := api.put("a", nil, "4")
		ww.expect("MODIFIED a " + rv)
	})
}

func TestWatchResumeAfterDisconnect(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		ww := api.watch(configMapsPath + "?watch=1&resourceVersion=" + api.listRV())
		rv1 := api.put("a", nil, "1")
		ww.expect("ADDED a " + rv1)
		ww.close()
		rv2 := api.put("a", nil, "2")
		rv3 := api.put("b", nil, "1")
		rv4 := api.remove("a")
		ww = api.watch(configMapsPath + "?watch=1&resourceVersion=" + rv1)
		rv5 := api.put("b", nil, "2")
		ww.expect("MODIFIED a "+rv2, "ADDED b "+rv3, "DELETED a "+rv4, "MODIFIED b "+rv5)
	})
}

func TestWatchFutureRevision(t *testing.T) {
	api := sqliteAPI(t)
	ahead := mustAtoi(t, api.listRV()) + 2
	// kube-apiserver's watch cache accepts a start it has not reached and sends what follows it.
	ww := api.watch(configMapsPath + "?watch=1&resourceVersion=" + strconv.Itoa(ahead))
	api.put("a", nil, "1")
	api.put("a", nil, "2")
	rv := api.put("a", nil, "3")
	ww.expect("MODIFIED a " + rv)
	// A watch list must see a state not older than the revision: it waits, then fails as a
	// cacher that is not fresh enough does.
	far := strconv.Itoa(ahead + 100)
	wl := api.watch(configMapsPath + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=" + far)
	wl.expectError(metav1.Status{Code: http.StatusGatewayTimeout, Reason: metav1.StatusReasonTimeout,
		Message: "Timeout: Too large resource version: " + far + ", current: " + rv,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}, RetryAfterSeconds: 1}})
}

// nextChange returns the next event that is not a bookmark at revision idle: periodic bookmarks
// may come at any moment while nothing changes.
func (ww *wireWatch) nextChange(idle string) wireEvent {
	ww.t.Helper()
	for {
		ev := ww.next()
		if ev.Type != "BOOKMARK" || ev.summary(ww.t) != "BOOKMARK  "+idle {
			return ev
		}
	}
}

func TestWatchBookmarks(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		api := newTestAPI(t, dsn, apiserver.Options{WatchBookmarkInterval: 50 * time.Millisecond})
		start := api.listRV()
		ww := api.watch(configMapsPath + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + start)
		rv := api.put("a", nil, "1")
		if got := ww.nextChange(start).summary(t); got != "ADDED a "+rv {
			t.Fatalf("got %s, want ADDED a %s", got, rv)
		}
		// The next bookmark covers the event before it, and carries only kind, apiVersion and
		// resourceVersion, as kube-apiserver encodes an empty ConfigMap.
		bookmark := ww.next()
		want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"` + rv + `"}}`
		if bookmark.Type != "BOOKMARK" || string(bookmark.Object) != want {
			t.Fatalf("got %s %s, want BOOKMARK %s", bookmark.Type, bookmark.Object, want)
		}
		// Without allowWatchBookmarks, none.
		plain := api.watch(configMapsPath + "?watch=1&timeoutSeconds=1&resourceVersion=" + rv)
		plain.expectEnd()
	})
}

func TestWatchBookmarkBeforeTimeout(t *testing.T) {
	api := sqliteAPI(t) // the default interval, a minute: only the pre-timeout bookmark comes
	start := api.listRV()
	began := time.Now()
	ww := api.watch(configMapsPath + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion=" + start)
	// The bookmark is due 2s before the timeout, so about 1s in, and must come before the end;
	// only the lower bound is a time: a loaded machine delays, it never hurries.
	ww.expect("BOOKMARK  " + start)
	if at := time.Since(began); at < 500*time.Millisecond {
		t.Fatalf("bookmark after %v, want about 1s (2s before the 3s timeout)", at)
	}
	ww.expectEnd()
	if took := time.Since(began); took < 2900*time.Millisecond {
		t.Fatalf("watch with timeoutSeconds=3 ended after %v", took)
	}
}

func TestWatchList(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		rvA := api.put("a", map[string]string{"app": "x"}, "1")
		api.put("b", map[string]string{"app": "y"}, "1")
		snapshot := api.listRV()
		for _, query := range []string{
			"sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
			"sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=" + rvA,
			// kube-apiserver defaults a watch from unset or "0" to a watch list.
			"allowWatchBookmarks=true",
			"allowWatchBookmarks=true&resourceVersion=0",
		} {
			ww := api.watch(configMapsPath + "?watch=1&labelSelector=app%3Dx&" + query)
			ww.expect("ADDED a " + rvA)
			end := ww.next()
			want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"` + snapshot + `","annotations":{"k8s.io/initial-events-end":"true"}}}`
			if end.Type != "BOOKMARK" || string(end.Object) != want {
				t.Fatalf("%s: got %s %s, want BOOKMARK %s", query, end.Type, end.Object, want)
			}
			ww.close()
		}
		ww := api.watch(configMapsPath + "?watch=1&labelSelector=app%3Dx&allowWatchBookmarks=true")
		ww.expect("ADDED a "+rvA, "BOOKMARK  "+snapshot)
		rv := api.put("a", map[string]string{"app": "x"}, "2")
		ww.expect("MODIFIED a " + rv)
		// sendInitialEvents=false: no state, the changes after the latest revision.
		ww = api.watch(configMapsPath + "?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan")
		rv = api.put("b", nil, "2")
		ww.expect("MODIFIED b " + rv)
	})
}

func TestWatchTimeoutSeconds(t *testing.T) {
	api := sqliteAPI(t)
	began := time.Now()
	ww := api.watch(configMapsPath + "?watch=1&timeoutSeconds=1")
	ww.expectEnd()
	if took := time.Since(began); took < 900*time.Millisecond || took > 5*time.Second {
		t.Fatalf("timeoutSeconds=1 ended the watch after %v", took)
	}
	if te := ww.resp.TransferEncoding; len(te) != 1 || te[0] != "chunked" {
		t.Fatalf("transfer encoding %v, want chunked", te)
	}
}

func TestWatchBadInput(t *testing.T) {
	api := sqliteAPI(t)
	invalid := func(field, detail string) metav1.Status {
		return metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid,
			Message: "ListOptions.meta.k8s.io \"\" is invalid: " + field + ": Forbidden: " + detail,
			Details: &metav1.StatusDetails{Group: "meta.k8s.io", Kind: "ListOptions",
				Causes: []metav1.StatusCause{{Type: metav1.CauseType("FieldValueForbidden"), Message: "Forbidden: " + detail, Field: field}}}}
	}
	for _, tc := range []struct {
		query string
		want  metav1.Status
	}{
		{"watch=1&timeoutSeconds=soon", metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: `strconv.ParseInt: parsing "soon": invalid syntax`}},
		{"watch=1&resourceVersion=abc", metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: `invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`}},
		{"watch=1&sendInitialEvents=true&allowWatchBookmarks=true",
			invalid("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")},
		{"watch=1&resourceVersion=5&resourceVersionMatch=NotOlderThan",
			invalid("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")},
		{"watch=1&fieldSelector=data.v%3D1", metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: `"data.v" is not a known field selector: only "metadata.name", "metadata.namespace"`}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			api.do(http.MethodGet, configMapsPath+"?"+tc.query, "").expectStatus(t, tc.want)
		})
	}
	api.do(http.MethodGet, "/api/v1/namespaces/default/nothings?watch=1", "").expect(t, http.StatusNotFound)
	api.do(http.MethodGet, "/api/v1/watch/namespaces/default/nothings", "").expect(t, http.StatusNotFound)
	// YAML has no stream framing: the 406 (in YAML, as asked) names the formats that have one.
	yamlWatch := api.do(http.MethodGet, configMapsPath+"?watch=1", "", "Accept: application/yaml").expect(t, http.StatusNotAcceptable)
	if want := "application/json;stream=watch,\n  application/vnd.kubernetes.protobuf;stream=watch"; !strings.Contains(string(yamlWatch.body), want) {
		t.Errorf("406 of a YAML watch: %s", yamlWatch.body)
	}
}

// newStoreAPI is a Server over a store of db opened with storeOpts (a small watch buffer, say). It
// also returns the remote addresses of the connections the server has closed.
func newStoreAPI(t *testing.T, db sqlstore.Database, storeOpts sqlstore.Options) (*testAPI, *sync.Map) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := sqlstore.Open(ctx, db, storeOpts)
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	srv, err := apiserver.New(ctx, store, apiserver.Options{})
	if err != nil {
		t.Fatalf("endpoints.New: %v", err)
	}
	closed := &sync.Map{}
	hs := httptest.NewUnstartedServer(srv)
	hs.Config.ConnState = func(c net.Conn, state http.ConnState) {
		if state == http.StateClosed {
			closed.Store(c.RemoteAddr().String(), true)
		}
	}
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		cancel()
		_ = store.Close()
	})
	return &testAPI{t: t, store: store, server: srv, http: hs}, closed
}

// rawWatch sends a watch request on a connection with a small receive buffer, and reads
// nothing until told to.
func rawWatch(t *testing.T, api *testAPI, path string) *net.TCPConn {
	t.Helper()
	conn, err := net.Dial("tcp", api.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tcp := conn.(*net.TCPConn)
	_ = tcp.SetReadBuffer(16 << 10)
	t.Cleanup(func() { _ = tcp.Close() })
	if _, err := fmt.Fprintf(tcp, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	return tcp
}

// readRawWatch reads a raw watch response to its end and returns its events' object names.
func readRawWatch(t *testing.T, conn *net.TCPConn) (names []string, readErr error) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(idleTimeoutReader{conn}), nil)
	if err != nil {
		return nil, err
	}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(nil, 16<<20)
	for scanner.Scan() {
		var ev wireEvent
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil {
			// Only the last line can be cut short, by the server aborting the connection.
			if scanner.Scan() {
				t.Fatalf("unparsable event line before others: %.200s", scanner.Text())
			}
			return names, fmt.Errorf("cut mid-event: %w", scanner.Err())
		}
		names = append(names, str(ev.object(t), "metadata", "name"))
	}
	return names, scanner.Err()
}

// idleTimeoutReader fails a read when nothing arrives for eventWait.
type idleTimeoutReader struct{ conn net.Conn }

func (r idleTimeoutReader) Read(p []byte) (int, error) {
	_ = r.conn.SetReadDeadline(time.Now().Add(eventWait))
	return r.conn.Read(p)
}

func TestWatchSlowConsumerIsDisconnected(t *testing.T) {
	defer endpoints.SetWatchWriteTimeout(time.Second)()
	api, closedConns := newStoreAPI(t, sqlstore.SQLite(sqltest.SQLitePath(t)), sqlstore.Options{WatchBuffer: 16})
	path := configMapsPath + "?watch=1&resourceVersion=" + api.listRV()
	slow := rawWatch(t, api, path)
	fast := api.watch(path)
	const writes = 100
	big := strings.Repeat("x", 256<<10) // 25 MiB in all: more than the sockets hold
	for i := range writes {
		api.put(fmt.Sprintf("cm%03d", i), nil, big)
	}
	// The reading watcher gets every event...
	for i := range writes {
		if ev := fast.next(); ev.Type != "ADDED" || str(ev.object(t), "metadata", "name") != fmt.Sprintf("cm%03d", i) {
			t.Fatalf("event %d: %s %.100s", i, ev.Type, ev.Object)
		}
	}
	// ...while the server hung up on the one that stopped reading...
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, eventWait, true, func(context.Context) (bool, error) {
		_, ok := closedConns.Load(slow.LocalAddr().String())
		return ok, nil
	})
	if err != nil {
		t.Fatal("the server kept the slow watcher's connection")
	}
	// ...and what reached it is a gapless prefix of the events. (The kernel may also have
	// dropped the data of a closed connection whose peer never read, so the read may time out.)
	names, err := readRawWatch(t, slow)
	if len(names) >= writes {
		t.Fatalf("the slow watcher got all %d events", len(names))
	}
	for i, name := range names {
		if name != fmt.Sprintf("cm%03d", i) {
			t.Fatalf("slow watcher's event %d is %s", i, name)
		}
	}
	t.Logf("slow watcher got %d of %d events before being disconnected (%v)", len(names), writes, err)
}

func TestWatchCustomResourceServedVersion(t *testing.T) {
	api := sqliteAPI(t)
	api.do(http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
		crdYAML("widgets", "Widget", "v1beta1", "v1"), "Content-Type: application/yaml").expect(t, http.StatusCreated)
	widgets := "/apis/example.com/v1beta1/namespaces/default/widgets"
	ww := api.watch(widgets + "?watch=1&allowWatchBookmarks=true")
	end := ww.next()
	want := `{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"annotations":{"k8s.io/initial-events-end":"true"},"resourceVersion":"` + api.listRV() + `"}}`
	if end.Type != "BOOKMARK" || string(end.Object) != want {
		t.Fatalf("got %s %s, want BOOKMARK %s", end.Type, end.Object, want)
	}
	created := api.do(http.MethodPost, "/apis/example.com/v1/namespaces/default/widgets",
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`).expect(t, http.StatusCreated)
	added := ww.next()
	// Stored in v1, served through v1beta1: the event carries the watched version.
	if o := added.object(t); added.Type != "ADDED" || str(o, "apiVersion") != "example.com/v1beta1" ||
		str(o, "metadata", "resourceVersion") != str(created.object(t), "metadata", "resourceVersion") {
		t.Fatalf("got %s %s", added.Type, added.Object)
	}
}

func TestWatchTableAndMetadataViews(t *testing.T) {
	api := sqliteAPI(t)
	start := api.listRV()
	table := api.watch(configMapsPath+"?watch=1&resourceVersion="+start, "Accept: application/json;as=Table;v=v1;g=meta.k8s.io")
	partial := api.watch(configMapsPath+"?watch=1&resourceVersion="+start, "Accept: application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
	rv1 := api.put("a", nil, "1")
	rv2 := api.put("a", nil, "2")
	// A Table watch sends its column definitions with the first event only, as kube-apiserver.
	for i, rv := range []string{rv1, rv2} {
		ev := table.next()
		o := ev.object(t)
		if str(o, "kind") != "Table" || str(o, "metadata", "resourceVersion") != rv || (nested(o, "columnDefinitions") != nil) != (i == 0) {
			t.Fatalf("table event %d: %s %s", i, ev.Type, ev.Object)
		}
		if rows, _ := nested(o, "rows").([]any); len(rows) != 1 {
			t.Fatalf("table event %d has %d rows", i, len(rows))
		}
	}
	for _, want := range []string{"ADDED", "MODIFIED"} {
		ev := partial.next()
		if o := ev.object(t); ev.Type != want || str(o, "kind") != "PartialObjectMetadata" || nested(o, "data") != nil {
			t.Fatalf("metadata event: %s %s", ev.Type, ev.Object)
		}
	}
}

func TestWatchListGzip(t *testing.T) {
	api := sqliteAPI(t)
	rvA := api.put("a", nil, "1")
	// Asking for gzip ourselves, so that the transport hands over the compressed stream.
	ww := api.openWatch(configMapsPath+"?watch=1&allowWatchBookmarks=true", "Accept-Encoding: gzip")
	if h := ww.resp.Header; h.Get("Content-Encoding") != "gzip" || h.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("watch list answered without gzip: %v", h)
	}
	gz, err := gzip.NewReader(ww.resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(gz)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stream ended: %v", lines.Err())
		}
		var ev wireEvent
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		return ev.summary(t)
	}
	// Every flush ends a gzip member: each event is readable as soon as it is sent.
	if got := next(); got != "ADDED a "+rvA {
		t.Fatalf("got %s", got)
	}
	if got := next(); got != "BOOKMARK  "+rvA {
		t.Fatalf("got %s", got)
	}
	rv := api.put("a", nil, "2")
	if got := next(); got != "MODIFIED a "+rv {
		t.Fatalf("got %s", got)
	}
	// Plain watches are not compressed, as in kube-apiserver.
	plain := api.openWatch(configMapsPath+"?watch=1&resourceVersion="+rv, "Accept-Encoding: gzip")
	if enc := plain.resp.Header.Get("Content-Encoding"); enc != "" {
		t.Fatalf("plain watch Content-Encoding %q", enc)
	}
}

func TestWatchClientGoneEndsHandler(t *testing.T) {
	api := sqliteAPI(t)
	var watches []*wireWatch
	for _, query := range []string{"", "&resourceVersion=0", "&allowWatchBookmarks=true", "&resourceVersion=" + api.listRV()} {
		watches = append(watches, api.watch(configMapsPath+"?watch=1"+query))
	}
	for _, ww := range watches {
		ww.close()
	}
	// httptest's Close waits for every handler: each watch must end as soon as its client left.
	closed := make(chan struct{})
	go func() {
		api.http.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(eventWait):
		t.Fatal("watch handlers still running after their clients disconnected")
	}
}

// A watch idle for longer than the write timeout is still open: over HTTP/2 an expired write
// deadline resets the stream even with no write pending, so the deadline of the last write must
// not outlive it. And the watch ends cleanly at timeoutSeconds: the end of the response (the last
// chunk, or HTTP/2's END_STREAM), written after the handler returns, must not run into that
// deadline either. It did: the Python client (no bookmarks, timeoutSeconds=10) saw "bad record
// mac" over TLS, and idle HTTP/2 watches were reset after 10 s.
func TestWatchIdleLongerThanWriteTimeout(t *testing.T) {
	defer endpoints.SetWatchWriteTimeout(200 * time.Millisecond)()
	api := sqliteAPI(t)
	tlsServer := httptest.NewUnstartedServer(api.server)
	tlsServer.EnableHTTP2 = true
	tlsServer.StartTLS()
	t.Cleanup(tlsServer.Close)
	for _, tc := range []struct {
		name string
		hs   *httptest.Server
		// proto is the protocol the answer must come in.
		proto string
	}{{"http1", api.http, "HTTP/1.1"}, {"http2-tls", tlsServer, "HTTP/2.0"}} {
		t.Run(tc.name, func(t *testing.T) {
			rv := api.listRV()
			resp, err := tc.hs.Client().Get(tc.hs.URL + configMapsPath + "?watch=1&timeoutSeconds=2&resourceVersion=" + rv)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Proto != tc.proto {
				t.Fatalf("watch answered %d over %s, want 200 over %s", resp.StatusCode, resp.Proto, tc.proto)
			}
			// Idle past the write timeout, before and after an event.
			time.Sleep(3 * endpoints.WatchWriteTimeout())
			name := "idle-" + tc.name
			created := api.put(name, nil, "1")
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("an idle watch ended with %v after %q, want a clean end at timeoutSeconds", err, body)
			}
			var ev wireEvent
			if err := json.Unmarshal(body, &ev); err != nil || ev.summary(t) != "ADDED "+name+" "+created {
				t.Fatalf("an idle watch sent %q, want the one event ADDED %s %s", body, name, created)
			}
		})
	}
}
