package kuberef

import (
	"bufio"
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
}

var servingLine = regexp.MustCompile(`msg=serving addr=(\S+) scheme=(\S+)`)

// buildSqlkube builds sqlkube from the repository root into dir.
func buildSqlkube(dir string) (string, error) {
	bin := filepath.Join(dir, "sqlkube")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sqlkube")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sqlkube: %v\n%s", err, out)
	}
	return bin, nil
}

// startSqlkube starts the binary on the database dsn with its files in dir, as the e2e tests do.
func startSqlkube(bin, dir, dsn string) (*sqlkube, error) {
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	cmd := exec.Command(bin, "--listen=127.0.0.1:0", "--db="+dsn,
		"--log-level=info", "--cert-dir="+filepath.Join(dir, "pki"), "--admin-kubeconfig="+kubeconfig)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case url <- m[2] + "://" + m[1]:
				default:
				}
			}
		}
	}()
	s := &sqlkube{cmd: cmd}
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
	return s, waitReady(s.client, s.url, nil)
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
