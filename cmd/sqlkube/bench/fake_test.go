package bench

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeAPI answers the few requests the tool makes like a Kubernetes API server would: discovery,
// namespaces, a CRD, and create, update, get, paged list and watch on namespaced collections. It
// keeps objects in memory.
type fakeAPI struct {
	mu          sync.Mutex
	revision    int
	objects     map[string]fakeObject // by request path of the object
	crds        map[string]bool       // group/version/resource of created CRDs
	watches     map[chan []byte]string
	failWith    int    // when non-zero, every object write answers this status
	refuseWatch bool   // answer watches 405, as a server without watch support
	token       string // when set, requests must carry it as a bearer token
	conns       connCounter
}

// connCounter counts a server's open connections and the most that were open at once.
type connCounter struct {
	mu            sync.Mutex
	open, maxOpen int
}

func (c *connCounter) track(_ net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateNew:
		c.open++
		c.maxOpen = max(c.maxOpen, c.open)
	case http.StateClosed, http.StateHijacked:
		c.open--
	}
}

func (c *connCounter) most() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxOpen
}

type fakeObject struct {
	revision int
	body     map[string]any
}

func newFakeAPI(t *testing.T) (*fakeAPI, *httptest.Server) {
	f := &fakeAPI{objects: map[string]fakeObject{}, crds: map[string]bool{}, watches: map[chan []byte]string{}}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ConnState = f.conns.track
	srv.Start()
	t.Cleanup(srv.Close)
	return f, srv
}

// newFakeTLSAPI is newFakeAPI over HTTPS with a self-signed certificate, requiring token.
func newFakeTLSAPI(t *testing.T, token string) (*fakeAPI, *httptest.Server) {
	f := &fakeAPI{objects: map[string]fakeObject{}, crds: map[string]bool{}, watches: map[chan []byte]string{}, token: token}
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	path := r.URL.Path
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/api/v1":
		writeJSONBody(w, http.StatusOK, discovery("ConfigMap", "configmaps"))
	case len(parts) == 3 && parts[0] == "apis" && f.servesCRD(parts[1]+"/"+parts[2]):
		writeJSONBody(w, http.StatusOK, discovery("Widget", "widgets"))
	case path == "/api/v1/namespaces" && r.Method == http.MethodPost:
		writeJSONBody(w, http.StatusCreated, map[string]any{})
	case strings.HasPrefix(path, crdPath):
		f.serveCRD(w, r)
	case strings.Contains(path, "/namespaces/") && len(parts) >= 5:
		f.serveObjects(w, r, parts)
	default:
		writeStatus(w, http.StatusNotFound, "no route for "+path)
	}
}

func discovery(kind, resource string) map[string]any {
	return map[string]any{"resources": []any{map[string]any{"name": resource, "kind": kind, "namespaced": true}}}
}

func (f *fakeAPI) servesCRD(groupVersion string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crds[groupVersion]
}

func (f *fakeAPI) serveCRD(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		var crd struct {
			Spec struct {
				Group    string `json:"group"`
				Versions []struct {
					Name string `json:"name"`
				} `json:"versions"`
			} `json:"spec"`
		}
		_ = json.NewDecoder(r.Body).Decode(&crd)
		f.mu.Lock()
		f.crds[crd.Spec.Group+"/"+crd.Spec.Versions[0].Name] = true
		f.mu.Unlock()
		writeJSONBody(w, http.StatusCreated, map[string]any{})
		return
	}
	writeJSONBody(w, http.StatusOK, map[string]any{"status": map[string]any{
		"conditions": []any{map[string]any{"type": "Established", "status": "True"}},
	}})
}

// serveObjects handles /api(s)/.../namespaces/NS/RESOURCE[/NAME].
func (f *fakeAPI) serveObjects(w http.ResponseWriter, r *http.Request, parts []string) {
	path := r.URL.Path
	isCollection := len(parts) == slices.Index(parts, "namespaces")+3
	switch {
	case isCollection && r.Method == http.MethodPost:
		f.write(w, r, path, true)
	case isCollection && r.Method == http.MethodDelete:
		f.deleteLabelled(w, r.URL.Query().Get("labelSelector"))
	case isCollection && r.URL.Query().Get("watch") == "1" && f.refuseWatch:
		writeStatus(w, http.StatusMethodNotAllowed, "watch is not supported")
	case isCollection && r.URL.Query().Get("watch") == "1":
		f.watch(w, r, path)
	case isCollection:
		f.list(w, r, path)
	case r.Method == http.MethodPut:
		f.write(w, r, path[:strings.LastIndex(path, "/")], false)
	default:
		f.get(w, path)
	}
}

