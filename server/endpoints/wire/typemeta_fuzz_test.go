package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzWithoutTypeMeta: cutting kind and apiVersion out of an object this server encoded gives
// the same object as decoding it and deleting them.
func FuzzWithoutTypeMeta(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","data":{"kind":"x","a,b":"}{"},"kind":"ConfigMap","metadata":{"name":"a\"kind\":"}}`))
	f.Add([]byte(`{"kind":"A"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"list":[{"kind":1},"\\",{}],"apiVersion":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		encoded, _ := json.Marshal(obj) // what the server stores
		delete(obj, "kind")
		delete(obj, "apiVersion")
		want, _ := json.Marshal(obj)
		cut := AppendWithoutTypeMeta([]byte("prefix"), encoded)[len("prefix"):] // appends to what is there
		var got map[string]any
		if err := json.Unmarshal(cut, &got); err != nil {
			t.Fatalf("%s became invalid JSON %s: %v", encoded, cut, err)
		}
		if gotJSON, _ := json.Marshal(got); !bytes.Equal(gotJSON, want) {
			t.Fatalf("%s: got %s, want %s", encoded, gotJSON, want)
		}
	})
}
