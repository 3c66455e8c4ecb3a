package e2e

import (
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
)

const protobufMediaType = "application/vnd.kubernetes.protobuf"

// contentTypes records the Content-Type of every answer a client receives, by method and path.
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]string
	next http.RoundTripper
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		c.seen[r.Method+" "+r.URL.Path+"?"+r.URL.Query().Get("watch")] = resp.Header.Get("Content-Type")
		c.mu.Unlock()
	}
	return resp, err
}

func (c *contentTypes) of(t *testing.T, request, want string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if got := c.seen[request]; got != want {
		t.Errorf("%s answered in %q, want %q", request, got, want)
	}
}

// client-go configured as kube's components are (protobuf bodies and answers) works the pods of
// a namespace on the built binary: create, get, list, watch, errors, and the metadata client's
// PartialObjectMetadataList, every answer in protobuf.
func TestProtobufClients(t *testing.T) {
	s := startServer(t, newDSN(t, "SQLite"))
	const ns = "e2e-protobuf"
	createNamespace(t, kubernetes.NewForConfigOrDie(s.restConfig()), ns)
	seen := &contentTypes{seen: map[string]string{}}
	cfg := s.restConfig()
	cfg.ContentType = protobufMediaType
	cfg.AcceptContentTypes = protobufMediaType + ",application/json"
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { seen.next = rt; return seen }
	pods := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(ns)
	podsPath := "/api/v1/namespaces/" + ns + "/pods"

	newPod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	}
	created, err := pods.Create(ctx, newPod("a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen.of(t, "POST "+podsPath+"?", protobufMediaType)
	if created.Spec.ServiceAccountName != "default" || created.Spec.Containers[0].TerminationMessagePath == "" {
		t.Errorf("created pod not defaulted: %+v", created.Spec)
	}
	got, err := pods.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.UID != created.UID || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("get: %v, %+v", err, got.ObjectMeta)
	}
	seen.of(t, "GET "+podsPath+"/a?", protobufMediaType)
	if _, err := pods.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) || err.Error() != `pods "missing" not found` {
		t.Errorf("get of a missing pod: %v", err)
	}
	seen.of(t, "GET "+podsPath+"/missing?", protobufMediaType)

	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "a" || list.ResourceVersion == "" {
		t.Fatalf("list: %v, %+v", err, list)
	}
	seen.of(t, "GET "+podsPath+"?", protobufMediaType)

	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	seen.of(t, "GET "+podsPath+"?true", protobufMediaType+";stream=watch")
	if _, err := pods.Create(ctx, newPod("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	// ADDED, then (the deletion's MODIFIED between) DELETED, every event a typed pod.
	for want := watch.Added; want != ""; {
		select {
		case ev := <-w.ResultChan():
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || pod.Name != "b" || (ev.Type != want && ev.Type != watch.Modified) || (want == watch.Added && ev.Type != want) {
				t.Fatalf("event %s %#v, want %s of pod b", ev.Type, ev.Object, want)
			}
			if ev.Type == want {
				want = map[watch.EventType]watch.EventType{watch.Added: watch.Deleted}[want]
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}

	// The metadata client (kube-controller-manager's garbage collector and quota) asks for
	// PartialObjectMetadataList in protobuf.
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	partial, err := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(partial.Items) != 1 || partial.Items[0].UID != created.UID {
		t.Fatalf("metadata list: %v, %+v", err, partial)
	}
	seen.of(t, "GET "+podsPath+"?", protobufMediaType)
}
