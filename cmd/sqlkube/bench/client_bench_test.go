package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkClientCreate measures what the tool itself costs per create, against a server that
// answers at once without doing anything: the ceiling the tool puts on any measurement on the
// same machine.
func BenchmarkClientCreate(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/api/v1" {
			writeJSONBody(w, http.StatusOK, discovery("ConfigMap", "configmaps"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"metadata":{"name":"x","resourceVersion":"1"}}`)
	}))
	defer srv.Close()
	o, err := parseFlags([]string{"--server", srv.URL, "--concurrency", "64"}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	o.count = b.N
	b.ResetTimer()
	rep, err := run(context.Background(), o, io.Discard)
	if err != nil || rep.Errors != 0 {
		b.Fatalf("%v, %d errors", err, rep.Errors)
	}
	b.ReportMetric(rep.OpsPerSecond, "creates/s")
}

// BenchmarkWatchConsume measures what reading one 1 KiB watch event costs a watcher.
func BenchmarkWatchConsume(b *testing.B) {
	bench := &bench{runID: "r"}
	tgt := newTarget(resourceRef{Version: "v1", Resource: "configmaps"}, "ConfigMap", "ns", 1024)
	var stream bytes.Buffer
	for i := range b.N {
		event := fmt.Sprintf(`{"type":"ADDED","object":%s}`+"\n", tgt.body(bench.watchObjectName(i%1000), "12345", 0))
		stream.WriteString(event)
	}
	w := &watcher{b: bench, writes: newWriteTimes(1000), rec: newRecorder()}
	b.SetBytes(int64(stream.Len() / b.N))
	b.ResetTimer()
	if o := w.consume(&stream); !o.ok() || w.received != int64(b.N) {
		b.Fatalf("%+v, received %d of %d", o, w.received, b.N)
	}
}
