package e2e

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"sigs.k8s.io/yaml"
)

// composeFile is the part of docker-compose.yaml the checks read.
type composeFile struct {
	Services map[string]composeService `json:"services"`
}

type composeService struct {
	Build       any                         `json:"build"`
	Environment map[string]string           `json:"environment"`
	Ports       []string                    `json:"ports"`
	Healthcheck *composeHealthcheck         `json:"healthcheck"`
	Volumes     []string                    `json:"volumes"`
	DependsOn   map[string]composeDependsOn `json:"depends_on"`
}

type composeHealthcheck struct {
	Test []string `json:"test"`
}

type composeDependsOn struct {
	Condition string `json:"condition"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile("../docker-compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yaml: %v", err)
	}
	return c
}

// TestComposeFile checks docker-compose.yaml without a Docker engine: PostgreSQL plus two
// replicas built from the Dockerfile, each published on its own port, health-checked on /readyz,
// started after the database is healthy, pointed at that database, and sharing one certificate
// directory.
func TestComposeFile(t *testing.T) {
	c := readCompose(t)
	pg, ok := c.Services["postgres"]
	if !ok || pg.Healthcheck == nil || !strings.Contains(strings.Join(pg.Healthcheck.Test, " "), "pg_isready") {
		t.Fatalf("postgres service missing or without a pg_isready health check: %+v", pg)
	}
	published := map[string]bool{}
	for _, name := range []string{"sqlkube-1", "sqlkube-2"} {
		svc, ok := c.Services[name]
		if !ok {
			t.Fatalf("service %s missing", name)
		}
		checkReplica(t, name, svc, pg)
		for _, p := range svc.Ports {
			host := strings.TrimSuffix(p, ":8080")
			if published[host] {
				t.Errorf("%s publishes %s, already taken", name, host)
			}
			published[host] = true
		}
	}
	if len(published) != 2 {
		t.Errorf("replicas publish %v, want two ports", published)
	}
	checkComposeConfig(t)
}

func checkReplica(t *testing.T, name string, svc composeService, pg composeService) {
	t.Helper()
	if svc.Build != "." {
		t.Errorf("%s: build %v, want the repository's Dockerfile (.)", name, svc.Build)
	}
	if len(svc.Ports) != 1 || !regexp.MustCompile(`^(127\.0\.0\.1:)?\d+:8080$`).MatchString(svc.Ports[0]) {
		t.Errorf("%s: ports %v, want one host port mapped to 8080", name, svc.Ports)
	}
	if svc.Environment["SQLKUBE_LISTEN"] != "0.0.0.0:8080" {
		t.Errorf("%s: SQLKUBE_LISTEN %q, want 0.0.0.0:8080", name, svc.Environment["SQLKUBE_LISTEN"])
	}
	if svc.Healthcheck == nil || !strings.Contains(strings.Join(svc.Healthcheck.Test, " "), "https://127.0.0.1:8080/readyz") {
		t.Errorf("%s: health check %+v, want a probe of /readyz", name, svc.Healthcheck)
	}
	if svc.DependsOn["postgres"].Condition != "service_healthy" {
		t.Errorf("%s: depends_on %+v, want postgres: service_healthy", name, svc.DependsOn)
	}
	if dir := svc.Environment["SQLKUBE_CERT_DIR"]; dir == "" || !slices.Contains(svc.Volumes, "pki:"+dir) {
		t.Errorf("%s: certificate directory %q on volumes %v, want it on the shared pki volume", name, dir, svc.Volumes)
	}
	checkDSN(t, name, svc.Environment["SQLKUBE_DB"], pg.Environment)
}

// checkDSN checks that dsn reaches the compose PostgreSQL with its user, password and database.
func checkDSN(t *testing.T, name, dsn string, pgEnv map[string]string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s: SQLKUBE_DB %q: %v", name, dsn, err)
	}
	password, _ := u.User.Password()
	if u.Scheme != "postgres" || u.Host != "postgres:5432" || u.User.Username() != pgEnv["POSTGRES_USER"] ||
		password != pgEnv["POSTGRES_PASSWORD"] || strings.TrimPrefix(u.Path, "/") != pgEnv["POSTGRES_DB"] {
		t.Errorf("%s: SQLKUBE_DB %q does not match the postgres service %v", name, dsn, pgEnv)
	}
}

// checkComposeConfig lets the compose client validate the file too, where one is installed (it
// needs no engine for that).
func checkComposeConfig(t *testing.T) {
	if err := exec.Command("docker", "compose", "version").Run(); err != nil {
		t.Log("docker compose is not installed: skipping `docker compose config`")
		return
	}
	out, err := exec.Command("docker", "compose", "-f", "../docker-compose.yaml", "config", "--quiet").CombinedOutput()
	if err != nil {
		t.Errorf("docker compose config: %v\n%s", err, out)
	}
}

// TestDockerfile checks the image recipe: a static build in one stage, a non-root runtime in
// another.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(text, -1)); n < 2 {
		t.Errorf("%d stages, want a multi-stage build", n)
	}
	if !strings.Contains(text, "CGO_ENABLED=0") {
		t.Error("the build does not set CGO_ENABLED=0")
	}
	user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(text)
	if user == nil || user[1] == "root" || strings.HasPrefix(user[1], "0") {
		t.Errorf("USER %v, want a non-root user", user)
	}
}

// secretsLeftBehind are files that `make run`, `go run .` in cmd/sqlkube and the README's steps
// leave in the working tree, each holding a secret: the CA's and ServiceAccount signing keys,
// admin and user kubeconfigs, the database and snapshots (every Secret), audit logs.
var secretsLeftBehind = []string{
	"sqlkube-pki/ca.key", "sqlkube-pki/apiserver.key", "sqlkube-pki/sa.key", "sqlkube-pki/ca.crt",
	"sqlkube.kubeconfig", "admin.kubeconfig", "alice.kubeconfig",
	"sqlkube.db", "sqlkube.db-wal", "sqlkube.db-shm",
	"cluster.snapshot", "cluster.snapshot.part", "audit.log",
	"cmd/sqlkube/sqlkube-pki/ca.key", "cmd/sqlkube/sqlkube.kubeconfig", "cmd/sqlkube/sqlkube.db",
}

// TestGitIgnore: git never offers the secrets a local run leaves as files to add.
func TestGitIgnore(t *testing.T) {
	for _, path := range secretsLeftBehind {
		// --no-index: whether the rules ignore the path, not whether a file there is tracked.
		if out, err := exec.Command("git", "-C", "..", "check-ignore", "--no-index", path).CombinedOutput(); err != nil {
			t.Errorf(".gitignore does not ignore %s: %v %s", path, err, out)
		}
	}
}

// TestDockerIgnore: by Docker's own matcher, the build context holds every source file the
// binary is built from and none of the secrets a local run leaves.
func TestDockerIgnore(t *testing.T) {
	ignored := dockerIgnored(t)
	for _, path := range secretsLeftBehind {
		if !ignored(path) {
			t.Errorf(".dockerignore lets %s into the build context", path)
		}
	}
	for _, path := range binarySources(t) {
		if ignored(path) {
			t.Errorf(".dockerignore keeps %s, which the binary is built from, out of the build context", path)
		}
	}
}

// dockerIgnored reads .dockerignore and reports whether it keeps a path (relative to the
// repository) out of the build context, as BuildKit decides it.
func dockerIgnored(t *testing.T) func(path string) bool {
	t.Helper()
	f, err := os.Open("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	matcher, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return func(path string) bool {
		excluded, err := matcher.MatchesOrParentMatches(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return excluded
	}
}

// binarySources lists the files `go build ./cmd/sqlkube` reads from this module, relative to
// the repository: go.mod, go.sum and every Go and embedded file of the packages it imports.
func binarySources(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f",
		`{{if and .Module (eq .Module.Path "github.com/sqlkube/sqlkube")}}{{$dir := .Dir}}{{range .GoFiles}}{{$dir}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$dir}}/{{.}}
{{end}}{{end}}`, "./cmd/sqlkube")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"go.mod", "go.sum"}
	for _, line := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, line)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	if len(files) < 50 {
		t.Fatalf("go list found only %v", files)
	}
	return files
}