func (f *fakeAPI) write(w http.ResponseWriter, r *http.Request, collection string, create bool) {
	var obj map[string]any
	if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
		writeStatus(w, http.StatusBadRequest, err.Error())
		return
	}
	meta := obj["metadata"].(map[string]any)
	key := collection + "/" + meta["name"].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	old, exists := f.objects[key]
	switch {
	case f.failWith != 0:
		writeStatus(w, f.failWith, "injected failure")
		return
	case create && exists:
		writeStatus(w, http.StatusConflict, "already exists")
		return
	case !create && (!exists || meta["resourceVersion"] != strconv.Itoa(old.revision)):
		writeStatus(w, http.StatusConflict, "the object has been modified")
		return
	}
	f.revision++
	meta["resourceVersion"] = strconv.Itoa(f.revision)
	f.objects[key] = fakeObject{revision: f.revision, body: obj}
	event, _ := json.Marshal(map[string]any{"type": map[bool]string{true: "ADDED", false: "MODIFIED"}[create], "object": obj})
	event = append(event, '\n') // once here: the slice is shared by every watcher
	for ch, watched := range f.watches {
		if watched == collection {
			ch <- event
		}
	}
	writeJSONBody(w, map[bool]int{true: http.StatusCreated, false: http.StatusOK}[create], obj)
}

func (f *fakeAPI) get(w http.ResponseWriter, key string) {
	f.mu.Lock()
	obj, ok := f.objects[key]
	f.mu.Unlock()
	if !ok {
		writeStatus(w, http.StatusNotFound, "not found")
		return
	}
	writeJSONBody(w, http.StatusOK, obj.body)
}

// list pages through the collection in name order; the continue token is the last name returned.
func (f *fakeAPI) list(w http.ResponseWriter, r *http.Request, collection string) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	after := r.URL.Query().Get("continue")
	f.mu.Lock()
	var keys []string
	for k := range f.objects {
		if strings.HasPrefix(k, collection+"/") && k > collection+"/"+after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	cont := ""
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
		cont = keys[limit-1][len(collection)+1:]
	}
	items := make([]any, len(keys))
	for i, k := range keys {
		items[i] = f.objects[k].body
	}
	revision := f.revision
	f.mu.Unlock()
	writeJSONBody(w, http.StatusOK, map[string]any{
		"metadata": map[string]any{"resourceVersion": strconv.Itoa(revision), "continue": cont},
		"items":    items,
	})
}

// watch streams the events of writes made after it started (the tool always watches from the
// current revision, so that is all it expects).
func (f *fakeAPI) watch(w http.ResponseWriter, r *http.Request, collection string) {
	ch := make(chan []byte, 1<<16)
	f.mu.Lock()
	f.watches[ch] = collection
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.watches, ch)
		f.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "application/json")
	streamEvents(w, r, ch)
}

// streamEvents writes each event from ch as it comes, flushed, until the client goes away.
func streamEvents(w http.ResponseWriter, r *http.Request, ch <-chan []byte) {
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case event := <-ch:
			_, _ = w.Write(event)
			w.(http.Flusher).Flush()
		}
	}
}

func writeJSONBody(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

func writeStatus(w http.ResponseWriter, code int, message string) {
	writeJSONBody(w, code, map[string]any{"kind": "Status", "code": code, "message": message})
}

// deleteLabelled deletes the objects with the label selector's one key=value, in any collection
// (deletecollection; each run's objects are in one).
func (f *fakeAPI) deleteLabelled(w http.ResponseWriter, selector string) {
	key, value, _ := strings.Cut(selector, "=")
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, obj := range f.objects {
		if labels, _ := obj.body["metadata"].(map[string]any)["labels"].(map[string]any); labels[key] == value {
			delete(f.objects, k)
		}
	}
	writeJSONBody(w, http.StatusOK, map[string]any{"kind": "ConfigMapList", "items": []any{}})
}

// objectCount is how many objects the fake holds under prefix.
func (f *fakeAPI) objectCount(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k := range f.objects {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}
