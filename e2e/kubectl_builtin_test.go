package e2e

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The built-in types as a new user meets them through kubectl (issue 32's "done when"): each
// subtest works in a namespace of its own, so that one failing leaves the others standing.

// webDeployment is workloads' Deployment.
const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 8080
`

// workloads is a multi-document manifest of the types an application usually holds.
const workloads = webDeployment + `---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: busybox:1.37
        command: [sh, -c, "echo migrated"]
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: report
            image: busybox:1.37
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port: {number: 80}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 80}
`

// workloadNames are the objects workloads holds, as kubectl names them.
var workloadNames = []string{
	"deployment.apps/web", "service/web", "job.batch/migrate", "cronjob.batch/report",
	"ingress.networking.k8s.io/web", "poddisruptionbudget.policy/web", "horizontalpodautoscaler.autoscaling/web",
}

func TestKubectlBuiltin(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		t.Run("deployment", func(t *testing.T) { checkKubectlDeployment(t, s) })
		t.Run("apply", func(t *testing.T) { checkKubectlApplyWorkloads(t, s) })
		t.Run("run and expose", func(t *testing.T) { checkKubectlRunExpose(t, s) })
		t.Run("explain", func(t *testing.T) { checkKubectlExplain(t, s) })
		t.Run("server-side apply", func(t *testing.T) { checkKubectlServerSideApply(t, s) })
		t.Run("cluster-info", func(t *testing.T) { checkKubectlClusterInfo(t, s) })
	})
}

// checkKubectlDeployment creates a Deployment imperatively, scales it, changes its image, reads
// its (empty: nothing makes ReplicaSets) rollout history and exposes it.
func checkKubectlDeployment(t *testing.T, s *sqlkubeServer) {
	k := withNamespace(t, s, "deploy")
	expectOutput(t, k.must(t, "", "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=8080"), "deployment.apps/web created")
	expectOutput(t, k.must(t, "", "scale", "deployment/web", "--replicas=3"), "deployment.apps/web scaled")
	expectOutput(t, k.must(t, "", "get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"), "3")
	expectOutput(t, k.must(t, "", "set", "image", "deployment/web", "nginx=nginx:1.28"), "deployment.apps/web image updated")
	expectOutput(t, k.must(t, "", "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image} {.metadata.generation}"), "nginx:1.28 3")
	// kube-controller-manager would make a ReplicaSet per template; neither sqlkube nor envtest runs it.
	expectOutput(t, k.must(t, "", "rollout", "history", "deployment/web"), "deployment.apps/web \nNo rollout history found.")
	expectOutput(t, k.must(t, "", "expose", "deployment", "web", "--port=80", "--target-port=8080"), "service/web exposed")
	expectOutput(t, k.must(t, "", "get", "service", "web", "-o", "jsonpath={.spec.selector.app} {.spec.ports[0].port} {.spec.ports[0].targetPort}"), "web 80 8080")
	table := k.must(t, "", "get", "deployment", "web")
	if rows := tableRows(table); len(rows) != 2 || !slices.Equal(rows[0], []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}) ||
		!slices.Equal(rows[1][:4], []string{"web", "0/3", "0", "0"}) {
		t.Errorf("kubectl get deployment web printed:\n%s", table)
	}
}

// checkKubectlApplyWorkloads applies the workloads manifest, applies it again (nothing changes:
// the server's defaults are stable; only the PDB is "configured", as on kube: its selector's
// patch strategy is replace, so kubectl's patch of it is never empty), and finds every object
// but the PDB and the Ingress under `kubectl get all` (they are not in the category "all", as on
// kube).
func checkKubectlApplyWorkloads(t *testing.T, s *sqlkubeServer) {
	k := withNamespace(t, s, "apply")
	created, configured := make([]string, len(workloadNames)), make([]string, len(workloadNames))
	for i, name := range workloadNames {
		created[i], configured[i] = name+" created", name+" unchanged"
		if strings.HasPrefix(name, "poddisruptionbudget.") {
			configured[i] = name + " configured"
		}
	}
	expectOutput(t, k.must(t, workloads, "apply", "-f", "-"), strings.Join(created, "\n"))
	expectOutput(t, k.must(t, workloads, "apply", "-f", "-"), strings.Join(configured, "\n"))
	want := []string{"service/web", "deployment.apps/web", "horizontalpodautoscaler.autoscaling/web", "cronjob.batch/report", "job.batch/migrate"}
	got := strings.Fields(k.must(t, "", "get", "all", "-o", "name"))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kubectl get all -o name: %v, want %v", got, want)
	}
}

// checkKubectlRunExpose runs a Pod and exposes it as a Service.
func checkKubectlRunExpose(t *testing.T, s *sqlkubeServer) {
	k := withNamespace(t, s, "run")
	expectOutput(t, k.must(t, "", "run", "nginx", "--image=nginx:1.27", "--port=80"), "pod/nginx created")
	// Nothing schedules it, as in envtest.
	expectOutput(t, k.must(t, "", "get", "pod", "nginx", "-o", "jsonpath={.status.phase} {.spec.restartPolicy} {.spec.dnsPolicy}"), "Pending Always ClusterFirst")
	expectOutput(t, k.must(t, "", "expose", "pod", "nginx"), "service/nginx exposed")
	expectOutput(t, k.must(t, "", "get", "service", "nginx", "-o", "jsonpath={.spec.selector.run} {.spec.ports[0].port}"), "nginx 80")
}

// checkKubectlExplain reads a built-in type's documentation from the server's OpenAPI.
func checkKubectlExplain(t *testing.T, s *sqlkubeServer) {
	out := s.mustKubectl(t, "", "explain", "deployment.spec")
	for _, want := range []string{"GROUP:      apps", "KIND:       Deployment", "VERSION:    v1", "FIELD: spec <DeploymentSpec>",
		"Specification of the desired behavior of the Deployment.", "replicas\t<integer>", "template\t<PodTemplateSpec> -required-"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain deployment.spec lacks %q:\n%s", want, out)
		}
	}
}

// checkKubectlServerSideApply: kubectl's server-side apply of a Deployment records kube's
// managedFields entry, read with kube's schema of the type (the selector atomic, containers
// keyed by name, ports by port and defaulted protocol).
func checkKubectlServerSideApply(t *testing.T, s *sqlkubeServer) {
	k := withNamespace(t, s, "ssa")
	expectOutput(t, k.must(t, webDeployment, "apply", "--server-side", "-f", "-"), "deployment.apps/web serverside-applied")
	const entry = `{.metadata.managedFields[*].manager} {.metadata.managedFields[*].operation} {.metadata.managedFields[*].apiVersion} {.metadata.managedFields[*].fieldsV1}`
	want := `kubectl Apply apps/v1 {"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}`
	expectOutput(t, k.must(t, "", "get", "deployment", "web", "-o", "jsonpath="+entry), want)
	// Applying it again changes nothing, and neither does a conflicting apply without force.
	expectOutput(t, k.must(t, webDeployment, "apply", "--server-side", "-f", "-"), "deployment.apps/web serverside-applied")
	if _, err := k.run(t, strings.Replace(webDeployment, "replicas: 2", "replicas: 3", 1), "apply", "--server-side", "--field-manager=other", "-f", "-"); err == nil ||
		!strings.Contains(err.Error(), `conflict with "kubectl": .spec.replicas`) {
		t.Errorf("a conflicting apply: %v, want a conflict on .spec.replicas", err)
	}
	expectOutput(t, k.must(t, "", "get", "deployment", "web", "-o", "jsonpath="+entry), want)
}

// checkKubectlClusterInfo: the control plane is the default/kubernetes Service's server.
func checkKubectlClusterInfo(t *testing.T, s *sqlkubeServer) {
	out := stripColours(s.mustKubectl(t, "", "cluster-info"))
	if want := "Kubernetes control plane is running at " + s.URL(); !strings.HasPrefix(out, want) {
		t.Errorf("kubectl cluster-info printed %q, want it to start %q", out, want)
	}
}

var colour = regexp.MustCompile("\x1b\\[[0-9;]*m")

func stripColours(s string) string { return colour.ReplaceAllString(s, "") }
