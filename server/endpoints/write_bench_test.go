package endpoints_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/internal/benchcpu"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// BenchmarkWrite creates and replaces 1 KiB config maps through the HTTP handler from 64
// concurrent clients, the shape of `sqlkube bench --op create|update --concurrency 64`.
// cpu-µs/op is the process's CPU time (server, store and clients) per write: steadier than
// ns/op, which follows the disk's fsync times.
func BenchmarkWrite(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchmarkWrite(b, sqltest.SQLiteDSN(b)) })
	b.Run("postgres", func(b *testing.B) { benchmarkWrite(b, sqltest.PostgresDSN(b)) })
}

func benchmarkWrite(b *testing.B, dsn string) {
	api := newTestAPI(b, dsn, apiserver.Options{})
	payload := strings.Repeat("x", 1024)
	body := func(name, rv string) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"resourceVersion":%q},"data":{"payload":%q}}`, name, rv, payload)
	}
	var seq atomic.Int64
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		defer benchcpu.Report(b)()
		b.SetParallelism(32) // 64 clients on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				name := fmt.Sprintf("c%d", seq.Add(1))
				benchSend(b, "POST", api.http.URL+cmPath, body(name, ""), http.StatusCreated)
			}
		})
	})
	b.Run("update", func(b *testing.B) {
		b.ReportAllocs()
		defer benchcpu.Report(b)()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			name := fmt.Sprintf("u%d", seq.Add(1))
			rv := benchSend(b, "POST", api.http.URL+cmPath, body(name, ""), http.StatusCreated)
			for pb.Next() {
				rv = benchSend(b, "PUT", api.http.URL+cmPath+"/"+name, body(name, rv), http.StatusOK)
			}
		})
	})
}

// benchClient keeps one connection per client, as the load tool does.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// benchSend sends one write and returns the resourceVersion of the object in the answer.
func benchSend(b *testing.B, method, url string, body []byte, want int) string {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return ""
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := benchClient.Do(req)
	if err != nil {
		b.Error(err)
		return ""
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Errorf("%s %s: status %d: %s", method, url, resp.StatusCode, out)
		return ""
	}
	const key = `"resourceVersion":"`
	i := bytes.Index(out, []byte(key))
	if i < 0 {
		b.Errorf("no resourceVersion in %s", out)
		return ""
	}
	rest := out[i+len(key):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}
