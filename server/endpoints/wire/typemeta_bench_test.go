package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkWithoutTypeMeta cuts kind and apiVersion out of a stored Pod of ~2 KiB, as a list of
// Pods does for each item.
func BenchmarkWithoutTypeMeta(b *testing.B) {
	pod := map[string]any{
		"kind": "Pod", "apiVersion": "v1",
		"metadata": map[string]any{
			"name": "web-7d4b9c8f6d-x2x9q", "namespace": "default", "uid": "5f1c2b3e-9a8d-4c7b-b6a5-1e2d3c4b5a69",
			"labels":      map[string]any{"app": "web", "pod-template-hash": "7d4b9c8f6d"},
			"annotations": map[string]any{"note": strings.Repeat(`escaped \"quotes\" and text `, 20)},
		},
		"spec": map[string]any{"containers": []any{map[string]any{
			"name": "web", "image": "registry.example.com/web:1.2.3",
			"args": []any{"--listen=:8080", "--log-level=info", strings.Repeat("x", 600)},
			"env":  []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": "2"}},
		}}},
		"status": map[string]any{"phase": "Running", "podIP": "10.0.0.7"},
	}
	stored, err := json.Marshal(pod)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(stored)))
	var buf []byte
	for b.Loop() {
		buf = AppendWithoutTypeMeta(buf[:0], stored)
	}
}
