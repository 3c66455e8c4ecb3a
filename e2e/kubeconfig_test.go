package e2e

import (
	"net/http"
	"path/filepath"
	"slices"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// plainHTTP is the flag that turns security off; a server started with it gets a kubeconfig
// that only names its URL.
const plainHTTP = "--plain-http"

func (s *sqlkubeServer) isPlainHTTP() bool { return slices.Contains(s.args, plainHTTP) }

// adminKubeconfig is where the server writes its admin kubeconfig (--admin-kubeconfig).
func (s *sqlkubeServer) adminKubeconfig() string { return filepath.Join(s.pkiDir, "admin.kubeconfig") }

// kubeconfigPath is the kubeconfig every client of the tests uses: the admin kubeconfig the
// server wrote, or one naming the URL of a plain-HTTP server.
func (s *sqlkubeServer) kubeconfigPath() string {
	s.t.Helper()
	if !s.isPlainHTTP() {
		return s.adminKubeconfig()
	}
	path := filepath.Join(s.pkiDir, "plain.kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sqlkube"] = &clientcmdapi.Cluster{Server: s.URL()}
	cfg.AuthInfos["anyone"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["sqlkube"] = &clientcmdapi.Context{Cluster: "sqlkube", AuthInfo: "anyone"}
	cfg.CurrentContext = "sqlkube"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		s.t.Fatal(err)
	}
	return path
}

// restConfig points client-go at the running process as its admin, without client-side
// throttling so that tests are not slowed down. The server is the running process's URL, which
// changes across restarts.
func (s *sqlkubeServer) restConfig() *rest.Config {
	s.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags(s.URL(), s.kubeconfigPath())
	if err != nil {
		s.t.Fatal(err)
	}
	cfg.QPS = -1
	return cfg
}

// httpClient is a raw HTTP client holding the admin's credentials.
func (s *sqlkubeServer) httpClient() *http.Client {
	s.t.Helper()
	tr, err := rest.TransportFor(s.restConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	return &http.Client{Transport: tr}
}
