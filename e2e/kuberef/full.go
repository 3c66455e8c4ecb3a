package kuberef

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// FullServer is a running kube-apiserver (the whole of it: built-in types, authentication by
// client certificates, RBAC, admission, audit, priority and fairness) built from the
// k8s.io/kubernetes module pinned in ./kubeapiserver, over an embedded etcd.
type FullServer struct {
	// URL is the server's base URL (HTTPS on 127.0.0.1).
	URL string
	// Client reaches the server as a member of system:masters.
	Client *http.Client
	// AuditLog is the file kube-apiserver writes its audit events to (Metadata level).
	AuditLog string
	// PIDs are the server's processes: kube-apiserver's, then etcd's when it runs in a process
	// of its own (StartFullProcesses), for measuring their CPU and memory.
	PIDs []int
	ca   *authority
	stop func()
}

// ClientFor is an HTTP client authenticated as user in groups by a client certificate.
func (s *FullServer) ClientFor(user string, groups []string) (*http.Client, error) {
	return s.ca.client(user, groups)
}

// Stop ends kube-apiserver and its etcd.
func (s *FullServer) Stop() { s.stop() }

// kubeAPIServerModule is the module that pins k8s.io/kubernetes and its staging modules.
const kubeAPIServerModule = "kubeapiserver"

// BuildKubeAPIServer builds kube-apiserver into dir, unless SQLKUBE_KUBE_APISERVER names a
// binary already built.
func BuildKubeAPIServer(dir string) (string, error) {
	if bin := os.Getenv("SQLKUBE_KUBE_APISERVER"); bin != "" {
		return bin, nil
	}
	bin := filepath.Join(dir, "kube-apiserver")
	build := exec.Command("go", "build", "-ldflags", versionFlags(), "-o", bin, "k8s.io/kubernetes/cmd/kube-apiserver")
	build.Dir = kubeAPIServerModule
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kube-apiserver: %v\n%s", err, out)
	}
	return bin, nil
}

// kubeVersion is the version of k8s.io/kubernetes that ./kubeapiserver requires.
const kubeVersion, kubeMajor, kubeMinor = "v1.37.2", "1", "37"

// versionFlags stamp the binary with its version as kube's release build does: without them it
// calls itself v0.0.0-master (in /version, and in the version it emulates).
func versionFlags() string {
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags, "-X "+pkg+".gitVersion="+kubeVersion, "-X "+pkg+".gitMajor="+kubeMajor,
			"-X "+pkg+".gitMinor="+kubeMinor, "-X "+pkg+".gitTreeState=clean")
	}
	return strings.Join(flags, " ")
}

// auditPolicy records every request at Metadata level, as sqlkube's tests configure it.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`

// StartFull starts an etcd and the kube-apiserver binary bin on it, its files under dir, and
// returns once /readyz answers (its bootstrap RBAC policy is then in place).
func StartFull(bin, dir string) (*FullServer, error) {
	etcd, etcdURL, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	s, err := startKubeAPIServer(bin, dir, etcdURL)
	if err != nil {
		etcd.Close()
		return nil, err
	}
	stopProcess := s.stop
	s.stop = func() { stopProcess(); etcd.Close() }
	return s, nil
}

func startKubeAPIServer(bin, dir, etcdURL string) (*FullServer, error) {
	ca, err := newAuthority()
	if err != nil {
		return nil, err
	}
	args, err := kubeAPIServerFiles(dir, ca)
	if err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := listener.Addr().(*net.TCPAddr).Port
	listener.Close()
	args = append(args,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		// kube refuses to publish a loopback address as the kubernetes Service's endpoint.
		"--endpoint-reconciler-type=none",
		"--etcd-servers="+etcdURL,
		// No compactor: its bookkeeping write would raise the revision lists answer.
		"--etcd-compaction-interval=0",
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--audit-log-path="+filepath.Join(dir, "audit.log"),
		"--audit-log-format=json",
	)
	logFile, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		cancel()
		logFile.Close()
		return nil, err
	}
	// done is closed when the process has exited, so that any number of readers see it.
	done := make(chan error)
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	stop := func() {
		cancel()
		<-done
	}
	// The admin is called as sqlkube's admin kubeconfig calls it, so that what records the
	// requester (a CertificateSigningRequest's spec.username) compares alike.
	admin, err := ca.client("system:admin", []string{"system:masters"})
	if err != nil {
		stop()
		return nil, err
	}
	s := &FullServer{URL: fmt.Sprintf("https://127.0.0.1:%d", port), Client: admin, AuditLog: filepath.Join(dir, "audit.log"),
		PIDs: []int{cmd.Process.Pid}, ca: ca, stop: stop}
	if err := waitReadyWithin(admin, s.URL, done, 3*time.Minute); err != nil {
		stop()
		return nil, fmt.Errorf("%w; the end of its log:\n%s", err, logTail(logFile.Name()))
	}
	return s, nil
}

// logTail is the last lines of a log, for a failure to start.
func logTail(path string) string {
	data, _ := os.ReadFile(path)
	return string(data[max(0, len(data)-3000):])
}

// kubeAPIServerFiles writes the CA, serving certificate, service account key and audit policy
// under dir and answers the flags that name them.
func kubeAPIServerFiles(dir string, ca *authority) ([]string, error) {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return nil, err
	}
	serving, err := ca.servingCert()
	if err != nil {
		return nil, err
	}
	if err := writeCertPair(pki, "apiserver", serving); err != nil {
		return nil, err
	}
	if err := writeCACert(filepath.Join(pki, "ca.crt"), ca.cert); err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := writeKey(filepath.Join(pki, "sa.key"), saKey); err != nil {
		return nil, err
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	return []string{
		"--cert-dir=" + pki,
		"--client-ca-file=" + filepath.Join(pki, "ca.crt"),
		"--tls-cert-file=" + filepath.Join(pki, "apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(pki, "apiserver.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(pki, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
		"--audit-policy-file=" + policy,
	}, nil
}
