package endpoints_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestListCompression(t *testing.T) {
	api := sqliteAPI(t)
	small := api.do("GET", cmPath, "", "Accept-Encoding: gzip").expect(t, http.StatusOK)
	if small.header.Get("Content-Encoding") != "" {
		t.Fatalf("a small list was compressed")
	}
	payload := strings.Repeat("x", 1024)
	for i := range 200 {
		api.do("POST", cmPath, fmt.Sprintf(`{"metadata":{"name":"big-%03d"},"data":{"p":"%s"}}`, i, payload)).expect(t, http.StatusCreated)
	}
	big := api.do("GET", cmPath, "", "Accept-Encoding: gzip").expect(t, http.StatusOK)
	if big.header.Get("Content-Encoding") != "gzip" || big.header.Get("Content-Type") != "application/json" {
		t.Fatalf("large list headers: %v", big.header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(big.body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var l listed
	if err := json.Unmarshal(plain, &l); err != nil || len(l.Items) != 200 {
		t.Fatalf("decompressed list: %d items, %v", len(l.Items), err)
	}
	// Without Accept-Encoding: gzip, the same list is plain (and streamed through a buffer that
	// must be flushed whole); YAML lists are compressed too.
	resp := api.do("GET", cmPath, "", "Accept-Encoding: identity").expect(t, http.StatusOK)
	if resp.header.Get("Content-Encoding") != "" {
		t.Fatal("compressed for a client that does not accept gzip")
	}
	if !bytes.Equal(resp.body, plain) {
		t.Fatalf("plain list of %d bytes differs from the decompressed one of %d", len(resp.body), len(plain))
	}
	if resp := api.do("GET", cmPath, "", "Accept: application/yaml", "Accept-Encoding: gzip").expect(t, http.StatusOK); resp.header.Get("Content-Encoding") != "gzip" {
		t.Fatal("large YAML list not compressed")
	}
}

func TestYAMLList(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", cmPath, `{"metadata":{"name":"a"}}`).expect(t, http.StatusCreated)
	resp := api.do("GET", cmPath, "", "Accept: application/yaml").expect(t, http.StatusOK)
	if resp.header.Get("Content-Type") != "application/yaml" || !strings.Contains(string(resp.body), "kind: ConfigMapList\n") || !strings.Contains(string(resp.body), "    name: a\n") {
		t.Fatalf("YAML list:\n%s", resp.body)
	}
}

func TestLargeObjectCompression(t *testing.T) {
	api := sqliteAPI(t)
	body := `{"metadata":{"name":"big"},"data":{"p":"` + strings.Repeat("x", 200<<10) + `"}}`
	created := api.do("POST", cmPath, body, "Accept-Encoding: gzip").expect(t, http.StatusCreated)
	if created.header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("large create answer not compressed: %v", created.header)
	}
	if got := api.do("GET", cmPath+"/big", "").expect(t, http.StatusOK).object(t); len(str(got, "data", "p")) != 200<<10 {
		t.Fatal("large object read back wrong")
	}
}
