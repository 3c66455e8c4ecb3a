package endpoints_test

import (
	"strings"
	"testing"
)

// TestQueryParameters: every option a request's query carries is decoded as kube-apiserver
// decodes it (apimachinery's parameter codec): a boolean is false only when absent, "0" or
// "false" in any case; an integer that does not parse is 400 BadRequest with strconv's message;
// of repeated values the first counts, except for a list (dryRun), which takes them all; unknown parameters are ignored; options that parse but
// are invalid are 422 Invalid on the options' kind. The watch spellings are in
// TestWatchParameterSpellings.
func TestQueryParameters(t *testing.T) {
	api := sqliteAPI(t)
	const (
		list   = "/api/v1/namespaces/default/configmaps"
		object = list + "/q"
		body   = `{"metadata":{"name":"q"}}`
	)
	for _, c := range []struct {
		method, path string
		code         int
		message      string // a part of the Status message (error responses only)
	}{
		{"GET", list + "?limit=2", 200, ""},
		{"GET", list + "?limit=-1", 200, ""}, // no limit, as kube
		{"GET", list + "?limit=abc", 400, `strconv.ParseInt: parsing "abc": invalid syntax`},
		{"GET", list + "?limit=", 400, `strconv.ParseInt: parsing "": invalid syntax`},
		{"GET", list + "?limit=1.5", 400, `strconv.ParseInt: parsing "1.5": invalid syntax`},
		{"GET", list + "?limit=1&limit=abc", 200, ""},
		{"GET", list + "?limit=abc&limit=1", 400, `parsing "abc"`},
		{"GET", list + "?timeoutSeconds=x", 400, `strconv.ParseInt: parsing "x": invalid syntax`},
		{"GET", list + "?watch=True&timeoutSeconds=abc", 400, `parsing "abc"`},
		{"GET", list + "?allowWatchBookmarks=maybe", 200, ""},
		{"GET", list + "?sendInitialEvents=True", 422, "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"},
		{"GET", list + "?sendInitialEvents=false", 422, "sendInitialEvents is forbidden for list"}, // set at all
		{"GET", list + "?resourceVersionMatch=Exact", 422, "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{"GET", list + "?labelSelector=a%3D%3D%3Db", 400, "unable to parse requirement"},
		{"GET", list + "?fieldSelector=foo", 400, "invalid selector: 'foo'"},
		{"GET", list + "?unknown=1&pretty=maybe", 200, ""},
		{"POST", list + "?dryRun=Bogus", 422, `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]`},
		{"POST", list + "?fieldValidation=Bogus", 422, `fieldValidation: Unsupported value: "Bogus"`},
		{"POST", list + "?dryRun=All&dryRun=Bogus", 422, `dryRun: Unsupported value: ["All","Bogus"]`}, // a list takes every value
		{"POST", list, 201, ""},
		{"PUT", object + "?fieldValidation=Bogus", 422, `UpdateOptions.meta.k8s.io "" is invalid: fieldValidation`},
		{"DELETE", object + "?gracePeriodSeconds=abc", 400, `strconv.ParseInt: parsing "abc": invalid syntax`},
		{"DELETE", object + "?propagationPolicy=Bogus", 422, `propagationPolicy: Unsupported value: "Bogus"`},
		{"DELETE", object + "?dryRun=Bogus", 422, `DeleteOptions.meta.k8s.io "" is invalid: dryRun`},
		{"DELETE", object + "?dryRun=All&gracePeriodSeconds=0&gracePeriodSeconds=x", 200, ""},
	} {
		var reqBody string
		if c.method != "GET" && c.method != "DELETE" {
			reqBody = body
		}
		r := api.do(c.method, c.path, reqBody)
		if r.code != c.code || (c.message != "" && !strings.Contains(string(r.body), jsonQuoted(c.message))) {
			t.Errorf("%s %s: %d %s\nwant %d with %q", c.method, c.path, r.code, r.body, c.code, c.message)
		}
	}
}

// jsonQuoted is s as it appears inside a JSON string.
func jsonQuoted(s string) string {
	return strings.ReplaceAll(s, `"`, `\"`)
}
