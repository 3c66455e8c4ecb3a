package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

func (s *sqlkubeServer) clientset() kubernetes.Interface {
	s.t.Helper()
	c, err := kubernetes.NewForConfig(s.restConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

func (s *sqlkubeServer) dynamicClient() dynamic.Interface {
	s.t.Helper()
	c, err := dynamic.NewForConfig(s.restConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

func (s *sqlkubeServer) apiextensions() apiextensionsclient.Interface {
	s.t.Helper()
	c, err := apiextensionsclient.NewForConfig(s.restConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// kubectl runs kubectl against the process with stdin, isolated from the user's kubeconfig and
// discovery cache so that runs never share state. It returns stdout, and stderr in the error.
func (s *sqlkubeServer) kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	stdout, _, err := s.kubectlStreams(t, stdin, args...)
	return stdout, err
}

// kubectlStreams is kubectl that also returns stderr when kubectl succeeds, where it prints
// the server's warnings.
func (s *sqlkubeServer) kubectlStreams(t testing.TB, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	home := s.kubectlHome
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", s.kubeconfigPath(), "--server", s.URL(), "--cache-dir", filepath.Join(home, "cache")}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), &kubectlError{args: args, err: err, stderr: errOut.String()}
	}
	return out.String(), errOut.String(), nil
}

// mustKubectl is kubectl that fails the test on error.
func (s *sqlkubeServer) mustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := s.kubectl(t, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type kubectlError struct {
	args   []string
	err    error
	stderr string
}

func (e *kubectlError) Error() string {
	return "kubectl " + strings.Join(e.args, " ") + ": " + e.err.Error() + "\n" + e.stderr
}

// response is a raw HTTP answer.
type response struct {
	code   int
	header http.Header
	body   []byte
}

// do sends one raw HTTP request; headers are name, value pairs.
func (s *sqlkubeServer) do(t testing.TB, method, path string, body []byte, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: b}
}

// status decodes the body as a Status, failing the test if it is not one.
func (r response) status(t testing.TB) metav1.Status {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("answer %d has Content-Type %q, want application/json", r.code, ct)
	}
	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil || st.Kind != "Status" || st.APIVersion != "v1" {
		t.Fatalf("answer %d is not a v1 Status (%v): %s", r.code, err, r.body)
	}
	return st
}
