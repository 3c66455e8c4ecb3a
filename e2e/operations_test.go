package e2e

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// floodDuration is how long TestFloodDoesNotStarveOtherUsers floods; SQLKUBE_FLOOD_SECONDS sets a
// longer run for the figures in docs/benchmarks.md.
func floodDuration() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("SQLKUBE_FLOOD_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 3 * time.Second
}

// TestFloodDoesNotStarveOtherUsers: one user floods the server with 64 concurrent creates while
// another reads one object in a loop. Priority and fairness queues each user's requests apart,
// so every read of the second user is answered, none refused: the 429s are counted on the wire,
// as client-go retries them out of sight. The read latencies (p50, p99) and the flood's rate are
// logged for docs/benchmarks.md; they are figures, not assertions.
func TestFloodDoesNotStarveOtherUsers(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		ctx := context.Background()
		admin := kubernetes.NewForConfigOrDie(s.restConfig())
		bindGroup(t, admin, "testers", "cluster-admin")
		flooderConfig, readerConfig := s.userConfig(t, "flooder", "testers"), s.userConfig(t, "reader", "testers")
		flooderRefusals, readerRefusals := countTooManyRequests(flooderConfig), countTooManyRequests(readerConfig)
		flooder, reader := kubernetes.NewForConfigOrDie(flooderConfig), kubernetes.NewForConfigOrDie(readerConfig)
		cms := reader.CoreV1().ConfigMaps("default")
		eventually(t, 10*time.Second, "the binding authorizes the reader", func() (bool, error) {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), err
		})

		floodCtx, stopFlood := context.WithTimeout(ctx, floodDuration())
		defer stopFlood()
		var created, refused atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				flood(floodCtx, flooder, &created, &refused)
			}()
		}
		var latencies []time.Duration
		for floodCtx.Err() == nil {
			start := time.Now()
			if _, err := cms.Get(ctx, "target", metav1.GetOptions{}); err != nil {
				t.Fatalf("the reader's get during the flood: %v", err)
			}
			latencies = append(latencies, time.Since(start))
		}
		wg.Wait()
		slices.Sort(latencies)
		t.Logf("flood: %d creates (%.0f/s), %d answered 429 (%d after client-go's retries); reader: %d gets, p50 %v, p99 %v, max %v",
			created.Load(), float64(created.Load())/floodDuration().Seconds(), flooderRefusals.Load(), refused.Load(), len(latencies),
			percentile(latencies, 0.5), percentile(latencies, 0.99), latencies[len(latencies)-1])
		if created.Load() == 0 || len(latencies) == 0 {
			t.Fatal("no flood or no reads")
		}
		if n := readerRefusals.Load(); n != 0 {
			t.Fatalf("the reader was answered 429 %d times during the flood", n)
		}
	})
}

// countTooManyRequests counts the 429 answers cfg's clients receive, before client-go retries them.
func countTooManyRequests(cfg *rest.Config) *atomic.Int64 {
	var n atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.StatusCode == http.StatusTooManyRequests {
				n.Add(1)
			}
			return resp, err
		})
	})
	return &n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// flood creates ConfigMaps until ctx ends, counting creates and 429 refusals.
func flood(ctx context.Context, c kubernetes.Interface, created, refused *atomic.Int64) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "flood-"}, Data: map[string]string{"k": strings.Repeat("v", 512)}}
	for ctx.Err() == nil {
		_, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		switch {
		case err == nil:
			created.Add(1)
		case apierrors.IsTooManyRequests(err):
			refused.Add(1)
		}
	}
}

// bindGroup binds group to clusterRole cluster-wide.
func bindGroup(t *testing.T, admin kubernetes.Interface, group, clusterRole string) {
	t.Helper()
	_, err := admin.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: group + "-" + clusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: group}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestShutdownDelayFailsReadinessWhileServing: after SIGTERM, a server with
// --shutdown-delay-duration answers /readyz with 500 (the shutdown check failing) while it still
// serves requests and /livez, then exits 0.
func TestShutdownDelayFailsReadinessWhileServing(t *testing.T) {
	s := startServer(t, sqltest.SQLiteDSN(t), "--shutdown-delay-duration=3s")
	client := s.anonymousClient(t)
	if err := s.proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "/readyz failing", func() (bool, error) {
		resp := get(t, client, s.URL()+"/readyz")
		return resp.code == http.StatusInternalServerError && strings.Contains(string(resp.body), "[-]shutdown failed: reason withheld"), nil
	})
	if resp := get(t, client, s.URL()+"/livez"); resp.code != http.StatusOK || string(resp.body) != "ok" {
		t.Errorf("/livez while shutting down: %d %q", resp.code, resp.body)
	}
	if _, err := kubernetes.NewForConfigOrDie(s.restConfig()).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("a request while shutting down: %v", err)
	}
	select {
	case <-s.proc.exited:
	case <-time.After(stopTimeout):
		t.Fatal("sqlkube did not exit after its shutdown delay")
	}
	if s.proc.err != nil {
		t.Fatalf("exit: %v", s.proc.err)
	}
}

// TestProfilingIsAuthorized: /debug/pprof/ answers an admin, and refuses anonymous users as any
// path they are not granted.
func TestProfilingIsAuthorized(t *testing.T) {
	s := startServer(t, sqltest.SQLiteDSN(t))
	if code := get(t, s.anonymousClient(t), s.URL()+"/debug/pprof/").code; code != http.StatusForbidden {
		t.Errorf("anonymous /debug/pprof/: %d, want 403", code)
	}
	body, err := kubernetes.NewForConfigOrDie(s.restConfig()).CoreV1().RESTClient().Get().AbsPath("/debug/pprof/goroutine").Param("debug", "1").DoRaw(context.Background())
	if err != nil || !strings.Contains(string(body), "goroutine profile:") {
		t.Errorf("admin /debug/pprof/goroutine: %v %.200s", err, body)
	}
}
