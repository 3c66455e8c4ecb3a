// Package testserver starts sqlkube inside a Go program, for tests: the whole server, assembled
// as the sqlkube binary assembles it (server/app), on a temporary SQLite database (or a
// PostgreSQL one), serving TLS on 127.0.0.1 with a CA of its own. It hands back a *rest.Config
// for an admin and mints configs for any other user; it is ready in about half a second and
// stops in milliseconds, so that a test suite can start one per test instead of sharing an
// envtest control plane.
//
//	func TestReconcile(t *testing.T) {
//		srv := testserver.Start(t)
//		mgr, err := ctrl.NewManager(srv.Config, ctrl.Options{})
//		...
//	}
//
// As in envtest, nothing runs the built-in objects: no scheduler, no kubelet, no
// kube-controller-manager beyond what sqlkube runs itself (the namespace controller, the garbage
// collector, the ServiceAccount and root CA ConfigMap in every namespace).
package testserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/sqlkube/sqlkube/server/app"
	"github.com/sqlkube/sqlkube/server/pki"
)

// readyTimeout bounds how long a start waits for /readyz: a server that is not ready by then is
// stuck (a database that does not answer), not slow.
const readyTimeout = 30 * time.Second

// Server is a running sqlkube. Stop it with Stop (Start's cleanup does).
type Server struct {
	// Config reaches the server as system:admin in group system:masters, which every request
	// is allowed to. Copy it (rest.CopyConfig) before changing it.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for the same admin, for kubectl, helm or
	// envtest's UseExistingCluster (KUBECONFIG).
	Kubeconfig string
	// URL is the server's address: https://127.0.0.1:PORT.
	URL string

	ca    *pki.CA
	stop  context.CancelFunc
	conns *closingListener
	// stopped is closed when the server has stopped, err then says why.
	stopped chan struct{}
	err     error
}

// Option changes how a server is started.
type Option func(*settings)

type settings struct {
	dsn   string
	flags []string
	log   *slog.Logger
}

// WithDatabase keeps the server's objects in the database dsn names (as sqlkube's --db:
// postgres://USER@HOST:PORT/DB?sslmode=disable, or sqlite://PATH) instead of a new SQLite file.
// Objects already there are served; give each server a database of its own.
func WithDatabase(dsn string) Option { return func(s *settings) { s.dsn = dsn } }

// WithFlags passes sqlkube's command-line flags (sqlkube --help), e.g.
// "--admission-control-config-file=...". --listen, --db and --cert-dir are the test server's.
func WithFlags(flags ...string) Option {
	return func(s *settings) { s.flags = append(s.flags, flags...) }
}

// WithLogger writes the server's log to log; without it the log is discarded, as envtest's
// kube-apiserver writes its log where tests do not see it. Kubernetes' libraries inside the
// server log through klog, which is one per process: each server started routes it to its own
// log (so without WithLogger it is discarded, and go test -v shows none of it). A program that
// wants klog elsewhere calls klog.SetSlogLogger (or klog.SetLogger) after starting its servers.
func WithLogger(log *slog.Logger) Option { return func(s *settings) { s.log = log } }

// Start starts a server for the test, with its files in the test's temporary directory, and
// stops it when the test ends. It ends the test if the server does not start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	srv, err := start(context.Background(), t.TempDir(), false, opts)
	if err != nil {
		t.Fatalf("starting sqlkube: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping sqlkube: %v", err)
		}
	})
	return srv
}

// New starts a server with its files in a new temporary directory, removed by Stop. The server
// stops when ctx ends too, but only Stop waits for it and removes its files.
func New(ctx context.Context, opts ...Option) (*Server, error) {
	dir, err := os.MkdirTemp("", "sqlkube-testserver-")
	if err != nil {
		return nil, err
	}
	return start(ctx, dir, true, opts)
}

// start serves on 127.0.0.1 with the certificates and SQLite file (unless WithDatabase) in dir,
// and returns once the server is ready. The server removes dir when it stops if removeDir.
func start(ctx context.Context, dir string, removeDir bool, opts []Option) (*Server, error) {
	s := settings{dsn: "sqlite://" + filepath.Join(dir, "sqlkube.db"), log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&s)
	}
	klog.SetSlogLogger(s.log)
	certDir := filepath.Join(dir, "pki")
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	args := append([]string{"--db", s.dsn, "--cert-dir", certDir, "--admin-kubeconfig", kubeconfig}, s.flags...)
	cfg, err := app.Parse(args, nil, io.Discard)
	if err != nil {
		return nil, errors.Join(err, removeIf(removeDir, dir))
	}
	// The CA is made before the server starts, so that the admin's config is at hand to wait
	// for readiness with; the server signs its serving certificate with it.
	ca, err := pki.Dir(certDir).EnsureCA()
	var ln net.Listener
	if err == nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return nil, errors.Join(err, removeIf(removeDir, dir))
	}
	ctx, stop := context.WithCancel(ctx)
	srv := &Server{Kubeconfig: kubeconfig, URL: "https://" + ln.Addr().String(), ca: ca, stop: stop, stopped: make(chan struct{}),
		conns: newClosingListener(ln)}
	go func() {
		srv.err = errors.Join(app.Serve(ctx, srv.conns, cfg, s.log), removeIf(removeDir, dir))
		close(srv.stopped)
	}()
	if srv.Config, err = srv.ConfigFor("system:admin", "system:masters"); err == nil {
		err = srv.waitReady()
	}
	if err != nil {
		return nil, errors.Join(err, srv.Stop())
	}
	return srv, nil
}

// ConfigFor is a config that reaches the server as user in groups, with a client certificate
// from the server's CA (the common name is the user, each organization a group). RBAC decides
// what the user may do, as on a cluster.
func (s *Server) ConfigFor(user string, groups ...string) (*rest.Config, error) {
	data, err := s.ca.Kubeconfig(s.URL, user, groups)
	if err != nil {
		return nil, err
	}
	return clientcmd.RESTConfigFromKubeConfig(data)
}

// Stop stops the server, closing its connections (requests in flight fail, watches end), and
// returns what went wrong serving or stopping, if anything. Later calls return the same.
func (s *Server) Stop() error {
	s.stop()
	s.conns.closeConns()
	<-s.stopped
	return s.err
}

func removeIf(remove bool, dir string) error {
	if !remove {
		return nil
	}
	return os.RemoveAll(dir)
}

// waitReady waits until /readyz answers 200: the bootstrap RBAC policy is written and the
// server's informers have synced, so that any user's request is decided as it will be later.
func (s *Server) waitReady() error {
	client, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		status, err := getStatus(client, s.URL+"/readyz")
		if status == http.StatusOK {
			return nil
		}
		select {
		case <-s.stopped:
			return fmt.Errorf("the server stopped: %w", s.err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: /readyz answered %d (%v)", readyTimeout, status, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func getStatus(client *http.Client, url string) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}
