package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// apiClient sends requests to one API server over a shared keep-alive transport.
type apiClient struct {
	base string // scheme://host[:port][/prefix], without a trailing slash
	// rt is called directly rather than through an http.Client, which copies the headers of
	// every request for the redirects an API server does not send.
	rt http.RoundTripper
	// headers are shared by every request, for requests without and with a body: transports
	// and the kubeconfig's wrappers only read them (they copy a request before adding to it).
	// They carry the User-Agent so that client-go's wrapper does not copy each request to add it.
	headers, bodyHeaders http.Header
	// dials counts the connections the transport opened.
	dials atomic.Int64
}

// newAPIClient builds the client from --server or --kubeconfig. conns is how many requests may be
// in flight at once, so that every one of them keeps its own idle connection between requests.
func newAPIClient(o options, conns int) (*apiClient, error) {
	cfg, err := restConfig(o)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("TLS settings: %w", err)
	}
	c := &apiClient{}
	transport := newTransport(o.idle && strings.HasPrefix(cfg.Host, "https://"), tlsConfig, conns, &c.dials)
	// The wrappers add what the kubeconfig asks for: bearer token, basic auth, impersonation.
	rt, err := rest.HTTPWrappersForConfig(cfg, transport)
	if err != nil {
		return nil, err
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	headers := http.Header{"Accept": {"application/json"}, "User-Agent": {cfg.UserAgent}}
	bodyHeaders := headers.Clone()
	bodyHeaders.Set("Content-Type", "application/json")
	c.base, c.rt, c.headers, c.bodyHeaders = strings.TrimSuffix(base.String(), "/"), rt, headers, bodyHeaders
	return c, nil
}

// newTransport is the connection pool: net/http's, with an idle connection kept for each of
// conns requests in flight, or HTTP/2's alone (http2Only, for --idle over TLS); dials counts the
// connections either opens.
func newTransport(http2Only bool, tlsConfig *tls.Config, conns int, dials *atomic.Int64) http.RoundTripper {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if http2Only {
		// net/http's transport dials a connection for every request that finds the open ones
		// full, all at once; HTTP/2's own dials one at a time and shares it among the requests
		// waiting, so that idle watches fill each connection to the server's stream limit.
		return &http2.Transport{
			DialTLSContext: func(ctx context.Context, network, addr string, tlsConfig *tls.Config) (net.Conn, error) {
				dials.Add(1)
				return (&tls.Dialer{NetDialer: dialer, Config: tlsConfig}).DialContext(ctx, network, addr)
			},
			TLSClientConfig:    tlsConfig,
			DisableCompression: true,
		}
	}
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: conns,
		// Without a limit, requests that find no idle connection while others are being dialled
		// dial more, and the extra connections are closed again: with 64 clients starting at
		// once, ~50 connections more than clients.
		MaxConnsPerHost: conns,
		IdleConnTimeout: 90 * time.Second,
		// Chunked responses arrive in the server's chunks (4 KiB from net/http): a buffer that
		// size costs a read system call per chunk, one of 64 KiB takes in what has arrived.
		ReadBufferSize: 64 << 10,
		// Compressing and decompressing responses would measure gzip, not the server.
		DisableCompression: true,
	}
}

// restConfig loads the kubeconfig, if any, and applies the command line's overrides.
func restConfig(o options) (*rest.Config, error) {
	var cfg *rest.Config
	if o.kubeconfig == "" {
		cfg = &rest.Config{Host: o.server}
	} else {
		loader := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.kubeconfig}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
		overrides.ClusterInfo.Server = o.server
		var err error
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loader, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
	}
	cfg.UserAgent = "sqlkube-bench"
	if o.token != "" {
		cfg.BearerToken, cfg.BearerTokenFile = o.token, ""
	}
	if o.insecure {
		cfg.Insecure = true
		cfg.CAData, cfg.CAFile = nil, ""
	}
	return cfg, nil
}

// send makes one request with an optional JSON body. It reads the whole response so that the
// connection is reused, decodes a 2xx response into into when into is not nil (or copies it there
// when into is a *bytes.Buffer), and returns the
// status code (0 when no response arrived) with an error for a failed transport or decode. A non-2xx
// status is not an error here; its body's message is returned as detail.
func (c *apiClient) send(ctx context.Context, method, path string, body []byte, into any) (code int, detail string, err error) {
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if !isSuccess(resp.StatusCode) {
		return resp.StatusCode, statusMessage(resp.Body), nil
	}
	switch dst := into.(type) {
	case nil:
		_, err = io.Copy(io.Discard, resp.Body)
	case *bytes.Buffer:
		dst.Reset()
		_, err = dst.ReadFrom(resp.Body)
	default:
		err = json.NewDecoder(resp.Body).Decode(into)
		// Drain what the decoder left (trailing newline) so the connection is reused.
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode, "", err
}

// stream opens a long-running GET (a watch). On a 2xx status the caller reads and closes the body;
// otherwise the body is consumed here and its message returned as detail.
func (c *apiClient) stream(ctx context.Context, path string) (body io.ReadCloser, code int, detail string, err error) {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, 0, "", err
	}
	if !isSuccess(resp.StatusCode) {
		defer resp.Body.Close()
		return nil, resp.StatusCode, statusMessage(resp.Body), nil
	}
	return resp.Body, resp.StatusCode, "", nil
}

func (c *apiClient) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	url := c.base + path
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = c.headers
	if body != nil {
		req.Header = c.bodyHeaders
	}
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		// As http.Client reports it: the error samples name the request.
		return nil, &neturl.Error{Op: method[:1] + strings.ToLower(method[1:]), URL: url, Err: err}
	}
	return resp, nil
}

func isSuccess(code int) bool { return code >= 200 && code < 300 }

// statusMessage is the message of a metav1.Status body, or the start of the body if it is not one.
func statusMessage(body io.Reader) string {
	raw, _ := io.ReadAll(io.LimitReader(body, 64<<10))
	_, _ = io.Copy(io.Discard, body)
	var status struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &status) == nil && status.Message != "" {
		return status.Message
	}
	return truncate(string(raw), 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
