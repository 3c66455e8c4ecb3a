package builtin_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apitypes "k8s.io/apimachinery/pkg/types"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/internal/benchcpu"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// hotTypes are the built-ins written most (the bench table's configmaps, kubelets' leases,
// events), each with a body of ~1 KiB whose %d the benchmarks vary per write.
var hotTypes = []struct{ storageName, body string }{
	{"configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"o%[1]d","labels":{"app":"bench"}},"data":{"key":"%[2]s"}}`},
	{"secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"o%[1]d"},"type":"Opaque","data":{"key":"%[3]s"}}`},
	{"events", `{"apiVersion":"v1","kind":"Event","metadata":{"name":"o%[1]d"},"involvedObject":{"kind":"Pod","namespace":"default","name":"web"},"reason":"Started","message":"%[2]s","type":"Normal","source":{"component":"kubelet"},"count":1}`},
	{"leases.coordination.k8s.io", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"o%[1]d"},"spec":{"holderIdentity":"node-%[1]d","leaseDurationSeconds":40,"renewTime":"2026-01-01T00:00:00.000000Z"}}`},
}

// hotBody is a hot type's body for the object named after n, its data (for the types with
// some) 1 KiB.
func hotBody(body string, n int) []byte {
	data := fmt.Sprintf("%01024d", n)
	return fmt.Appendf(nil, body, n, data, "MTIz"+data[:1020])
}

// hotRegistry is a registry on a new SQLite file serving the built-ins (it makes namespace
// default).
func hotRegistry(b *testing.B) (*registry.Registry, map[string]*resource.Resource) {
	store, err := sqlstore.Open(b.Context(), sqlstore.SQLite(sqltest.SQLitePath(b)), sqlstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	types := servedTypes()
	reg, err := registry.New(b.Context(), store, types["namespaces"], registry.Options{RevisionWait: 300 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	return reg, types
}

// servedTypes are the built-ins by storage name, each in the version it is stored in (core's
// events, not events.k8s.io's).
func servedTypes() map[string]*resource.Resource {
	types := map[string]*resource.Resource{}
	for _, r := range builtin.Resources(func(*resource.Resource) {}, nil) {
		if r.ServesStorageVersion() {
			types[r.StorageName] = r
		}
	}
	return types
}

func decodeHot(b *testing.B, res *resource.Resource, body []byte) *unstructured.Unstructured {
	content, _, err := res.Typed().Decode(body)
	if err != nil {
		b.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

// BenchmarkHotCreate is a create of a hot type through the registry, on SQLite: decoding the
// body, the type's strategy and the write.
func BenchmarkHotCreate(b *testing.B) {
	for _, typ := range hotTypes {
		b.Run(typ.storageName, func(b *testing.B) {
			reg, types := hotRegistry(b)
			ref := registry.Ref{Resource: types[typ.storageName], Namespace: "default"}
			n := 0
			defer benchcpu.Report(b)()
			for b.Loop() {
				n++
				obj := decodeHot(b, ref.Resource, hotBody(typ.body, n))
				if _, _, err := reg.Create(b.Context(), ref, obj, &metav1.CreateOptions{FieldManager: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHotUpdate is an update (a PUT naming the resourceVersion it replaces) of one object
// of a hot type through the registry, on SQLite.
func BenchmarkHotUpdate(b *testing.B) {
	for _, typ := range hotTypes {
		b.Run(typ.storageName, func(b *testing.B) {
			reg, types := hotRegistry(b)
			ref := registry.Ref{Resource: types[typ.storageName], Namespace: "default"}
			stored, _, err := reg.Create(b.Context(), ref, decodeHot(b, ref.Resource, hotBody(typ.body, 0)), &metav1.CreateOptions{FieldManager: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			ref.Name = "o0"
			n := 0
			defer benchcpu.Report(b)()
			for b.Loop() {
				n++
				body := hotBody(typ.body, n)
				obj := decodeHot(b, ref.Resource, body)
				obj.SetName("o0")
				obj.SetResourceVersion(strconv.FormatInt(stored.Revision, 10))
				if stored, _, err = reg.Update(b.Context(), ref, obj, &metav1.UpdateOptions{FieldManager: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// hotPod is a pod as a kwok cluster's scheduler leaves it: bound, its status not yet written.
const hotPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"nodeName":"node-1",` +
	`"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","ports":[{"containerPort":8080}],"resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}],` +
	`"tolerations":[{"key":"kwok.x-k8s.io/node","operator":"Exists","effect":"NoSchedule"}]}}`

// BenchmarkHotPodCreate is the create of a pod (as a ReplicaSet controller makes them, the
// scheduler's binding aside) through the registry, on SQLite.
func BenchmarkHotPodCreate(b *testing.B) {
	reg, types := hotRegistry(b)
	ref := registry.Ref{Resource: types["pods"], Namespace: "default"}
	b.ReportAllocs()
	n := 0
	defer benchcpu.Report(b)()
	for b.Loop() {
		n++
		obj := decodeHot(b, ref.Resource, []byte(hotPod))
		obj.SetName("web-" + strconv.Itoa(n))
		if _, _, err := reg.Create(b.Context(), ref, obj, &metav1.CreateOptions{FieldManager: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

// hotPodStatus is the strategic merge patch of pods/status a kwok kubelet sends, its times
// varied by %d so that every patch changes the object.
const hotPodStatus = `{"status":{"$setElementOrder/conditions":[{"type":"Initialized"},{"type":"Ready"},{"type":"ContainersReady"},{"type":"PodScheduled"}],` +
	`"conditions":[{"lastTransitionTime":"2026-01-01T00:%02[1]d:00Z","status":"True","type":"Initialized"},{"lastTransitionTime":"2026-01-01T00:%02[1]d:00Z","status":"True","type":"Ready"},` +
	`{"lastTransitionTime":"2026-01-01T00:%02[1]d:00Z","status":"True","type":"ContainersReady"}],` +
	`"containerStatuses":[{"image":"registry.k8s.io/pause:3.10","imageID":"","lastState":{},"name":"app","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"2026-01-01T00:%02[1]d:00Z"}}}],` +
	`"hostIP":"10.0.0.1","hostIPs":[{"ip":"10.0.0.1"}],"phase":"Running","podIP":"10.0.0.2","podIPs":[{"ip":"10.0.0.2"}],"startTime":"2026-01-01T00:%02[1]d:00Z"}}`

// BenchmarkHotPodStatusPatch is the write a kwok cluster makes most: a kubelet's strategic merge
// patch of a pod's status, through the registry, on SQLite.
func BenchmarkHotPodStatusPatch(b *testing.B) {
	reg, types := hotRegistry(b)
	ref := registry.Ref{Resource: types["pods"], Namespace: "default"}
	if _, _, err := reg.Create(b.Context(), ref, decodeHot(b, ref.Resource, []byte(hotPod)), &metav1.CreateOptions{FieldManager: "bench"}); err != nil {
		b.Fatal(err)
	}
	ref.Name, ref.Subresource = "web", "status"
	b.ReportAllocs()
	n := 0
	defer benchcpu.Report(b)()
	for b.Loop() {
		n++
		patch := fmt.Appendf(nil, hotPodStatus, n%60)
		if _, _, _, err := reg.Patch(b.Context(), ref, apitypes.StrategicMergePatchType, patch, &metav1.PatchOptions{FieldManager: "kwok"}); err != nil {
			b.Fatal(err)
		}
	}
}
