package server

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkDecodeObject decodes the body of a 1 KiB config map create, as the write benchmarks
// send it.
func BenchmarkDecodeObject(b *testing.B) {
	s := &Server{opts: Options{MaxRequestBodyBytes: defaultMaxRequestBodyBytes}}
	res := builtinResources(&Registry{})[1]
	body := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","resourceVersion":""},"data":{"payload":%q}}`, strings.Repeat("x", 1024))
	b.ReportAllocs()
	for b.Loop() {
		r, _ := http.NewRequest("POST", cmPath, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if _, _, err := s.decodeObject(r, res, ""); err != nil {
			b.Fatal(err)
		}
	}
}
