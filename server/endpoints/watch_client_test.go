package endpoints_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// front is an HTTP front for a test server that records the requests client-go makes and can
// cut clients off, as a network partition would.
type front struct {
	http    *httptest.Server
	mu      sync.Mutex
	queries []string
	healed  chan struct{} // open while partitioned
}

func newFront(t *testing.T, api *testAPI) *front {
	f := &front{healed: make(chan struct{})}
	close(f.healed)
	f.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		healed := f.healed
		f.mu.Unlock()
		<-healed
		f.mu.Lock()
		f.queries = append(f.queries, r.URL.Path+"?"+r.URL.RawQuery)
		f.mu.Unlock()
		api.server.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		f.heal()
		f.http.Close()
	})
	return f
}

// partition drops every open connection and holds new requests until heal.
func (f *front) partition() {
	f.mu.Lock()
	f.healed = make(chan struct{})
	f.mu.Unlock()
	f.http.CloseClientConnections()
}

func (f *front) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.healed:
	default:
		close(f.healed)
	}
}

// requests returns the recorded requests whose path and query contain every part.
func (f *front) requests(parts ...string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, q := range f.queries {
		if containsAll(q, parts) {
			out = append(out, q)
		}
	}
	return out
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// jsonClientset is a clientset speaking JSON (the server does not serve protobuf) to url.
func jsonClientset(t *testing.T, url string) *kubernetes.Clientset {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: url, ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// versions is name → resourceVersion of the objects of a list, or of an informer's cache.
func versions[T metav1.Object](objects []T) map[string]string {
	out := map[string]string{}
	for _, o := range objects {
		out[o.GetName()] = o.GetResourceVersion()
	}
	return out
}

// waitInSync waits until the informer holds exactly what list returns from the server.
func waitInSync(t *testing.T, list func() ([]metav1.Object, error), informer cache.SharedIndexInformer) {
	t.Helper()
	objects, err := list()
	if err != nil {
		t.Fatal(err)
	}
	want := versions(objects)
	var got map[string]string
	err = wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, eventWait, true, func(context.Context) (bool, error) {
		cached := informer.GetStore().List()
		objects := make([]metav1.Object, len(cached))
		for i, o := range cached {
			objects[i] = o.(metav1.Object)
		}
		got = versions(objects)
		return maps.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("informer out of sync:\n got %v\nwant %v", got, want)
	}
}

// configMapLister lists the ConfigMaps of default.
func configMapLister(cs *kubernetes.Clientset) func() ([]metav1.Object, error) {
	return func() ([]metav1.Object, error) {
		list, err := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := make([]metav1.Object, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil
	}
}

func startConfigMapInformer(t *testing.T, cs *kubernetes.Clientset) cache.SharedIndexInformer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	informer := factory.Core().V1().ConfigMaps().Informer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return informer
}

func newConfigMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": value}}
}

func TestWatchInformerStaysInSync(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		f := newFront(t, api)
		cs := jsonClientset(t, api.http.URL) // writes and checks bypass the front
		cms := cs.CoreV1().ConfigMaps("default")
		ctx := context.Background()
		if _, err := cms.Create(ctx, newConfigMap("before", "0"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		informer := startConfigMapInformer(t, jsonClientset(t, f.http.URL))
		list := configMapLister(cs)
		// client-go v0.37 syncs with a watch list: initial events, then the end bookmark.
		if len(f.requests("/configmaps?", "sendInitialEvents=true", "watch=true")) == 0 || len(f.requests("/configmaps?", "limit=")) != 0 {
			t.Fatalf("the informer did not sync with a watch list: %v", f.requests("/configmaps"))
		}
		waitInSync(t, list, informer)
		for i, step := range []func() error{
			func() error { _, err := cms.Create(ctx, newConfigMap("a", "1"), metav1.CreateOptions{}); return err },
			func() error { _, err := cms.Update(ctx, newConfigMap("a", "2"), metav1.UpdateOptions{}); return err },
			func() error { return cms.Delete(ctx, "before", metav1.DeleteOptions{}) },
		} {
			if err := step(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			waitInSync(t, list, informer)
		}

		// Cut the informer off, change and compact the history it missed: its watch from its
		// last resourceVersion gets 410 Expired, and it must relist into sync.
		f.partition()
		if _, err := cms.Create(ctx, newConfigMap("during", "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		compactToCurrent(t, api)
		f.heal()
		waitInSync(t, list, informer)
		// It resumed from its last resourceVersion, got 410, and synced again with a watch list.
		reqs := f.requests("/configmaps?")
		if n := len(reqs); n < 3 || strings.Contains(reqs[n-2], "sendInitialEvents") || !strings.Contains(reqs[n-1], "sendInitialEvents=true") {
			t.Fatalf("no resume then relist after the partition: %q", reqs)
		}
		if _, err := cms.Create(ctx, newConfigMap("after", "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitInSync(t, list, informer)
	})
}

func compactToCurrent(t *testing.T, api *testAPI) {
	t.Helper()
	current, err := api.store.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := api.store.Compact(context.Background(), current); err != nil {
		t.Fatal(err)
	}
}

func TestWatchDynamicInformerForCustomResources(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		api.do(http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
			crdYAML("widgets", "Widget", "v1beta1", "v1"), "Content-Type: application/yaml").expect(t, http.StatusCreated)
		client, err := dynamic.NewForConfig(&rest.Config{Host: api.http.URL})
		if err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}
		widgets := client.Resource(gvr).Namespace("default")
		ctx, cancel := context.WithCancel(context.Background())
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, "default", nil)
		t.Cleanup(func() {
			cancel()
			factory.Shutdown()
		})
		informer := factory.ForResource(gvr).Informer()
		factory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			t.Fatal("informer did not sync")
		}
		list := func() ([]metav1.Object, error) {
			l, err := widgets.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := make([]metav1.Object, len(l.Items))
			for i := range l.Items {
				out[i] = &l.Items[i]
			}
			return out, nil
		}
		widget := func(name string, size int64) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1beta1", "kind": "Widget",
				"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": size},
			}}
		}
		for i, step := range []func() error{
			func() error { _, err := widgets.Create(ctx, widget("a", 1), metav1.CreateOptions{}); return err },
			func() error { _, err := widgets.Create(ctx, widget("b", 1), metav1.CreateOptions{}); return err },
			func() error {
				a, err := widgets.Get(ctx, "a", metav1.GetOptions{})
				if err == nil {
					err = unstructured.SetNestedField(a.Object, int64(2), "spec", "size")
				}
				if err == nil {
					_, err = widgets.Update(ctx, a, metav1.UpdateOptions{})
				}
				return err
			},
			func() error { return widgets.Delete(ctx, "b", metav1.DeleteOptions{}) },
		} {
			if err := step(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			waitInSync(t, list, informer)
		}
		for _, o := range informer.GetStore().List() {
			if v := o.(*unstructured.Unstructured).GetAPIVersion(); v != "example.com/v1beta1" {
				t.Fatalf("cached %s, want the watched version", v)
			}
		}
	})
}
