// Package kuberef runs a reference Kubernetes API server for the differential conformance tests:
// k8s.io/apiextensions-apiserver (the CRD half of kube-apiserver, with its generic registry,
// handlers and Status errors) over an embedded etcd on a temporary directory. It is its own Go
// module so that none of its dependencies enter sqlkube's.
package kuberef

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/klog/v2"
)

// Server is a running reference server.
type Server struct {
	// URL is the server's base URL (HTTPS on 127.0.0.1).
	URL string
	// Client reaches the server as a member of system:masters.
	Client *http.Client
	stop   func()
}

// Stop shuts the server and its etcd down.
func (s *Server) Stop() { s.stop() }

// Start starts etcd and apiextensions-apiserver under dir and returns once /readyz answers.
func Start(dir string) (*Server, error) {
	// The server's own log (controllers starting, requests it found odd) would bury the
	// differences in the test output.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	etcd, etcdURL, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	loopback, err := startAPIServer(ctx, filepath.Join(dir, "certs"), etcdURL, done)
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
		}
		etcd.Close()
	}
	if err != nil {
		stop()
		return nil, err
	}
	client, err := rest.HTTPClientFor(loopback)
	if err != nil {
		stop()
		return nil, err
	}
	s := &Server{URL: loopback.Host, Client: client, stop: stop}
	if err := waitReady(client, s.URL, done); err != nil {
		stop()
		return nil, err
	}
	return s, nil
}

func startEtcd(dir string) (*embed.Etcd, string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(filepath.Dir(dir), "etcd.log")}
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, client.String(), nil
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, "", errors.New("etcd did not become ready in 30s")
	}
}

// freePorts finds n ports nothing listens on; etcd takes ports, not listeners.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startAPIServer configures apiextensions-apiserver as its own test server does, without the
// delegated authentication and authorization and the core API informers, which need a
// kube-apiserver: every request that reaches it is allowed.
func startAPIServer(ctx context.Context, certDir, etcdURL string, done chan<- error) (*rest.Config, error) {
	o := options.NewCustomResourceDefinitionsServerOptions(io.Discard, os.Stderr)
	featureGate := utilfeature.DefaultMutableFeatureGate
	effectiveVersion := compatibility.DefaultKubeEffectiveVersionForTest()
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		return nil, err
	}
	o.ServerRunOptions.ComponentGlobalsRegistry = registry
	o.AddFlags(pflag.NewFlagSet("kuberef", pflag.ContinueOnError))
	if err := registry.Set(); err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o.RecommendedOptions.SecureServing.Listener = listener
	o.RecommendedOptions.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	o.RecommendedOptions.SecureServing.ServerCert.CertDirectory = certDir
	o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{etcdURL}
	// kube-apiserver keeps custom resources under its own prefix, not apiextensions-apiserver's.
	o.RecommendedOptions.Etcd.StorageConfig.Prefix = "/registry"
	// The compactor's bookkeeping write (every five minutes) raises etcd's revision, which a
	// list then answers: without it, the revisions only the test's own writes raise stay in
	// step with sqlkube's.
	o.RecommendedOptions.Etcd.StorageConfig.CompactionInterval = 0
	o.RecommendedOptions.Authentication = nil
	o.RecommendedOptions.Authorization = nil
	o.RecommendedOptions.CoreAPI = nil
	o.RecommendedOptions.Admission = nil
	o.RecommendedOptions.Features.EnablePriorityAndFairness = false
	if err := o.Complete(); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	config, err := apiServerConfig(o)
	if err != nil {
		return nil, err
	}
	// kube-apiserver ends its delegation chain in a handler that answers a JSON Status 404.
	notFound := notfoundhandler.New(config.GenericConfig.Serializer, genericfilters.NoMuxAndDiscoveryIncompleteKey)
	server, err := config.Complete().New(genericapiserver.NewEmptyDelegateWithCustomHandler(notFound))
	if err != nil {
		return nil, err
	}
	go func() { done <- server.GenericAPIServer.PrepareRun().RunWithContext(ctx) }()
	return server.GenericAPIServer.LoopbackClientConfig, nil
}

// waitReady polls /readyz until it answers 200, or the server exits (done, if not nil, says so).
func waitReady(client *http.Client, base string, done <-chan error) error {
	return waitReadyWithin(client, base, done, 60*time.Second)
}

// waitReadyWithin is waitReady with a deadline of its own.
func waitReadyWithin(client *http.Client, base string, done <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return fmt.Errorf("server exited: %v", err)
		default:
		}
		resp, err := client.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %s", base, timeout)
}

// apiServerConfig is options.Config without the core API: its informers watch an empty fake
// clientset, and conversion webhooks (which would resolve services through them) are not used.
func apiServerConfig(o *options.CustomResourceDefinitionsServerOptions) (*apiserver.Config, error) {
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, err
	}
	serverConfig := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	serverConfig.SharedInformerFactory = informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	if err := o.ServerRunOptions.ApplyTo(&serverConfig.Config); err != nil {
		return nil, err
	}
	if err := o.RecommendedOptions.ApplyTo(serverConfig); err != nil {
		return nil, err
	}
	if err := o.APIEnablement.ApplyTo(&serverConfig.Config, apiserver.DefaultAPIResourceConfigSource(), apiserver.Scheme); err != nil {
		return nil, err
	}
	definitions := openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)
	namer := openapinamer.NewDefinitionNamer(apiserver.Scheme, scheme.Scheme)
	serverConfig.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(definitions, namer)
	// With a v2 config the server has a static spec, without which apiextensions-apiserver
	// starts no OpenAPI controllers: CRD group versions would have no v3 document.
	serverConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(definitions, namer)
	return &apiserver.Config{
		GenericConfig: serverConfig,
		ExtraConfig: apiserver.ExtraConfig{
			CRDRESTOptionsGetter: options.NewCRDRESTOptionsGetter(*o.RecommendedOptions.Etcd, serverConfig.ResourceTransformers, serverConfig.StorageObjectCountTracker),
			ServiceResolver:      noServices{},
			AuthResolverWrapper:  webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, serverConfig.LoopbackClientConfig, noopoteltrace.NewTracerProvider()),
		},
	}, nil
}

// noServices resolves no service: the reference server runs no webhooks.
type noServices struct{}

func (noServices) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return nil, fmt.Errorf("no service %s/%s", namespace, name)
}
