package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// listed is a decoded list response.
type listed struct {
	Kind     string `json:"kind"`
	Metadata struct {
		ResourceVersion    string `json:"resourceVersion"`
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	} `json:"items"`
}

func (l listed) names() []string {
	var names []string
	for _, it := range l.Items {
		names = append(names, it.Metadata.Name)
	}
	return names
}

func (a *testAPI) list(t testing.TB, path string) listed {
	t.Helper()
	resp := a.do("GET", path, "").expect(t, http.StatusOK)
	var l listed
	if err := json.Unmarshal(resp.body, &l); err != nil {
		t.Fatalf("list body: %v: %s", err, resp.body)
	}
	return l
}

// createConfigMaps creates the named config maps in default and returns the revision of the last.
func (a *testAPI) createConfigMaps(t testing.TB, names ...string) int64 {
	t.Helper()
	var rv string
	for _, n := range names {
		obj := a.do("POST", cmPath, `{"metadata":{"name":"`+n+`","labels":{"name":"`+n+`"}}}`).expect(t, http.StatusCreated).object(t)
		rv = str(obj, "metadata", "resourceVersion")
	}
	rev, _ := strconv.ParseInt(rv, 10, 64)
	return rev
}

func TestListResourceVersionMatrix(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		r1 := api.createConfigMaps(t, "a", "b", "c")
		api.createConfigMaps(t, "d")
		api.do("DELETE", cmPath+"/a", "").expect(t, http.StatusOK)
		current, _ := api.store.CurrentRevision(t.Context())
		cur, old := strconv.FormatInt(current, 10), strconv.FormatInt(r1, 10)
		future := strconv.FormatInt(current+100, 10)
		latest := []string{"b", "c", "d"}
		atR1 := []string{"a", "b", "c"}

		ok := []struct {
			query     string
			rv        string
			items     []string
			continue_ bool
		}{
			{"", cur, latest, false},
			{"resourceVersion=0", cur, latest, false},
			{"resourceVersion=" + old, cur, latest, false},
			{"resourceVersion=" + old + "&resourceVersionMatch=NotOlderThan", cur, latest, false},
			{"resourceVersion=0&resourceVersionMatch=NotOlderThan", cur, latest, false},
			{"resourceVersion=" + old + "&resourceVersionMatch=Exact", old, atR1, false},
			{"resourceVersion=" + old + "&limit=2", old, atR1[:2], true},
			{"resourceVersion=" + old + "&resourceVersionMatch=Exact&limit=2", old, atR1[:2], true},
			{"resourceVersion=" + old + "&resourceVersionMatch=NotOlderThan&limit=2", cur, latest[:2], true},
			// Served from kube-apiserver's watch cache, which ignores limit.
			{"resourceVersion=0&limit=2", cur, latest, false},
			{"limit=2", cur, latest[:2], true},
			{"limit=3", cur, latest, false},
			{"limit=-1", cur, latest, false},
		}
		for _, tt := range ok {
			t.Run(tt.query, func(t *testing.T) {
				l := api.list(t, cmPath+"?"+tt.query)
				if l.Kind != "ConfigMapList" || l.Metadata.ResourceVersion != tt.rv || !slices.Equal(l.names(), tt.items) || (l.Metadata.Continue != "") != tt.continue_ {
					t.Fatalf("got kind %s rv %s items %v continue %q; want rv %s items %v continue %v",
						l.Kind, l.Metadata.ResourceVersion, l.names(), l.Metadata.Continue, tt.rv, tt.items, tt.continue_)
				}
			})
		}

		invalid := func(msg string, causes ...metav1.StatusCause) metav1.Status {
			return metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid, Message: `ListOptions.meta.k8s.io "" is invalid: ` + msg,
				Details: &metav1.StatusDetails{Group: "meta.k8s.io", Kind: "ListOptions", Causes: causes}}
		}
		forbidden := func(msg string) metav1.StatusCause {
			return metav1.StatusCause{Type: metav1.CauseType(field.ErrorTypeForbidden), Message: "Forbidden: " + msg, Field: "resourceVersionMatch"}
		}
		tooLarge := func(rv string) metav1.Status {
			return metav1.Status{Code: 504, Reason: metav1.StatusReasonTimeout, Message: "Timeout: Too large resource version: " + rv + ", current: " + cur,
				Details: &metav1.StatusDetails{RetryAfterSeconds: 1, Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}}}
		}
		bad := func(msg string) metav1.Status {
			return metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: msg}
		}
		errs := []struct {
			query string
			want  metav1.Status
		}{
			{"resourceVersionMatch=Exact", invalid("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
				forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided"))},
			{"resourceVersion=0&resourceVersionMatch=Exact", invalid(`resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`,
				forbidden(`resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))},
			{"resourceVersion=1&resourceVersionMatch=Newest", invalid(`resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""`,
				metav1.StatusCause{Type: metav1.CauseTypeFieldValueNotSupported, Message: `Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""`, Field: "resourceVersionMatch"})},
			{"resourceVersion=abc", bad(`invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`)},
			{"resourceVersion=-5", bad(`invalid resource version: resourceVersion: Invalid value: "-5": strconv.ParseUint: parsing "-5": invalid syntax`)},
			{"limit=x", bad(`strconv.ParseInt: parsing "x": invalid syntax`)},
			{"resourceVersion=" + future, tooLarge(future)},
			{"resourceVersion=" + future + "&resourceVersionMatch=Exact", tooLarge(future)},
			{"resourceVersion=" + future + "&limit=1", tooLarge(future)},
			{"continue=bm90LWpzb24", bad("invalid continue token: continue key is not valid: invalid character 'o' in literal null (expecting 'u')")},
		}
		for _, tt := range errs {
			t.Run(tt.query, func(t *testing.T) {
				api.do("GET", cmPath+"?"+tt.query, "").expectStatus(t, tt.want)
			})
		}
	})
}

func TestListPagination(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		var names []string
		for i := range 7 {
			names = append(names, fmt.Sprintf("cm-%d", i))
		}
		api.createConfigMaps(t, names...)
		first := api.list(t, cmPath+"?limit=3")
		snapshot := first.Metadata.ResourceVersion
		if first.Metadata.RemainingItemCount == nil || *first.Metadata.RemainingItemCount != 4 {
			t.Fatalf("remainingItemCount %v, want 4", first.Metadata.RemainingItemCount)
		}
		// Writes between pages do not show: the pages read the first page's snapshot.
		api.do("DELETE", cmPath+"/cm-5", "").expect(t, http.StatusOK)
		api.createConfigMaps(t, "cm-35", "cm-9")
		api.do("PUT", cmPath+"/cm-6", `{"metadata":{"name":"cm-6","labels":{"changed":"yes"}}}`).expect(t, http.StatusOK)

		got := first.names()
		token := first.Metadata.Continue
		for token != "" {
			page := api.list(t, cmPath+"?limit=3&continue="+url.QueryEscape(token))
			if page.Metadata.ResourceVersion != snapshot {
				t.Fatalf("page at %s, want the snapshot %s", page.Metadata.ResourceVersion, snapshot)
			}
			got = append(got, page.names()...)
			token = page.Metadata.Continue
			if token == "" && page.Metadata.RemainingItemCount != nil {
				t.Fatal("last page has remainingItemCount")
			}
		}
		if !slices.Equal(got, names) {
			t.Fatalf("pages gave %v, want %v", got, names)
		}

		// A token belongs to its list.
		api.do("GET", "/api/v1/namespaces/kube-system/configmaps?continue="+url.QueryEscape(first.Metadata.Continue), "").expectStatus(t, metav1.Status{
			Code: 400, Reason: metav1.StatusReasonBadRequest, Message: "invalid continue token: continue key is not valid: the token belongs to another list"})
		api.do("GET", cmPath+"?resourceVersion=5&continue="+url.QueryEscape(first.Metadata.Continue), "").expectStatus(t, metav1.Status{
			Code: 400, Reason: metav1.StatusReasonBadRequest, Message: "specifying resource version is not allowed when using continue"})
		api.do("GET", cmPath+"?resourceVersion=0&continue="+url.QueryEscape(first.Metadata.Continue), "").expect(t, http.StatusOK)

		// Once the snapshot is compacted: 410, with a token that goes on at the latest state.
		current, _ := api.store.CurrentRevision(t.Context())
		if err := api.store.Compact(t.Context(), current); err != nil {
			t.Fatal(err)
		}
		resp := api.do("GET", cmPath+"?limit=3&continue="+url.QueryEscape(first.Metadata.Continue), "").expect(t, http.StatusGone)
		var st metav1.Status
		_ = json.Unmarshal(resp.body, &st)
		if st.Reason != metav1.StatusReasonExpired || !strings.HasPrefix(st.Message, "The provided continue parameter is too old to display a consistent list result.") || st.Continue == "" {
			t.Fatalf("compacted continue: %s", resp.body)
		}
		rest := api.list(t, cmPath+"?limit=10&continue="+url.QueryEscape(st.Continue))
		if want := []string{"cm-3", "cm-35", "cm-4", "cm-6", "cm-9"}; !slices.Equal(rest.names(), want) || rest.Metadata.ResourceVersion != strconv.FormatInt(current, 10) {
			t.Fatalf("continuing at latest: %v at %s, want %v at %d", rest.names(), rest.Metadata.ResourceVersion, want, current)
		}
		snapRev, _ := strconv.ParseInt(snapshot, 10, 64)
		api.do("GET", cmPath+"?resourceVersionMatch=Exact&resourceVersion="+snapshot, "").expectStatus(t, metav1.Status{
			Code: 410, Reason: metav1.StatusReasonExpired, Message: fmt.Sprintf("too old resource version: %d (%d)", snapRev, current)})
	})
}

func TestListItemsOfBuiltinsHaveNoTypeMeta(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", cmPath, `{"metadata":{"name":"a"},"data":{"kind":"x"}}`).expect(t, http.StatusCreated)
	list := api.do("GET", cmPath, "").expect(t, http.StatusOK).object(t)
	item := list["items"].([]any)[0].(map[string]any)
	if list["kind"] != "ConfigMapList" || list["apiVersion"] != "v1" || item["kind"] != nil || item["apiVersion"] != nil || str(item, "data", "kind") != "x" {
		t.Fatalf("list: %v", list)
	}
}

// TestListPagesUnderConcurrentWrites pages through a list while another client keeps creating,
// updating and deleting: the pages together are exactly the snapshot of the first page.
func TestListPagesUnderConcurrentWrites(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		var names []string
		for i := range 30 {
			names = append(names, fmt.Sprintf("p-%02d", i))
		}
		api.createConfigMaps(t, names...)
		stop := make(chan struct{})
		done := make(chan struct{})
		var writes atomic.Int64
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				send(api, "POST", cmPath, fmt.Sprintf(`{"metadata":{"name":"p-%02d-new-%d"}}`, i%30, i))
				send(api, "DELETE", fmt.Sprintf("%s/p-%02d", cmPath, (i*7)%30), "")
				send(api, "PUT", fmt.Sprintf("%s/p-%02d", cmPath, (i*11)%30), fmt.Sprintf(`{"metadata":{"name":"p-%02d"},"data":{"i":"%d"}}`, (i*11)%30, i))
				writes.Add(3)
			}
		}()
		for writes.Load() == 0 {
			runtime.Gosched() // the first page must not come before the writer has started
		}
		first := api.list(t, cmPath+"?limit=4")
		got := first.names()
		for token := first.Metadata.Continue; token != ""; {
			page := api.list(t, cmPath+"?limit=4&continue="+url.QueryEscape(token))
			got = append(got, page.names()...)
			token = page.Metadata.Continue
		}
		close(stop)
		<-done
		if writes.Load() < 6 {
			t.Fatalf("only %d writes ran while paging", writes.Load())
		}
		exact := api.list(t, cmPath+"?resourceVersionMatch=Exact&resourceVersion="+first.Metadata.ResourceVersion)
		if !slices.Equal(got, exact.names()) {
			t.Fatalf("pages gave %v\nsnapshot %s is %v", got, first.Metadata.ResourceVersion, exact.names())
		}
	})
}

// send makes a request from a goroutine that is not the test's, ignoring the answer.
func send(api *testAPI, method, path, body string) {
	req, err := http.NewRequest(method, api.http.URL+path, strings.NewReader(body))
	if err != nil {
		return
	}
	if resp, err := api.http.Client().Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
