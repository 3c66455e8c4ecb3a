package endpoints_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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

// Which state a list reads for its resourceVersion, resourceVersionMatch and limit is the
// registry's rule, tested in server/registry; HTTP reads them from the query, validates the
// combination as kube-apiserver's ListOptions validation does, and answers a ConfigMapList.
func TestListQueryParameters(t *testing.T) {
	api := sqliteAPI(t)
	old := strconv.FormatInt(api.createConfigMaps(t, "a", "b", "c"), 10)
	api.createConfigMaps(t, "d")
	current, _ := api.store.CurrentRevision(t.Context())
	cur := strconv.FormatInt(current, 10)
	all := []string{"a", "b", "c", "d"}
	ok := []struct {
		query     string
		rv        string
		items     []string
		continue_ bool
	}{
		{"", cur, all, false},
		{"resourceVersion=" + old + "&resourceVersionMatch=Exact", old, all[:3], false},
		{"resourceVersion=" + old + "&resourceVersionMatch=NotOlderThan&limit=2", cur, all[:2], true},
		{"resourceVersion=0&limit=2", cur, all, false},
		{"limit=2", cur, all[:2], true},
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
		{"limit=x", bad(`strconv.ParseInt: parsing "x": invalid syntax`)},
		{"continue=bm90LWpzb24", bad("invalid continue token: continue key is not valid: invalid character 'o' in literal null (expecting 'u')")},
	}
	for _, tt := range errs {
		t.Run(tt.query, func(t *testing.T) {
			api.do("GET", cmPath+"?"+tt.query, "").expectStatus(t, tt.want)
		})
	}
}

// The snapshot and token rules of pages are the registry's, tested in server/registry; HTTP
// reads limit and continue from the query and writes continue and remainingItemCount.
func TestListPagesHTTP(t *testing.T) {
	api := sqliteAPI(t)
	api.createConfigMaps(t, "a", "b", "c")
	first := api.list(t, cmPath+"?limit=2")
	if !slices.Equal(first.names(), []string{"a", "b"}) || first.Metadata.Continue == "" ||
		first.Metadata.RemainingItemCount == nil || *first.Metadata.RemainingItemCount != 1 {
		t.Fatalf("first page %v continue %q remaining %v", first.names(), first.Metadata.Continue, first.Metadata.RemainingItemCount)
	}
	last := api.list(t, cmPath+"?limit=2&continue="+url.QueryEscape(first.Metadata.Continue))
	if !slices.Equal(last.names(), []string{"c"}) || last.Metadata.Continue != "" || last.Metadata.RemainingItemCount != nil ||
		last.Metadata.ResourceVersion != first.Metadata.ResourceVersion {
		t.Fatalf("last page %v continue %q remaining %v at %s", last.names(), last.Metadata.Continue, last.Metadata.RemainingItemCount, last.Metadata.ResourceVersion)
	}
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
