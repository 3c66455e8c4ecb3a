package endpoints_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sqlkube/sqlkube/server/internal/benchcpu"
	"github.com/sqlkube/sqlkube/sqlstore"
)

const mediaTypeProtobuf = "application/vnd.kubernetes.protobuf"

// benchPod is a pod as kube's admission leaves it (defaulted, a service account's token
// volume), about 3 KiB of JSON.
func benchPod(b *testing.B, api *testAPI) map[string]any {
	b.Helper()
	api.do("POST", "/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"default"}}`).expect(b, http.StatusCreated)
	return api.do("POST", podsPath, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bench","labels":{"app":"bench","tier":"web"}},
		"spec":{"containers":[{"name":"app","image":"nginx:1.27","ports":[{"containerPort":80}],
		"env":[{"name":"MODE","value":"production"}],"resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}`).
		expect(b, http.StatusCreated).object(b)
}

// BenchmarkWatchFanOutFormats measures what a write of a pod costs when 100 watches receive it, in JSON
// and in protobuf: each of b.N updates is waited for until every watch has read its event.
// cpu-µs/write is the process's CPU time (server and readers) per write.
func BenchmarkWatchFanOutFormats(b *testing.B) {
	const watchers = 100
	for _, format := range []string{"json", "protobuf"} {
		b.Run(format, func(b *testing.B) {
			api := sqliteAPI(b)
			benchPod(b, api)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			received := make(chan struct{}, watchers)
			accept := map[string]string{"json": "application/json", "protobuf": mediaTypeProtobuf}[format]
			start := str(api.do("GET", podsPath, "").object(b), "metadata", "resourceVersion")
			for range watchers {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.http.URL+podsPath+"?watch=1&resourceVersion="+start, nil)
				req.Header.Set("Accept", accept)
				resp, err := api.http.Client().Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("watch: %v %v", err, resp)
				}
				go countEvents(resp.Body, format == "protobuf", received)
			}
			reportCPU := benchcpu.ReportPer(b, "write")
			b.ResetTimer()
			for i := range b.N {
				api.do("PATCH", podsPath+"/bench", fmt.Sprintf(`{"metadata":{"annotations":{"n":"%d"}}}`, i),
					"Content-Type: application/merge-patch+json").expect(b, http.StatusOK)
				for range watchers {
					<-received
				}
			}
			b.StopTimer()
			reportCPU()
		})
	}
}

// countEvents reads a watch stream, sending one value per event, without decoding them: JSON
// lines, or protobuf frames (a big-endian length, then the event).
func countEvents(body io.ReadCloser, protobuf bool, received chan<- struct{}) {
	defer body.Close()
	r := bufio.NewReader(body)
	for {
		if protobuf {
			var n uint32
			if binary.Read(r, binary.BigEndian, &n) != nil {
				return
			}
			if _, err := r.Discard(int(n)); err != nil {
				return
			}
		} else if _, err := r.ReadSlice('\n'); err != nil {
			return
		}
		received <- struct{}{}
	}
}

// BenchmarkPodList lists 2,000 pods (about 3 KiB of JSON each) in JSON and in protobuf, as
// kube's components ask for them.
func BenchmarkPodList(b *testing.B) {
	const pods = 2000
	api := sqliteAPI(b)
	pod := benchPod(b, api)
	for i := range pods {
		obj := &unstructured.Unstructured{Object: pod}
		obj = obj.DeepCopy()
		obj.SetName(fmt.Sprintf("pod-%d", i))
		obj.SetUID(typesUID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)))
		key := sqlstore.Key{Resource: "pods", Namespace: "default", Name: obj.GetName()}
		if _, err := api.store.Write(context.Background(), sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: renderAtRevision(obj)}); err != nil {
			b.Fatal(err)
		}
	}
	for _, accept := range []string{"application/json", mediaTypeProtobuf} {
		b.Run(strings.TrimPrefix(accept, "application/"), func(b *testing.B) {
			peak := sampleHeap(b)
			b.ReportAllocs()
			var size int64
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, api.http.URL+podsPath, nil)
				req.Header.Set("Accept", accept)
				resp, err := api.http.Client().Do(req)
				if err != nil {
					b.Fatal(err)
				}
				size, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != accept {
					b.Fatalf("status %d, %s", resp.StatusCode, resp.Header.Get("Content-Type"))
				}
			}
			b.ReportMetric(float64(size), "resp-bytes")
			b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
		})
	}
}
