package endpoints_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sqlkube/sqlkube/server/internal/benchcpu"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Cogs have two versions converted by a webhook: v1 (stored) has spec.teeth, v2 spec.count.
const (
	cogsV1 = "/apis/example.com/v1/namespaces/default/cogs"
	cogsV2 = "/apis/example.com/v2/namespaces/default/cogs"
)

// cogCRD defines Cogs, with conversion (a CustomResourceConversion's JSON). Both versions'
// schemas have both fields, so that strategy None serves them too.
func cogCRD(conversion string) string {
	schema := `"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"teeth":{"type":"integer"},"count":{"type":"integer"}}}}}}`
	return `{"metadata":{"name":"cogs.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
	"names":{"plural":"cogs","singular":"cog","kind":"Cog","listKind":"CogList"},"conversion":` + conversion + `,
	"versions":[{"name":"v1","served":true,"storage":true,` + schema + `},{"name":"v2","served":true,"storage":false,` + schema + `}]}}`
}

func webhookConversion(url string, caBundle []byte) string {
	bundle, _ := json.Marshal(caBundle)
	return `{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"` + url + `","caBundle":` + string(bundle) + `}}}`
}

// cogConverter is a conversion webhook renaming spec.teeth to spec.count and back; then it
// applies touch, if set, to each converted object.
type cogConverter struct {
	touch atomic.Pointer[func(obj map[string]any)]
}

func (c *cogConverter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		var obj map[string]any
		_ = json.Unmarshal(raw.Raw, &obj)
		spec, _ := obj["spec"].(map[string]any)
		from, to := "teeth", "count"
		if review.Request.DesiredAPIVersion == "example.com/v1" {
			from, to = to, from
		}
		if n, ok := spec[from]; ok {
			obj["spec"] = map[string]any{to: n}
		}
		obj["apiVersion"] = review.Request.DesiredAPIVersion
		if touch := c.touch.Load(); touch != nil {
			(*touch)(obj)
		}
		converted, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: converted})
	}
	review.Request, review.Response = nil, resp
	_ = json.NewEncoder(w).Encode(&review)
}

// cogsAPI is a server with the Cog CRD, converted by a webhook in this process.
func cogsAPI(t testing.TB) (*testAPI, *cogConverter) {
	converter := &cogConverter{}
	hook := httptest.NewTLSServer(converter)
	t.Cleanup(hook.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	return cogsAPIWith(t, webhookConversion(hook.URL, caBundle)), converter
}

func cogsAPIWith(t testing.TB, conversion string) *testAPI {
	api := sqliteAPI(t)
	api.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", cogCRD(conversion)).expect(t, http.StatusCreated)
	return api
}

func cog(version, name, spec string) string {
	return `{"apiVersion":"example.com/` + version + `","kind":"Cog","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
}

// TestConversionWebhookMetadata: the webhook may change labels and annotations, and nothing
// else of the metadata, as kube-apiserver's converter checks.
func TestConversionWebhookMetadata(t *testing.T) {
	api, converter := cogsAPI(t)
	created := api.do("POST", cogsV1, cog("v1", "c1", `{"teeth":12}`)).expect(t, http.StatusCreated).object(t)
	rv := created["metadata"].(map[string]any)["resourceVersion"].(string)

	labelled := func(obj map[string]any) {
		obj["metadata"].(map[string]any)["labels"] = map[string]any{"converted": "yes"}
		obj["metadata"].(map[string]any)["generation"] = 42 // not the webhook's to change: restored
	}
	converter.touch.Store(&labelled)
	got := api.do("GET", cogsV2+"/c1", "").expect(t, http.StatusOK).object(t)
	meta := got["metadata"].(map[string]any)
	if fmt.Sprint(got["spec"], meta["labels"], meta["generation"]) != "map[count:12] map[converted:yes] 1" {
		t.Errorf("through v2: spec %v, labels %v, generation %v; want the count, the webhook's label and generation 1", got["spec"], meta["labels"], meta["generation"])
	}

	renamed := func(obj map[string]any) { obj["metadata"].(map[string]any)["name"] = "other" }
	converter.touch.Store(&renamed)
	corrupt := "StorageError: corrupt object, Code: 7, Key: /example.com/cogs/default/c1, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=" + rv +
		": conversion webhook for example.com/v1, Kind=Cog returned invalid object: must have the same name: c1 != other"
	api.do("GET", cogsV2+"/c1", "").expectStatus(t, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonInternalError, Message: "Internal error occurred: " + corrupt,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: corrupt}}}})
	api.do("POST", cogsV2, cog("v2", "c2", `{"count":3}`)).expectStatus(t, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Message: "conversion webhook for example.com/v2, Kind=Cog returned invalid object: must have the same name: c2 != other"})
}

// BenchmarkConversion creates and gets Cogs from one client through the storage version and
// through v2, with conversion strategy None and with a webhook (HTTPS, in this process). Through
// v2 a create calls the webhook twice (to store the object, then to answer it) and a get once.
// cpu-µs/op counts both sides.
func BenchmarkConversion(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchmarkCogs(b, cogsAPIWith(b, `{"strategy":"None"}`)) })
	b.Run("webhook", func(b *testing.B) {
		api, _ := cogsAPI(b)
		benchmarkCogs(b, api)
	})
}

func benchmarkCogs(b *testing.B, api *testAPI) {
	for _, path := range []string{cogsV1, cogsV2} {
		version := strings.Split(path, "/")[3]
		field := map[string]string{"v1": "teeth", "v2": "count"}[version]
		var seq atomic.Int64
		b.Run(version+"/create", func(b *testing.B) {
			defer benchcpu.Report(b)()
			for range b.N {
				body := cog(version, fmt.Sprintf("%s-%d", version, seq.Add(1)), `{"`+field+`":3}`)
				benchSend(b, "POST", api.http.URL+path, []byte(body), http.StatusCreated)
			}
		})
		b.Run(version+"/get", func(b *testing.B) {
			defer benchcpu.Report(b)()
			for range b.N {
				benchSend(b, "GET", api.http.URL+path+"/"+version+"-1", nil, http.StatusOK)
			}
		})
	}
}
