package kuberef

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// sqlkube is the server under test: the binary built from this repository.
type sqlkube struct {
	url    string
	client *http.Client
	cmd    *exec.Cmd
	// bin and dir are the binary and the directory of its files (its PKI under dir/pki).
	bin, dir string
	// admissionChain gives the admission chain it logged at start.
	admissionChain chan []string
}

var servingLine = regexp.MustCompile(`msg=serving addr=(\S+) scheme=(\S+)`)

// buildSqlkube builds sqlkube into dir from the repository root, or from the source tree
// SQLKUBE_SOURCE names (another checkout, to compare a branch).
func buildSqlkube(dir string) (string, error) {
	bin := filepath.Join(dir, "sqlkube")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sqlkube")
	build.Dir = "../.."
	if src := os.Getenv("SQLKUBE_SOURCE"); src != "" {
		build.Dir = src
	}
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sqlkube: %v\n%s", err, out)
	}
	return bin, nil
}

// startSqlkube starts the binary on the database dsn with its files in dir, as the e2e tests do;
// with audit, it records every request in dir/audit.log under the policy the full reference
// has (auditPolicy).
func startSqlkube(bin, dir, dsn string, audit bool) (*sqlkube, error) {
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	// As the reference kube-apiserver: no replica lease renewed every 10 s, whose writes would
	// move the store's revision between a scenario's steps.
	args := []string{"--listen=127.0.0.1:0", "--db=" + dsn, "--endpoint-reconciler-type=none",
		"--log-level=info", "--cert-dir=" + filepath.Join(dir, "pki"), "--admin-kubeconfig=" + kubeconfig}
	if audit {
		policy := filepath.Join(dir, "audit-policy.yaml")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--audit-policy-file="+policy, "--audit-log-path="+sqlkubeAuditLog(dir))
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	url := make(chan string, 1)
	s := &sqlkube{cmd: cmd, bin: bin, dir: dir, admissionChain: make(chan []string, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		chain := chainLog{}
		for sc.Scan() {
			if chain.add(sc.Text()) {
				s.admissionChain <- chain.lines()
			}
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case url <- m[2] + "://" + m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.url = <-url:
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, fmt.Errorf("sqlkube did not report its address in 60s")
	}
	if s.client, err = clientFor(kubeconfig); err != nil {
		s.stop()
		return nil, err
	}
	if err := waitReady(s.client, s.url, nil); err != nil {
		return s, err
	}
	return s, waitSettled(s.client, s.url)
}

// sqlkubeAuditLog is the audit log of the sqlkube whose files are in dir.
func sqlkubeAuditLog(dir string) string { return filepath.Join(dir, "audit.log") }

// waitSettled waits for sqlkube's controllers to finish what they write at startup (each
// initial namespace's default ServiceAccount and kube-root-ca.crt ConfigMap): such writes move
// the resourceVersion of later lists, which kube's would not.
func waitSettled(client *http.Client, base string) error {
	deadline := time.Now().Add(60 * time.Second)
	for _, path := range []string{
		"/api/v1/serviceaccounts?fieldSelector=metadata.name%3Ddefault",
		"/api/v1/configmaps?fieldSelector=metadata.name%3Dkube-root-ca.crt",
	} {
		for countItems(client, base+path) < len(initialNamespaces) {
			if time.Now().After(deadline) {
				return fmt.Errorf("sqlkube did not write %s for every initial namespace in 60s", path)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// initialNamespaces are the namespaces sqlkube creates at startup.
var initialNamespaces = []string{"default", "kube-node-lease", "kube-public", "kube-system"}

// countItems is how many items the list at url has (0 when it cannot be read).
func countItems(client *http.Client, url string) int {
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var list struct{ Items []json.RawMessage }
	if json.NewDecoder(resp.Body).Decode(&list) != nil {
		return 0
	}
	return len(list.Items)
}

// clientFor mints a client certificate for user in groups from sqlkube's CA, with the binary's
// own kubeconfig command, as a user of sqlkube would.
func (s *sqlkube) clientFor(user string, groups []string) (*http.Client, error) {
	kubeconfig := filepath.Join(s.dir, user+".kubeconfig")
	args := []string{"kubeconfig", "--cert-dir=" + filepath.Join(s.dir, "pki"), "--user=" + user, "--server=" + s.url, "-o", kubeconfig}
	for _, g := range groups {
		args = append(args, "--group="+g)
	}
	if out, err := exec.Command(s.bin, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sqlkube kubeconfig: %v\n%s", err, out)
	}
	return clientFor(kubeconfig)
}

func (s *sqlkube) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// clientFor is an HTTP client with the credentials of a kubeconfig, once the file exists.
func clientFor(kubeconfig string) (*http.Client, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(kubeconfig); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return rest.HTTPClientFor(config)
}
