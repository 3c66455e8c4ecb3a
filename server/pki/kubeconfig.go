package pki

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName is the cluster, user and context name of kubeconfigs sqlkube writes.
const contextName = "sqlkube"

// Kubeconfig mints a client certificate for user in groups and returns a kubeconfig that
// reaches serverURL with it, trusting the CA.
func (ca *CA) Kubeconfig(serverURL, user string, groups []string) ([]byte, error) {
	certPEM, keyPEM, err := ca.Issue(ClientTemplate(user, groups))
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: user}
	cfg.CurrentContext = contextName
	return clientcmd.Write(*cfg)
}

// WriteKubeconfig writes a kubeconfig (it holds a private key) readable by its owner only,
// replacing any earlier one atomically.
func WriteKubeconfig(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeFile(path, data, 0o600)
}
