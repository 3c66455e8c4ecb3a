package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
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
// one: 200, Content-Type application/json.
func (a *testAPI) watch(path string) *wireWatch {
	a.t.Helper()
	ww := a.openWatch(path)
	if ww.resp.StatusCode != http.StatusOK {
		a.t.Fatalf("watch %s: status %d", path, ww.resp.StatusCode)
	}
	if ct := ww.resp.Header.Get("Content-Type"); ct != "application/json" {
		a.t.Fatalf("watch Content-Type %q, want application/json", ct)
	}
	return ww
}

func (a *testAPI) openWatch(path string) *wireWatch {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.http.URL+path, nil)
	resp, err := a.http.Client().Do(req)
	if err != nil {
		cancel()
		a.t.Fatalf("watch %s: %v", path, err)
	}
	ww := &wireWatch{t: a.t, resp: resp, events: make(chan wireEvent, 10000), cancel: cancel}
	a.t.Cleanup(ww.close)
	go ww.read()
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
