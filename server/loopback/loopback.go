// Package loopback is the server's in-process API client, as kube-apiserver's loopback client:
// the parts of Kubernetes' libraries that need an API client (the priority-and-fairness
// configuration controller, the admission plugins) reach the server's own routes over in-memory
// pipes, as User.
package loopback

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// User is who the server's own client-go clients are, as kube-apiserver's loopback client: a
// member of system:masters.
var User = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}

// Client is what the in-process users of the API get: one client configuration of the server's
// own routes, a client, and one informer factory they share, so that each type is listed and
// watched once. Its requests wait until Serve is called: the users can be built before the
// routes they will reach.
type Client struct {
	// Config reaches the routes; a user may build other clients from it (dynamic, metadata).
	Config *rest.Config
	// Client is the typed client of Config.
	Client kubernetes.Interface
	// Informers is the shared informer factory; the assembly starts it once its users have
	// asked for their informers.
	Informers kubeinformers.SharedInformerFactory
	pipes     *pipeListener
}

// New makes the in-process client; its connections are in-memory pipes that Serve answers,
// without TLS, credentials or the request limits.
func New() (*Client, error) {
	pipes := newPipeListener()
	config := &rest.Config{
		Host: "http://loopback",
		Dial: pipes.dial,
		// What the server writes itself is managed by "kube-apiserver", as kube-apiserver's own
		// loopback client's user agent names it in managedFields.
		UserAgent: "kube-apiserver",
		QPS:       -1, // no client-side rate limit: the server is itself
		Burst:     -1,
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &Client{Config: config, Client: client, Informers: kubeinformers.NewSharedInformerFactory(client, 0), pipes: pipes}, nil
}

// Serve answers the client's requests with routes, as User, until ctx ends; routes resolve the
// request's information themselves.
func (c *Client) Serve(ctx context.Context, routes http.Handler) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		routes.ServeHTTP(w, r.WithContext(genericrequest.WithUser(r.Context(), User)))
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(c.pipes) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
}

// pipeListener is a net.Listener whose connections are in-memory pipes made by dial.
type pipeListener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "loopback" }
