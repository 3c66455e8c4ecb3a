package kuberef

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// StartFullProcesses is StartFull with etcd in a process of its own, started from the etcd binary
// etcdBin (cmd/etcd), as a cluster runs it: so that the CPU and memory of both processes, the
// whole of what serves the API, can be measured (PIDs). `make bench` uses it through cmd/kubefull.
func StartFullProcesses(bin, etcdBin, dir string) (*FullServer, error) {
	etcdURL, etcdPID, stopEtcd, err := startEtcdProcess(etcdBin, dir)
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	s, err := startKubeAPIServer(bin, dir, etcdURL)
	if err != nil {
		stopEtcd()
		return nil, err
	}
	s.PIDs = append(s.PIDs, etcdPID)
	stopProcess := s.stop
	s.stop = func() { stopProcess(); stopEtcd() }
	return s, nil
}

// startEtcdProcess runs etcdBin on a data directory under dir, on free local ports, and returns
// once it reports itself healthy.
func startEtcdProcess(etcdBin, dir string) (url string, pid int, stop func(), err error) {
	ports, err := freePorts(2)
	if err != nil {
		return "", 0, nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	logFile, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return "", 0, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, etcdBin, "--data-dir="+filepath.Join(dir, "etcd"), "--log-level=error",
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer, "--initial-cluster=default="+peer)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		cancel()
		logFile.Close()
		return "", 0, nil, err
	}
	done := make(chan error)
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	stop = func() { cancel(); <-done }
	if err := waitHealthy(client+"/health", done, 30*time.Second); err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("%w; the end of its log:\n%s", err, logTail(logFile.Name()))
	}
	return client, cmd.Process.Pid, stop, nil
}

// waitHealthy polls url until it answers 200, the process ends (done closes) or timeout passes.
func waitHealthy(url string, done <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %s", url, timeout)
		}
		select {
		case <-done:
			return fmt.Errorf("exited before %s was healthy", url)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WriteKubeconfig writes a kubeconfig for the server at path, whose client certificate names user
// in groups.
func (s *FullServer) WriteKubeconfig(path, user string, groups []string) error {
	cert, err := s.ca.clientCert(user, groups)
	if err != nil {
		return err
	}
	key, err := keyPEM(cert.PrivateKey)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kube"] = &clientcmdapi.Cluster{Server: s.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.ca.cert.Raw})}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		ClientKeyData:         key,
	}
	cfg.Contexts["kube"] = &clientcmdapi.Context{Cluster: "kube", AuthInfo: user}
	cfg.CurrentContext = "kube"
	return clientcmd.WriteToFile(*cfg, path)
}
