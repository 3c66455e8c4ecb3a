package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The APIServices kube-apiserver's aggregator keeps for what it serves, as kubectl shows them,
// and the types served last (ResourceClaims, whose admin access depends on their namespace's
// label, read through the server's own client).

// apiServiceRow is the row `kubectl get apiservices` prints for name, without its age, or nil.
func apiServiceRow(t *testing.T, s *sqlkubeServer, name string) []string {
	t.Helper()
	out, err := s.kubectl(t, "", "get", "apiservices", name, "--no-headers")
	if err != nil {
		return nil
	}
	row := strings.Fields(out)
	return row[:len(row)-1]
}

const apiServicesCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.apis.e2e.example.com
spec:
  group: apis.e2e.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
`

const aggregatedAPIService = `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.e2e.example.com
spec:
  group: metrics.e2e.example.com
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {namespace: default, name: metrics-server}
`

func TestKubectlAPIServices(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		header := strings.Fields(strings.SplitN(s.mustKubectl(t, "", "get", "apiservices"), "\n", 2)[0])
		if want := []string{"NAME", "SERVICE", "AVAILABLE", "AGE"}; !slices.Equal(header, want) {
			t.Errorf("kubectl get apiservices: columns %q, want %q", header, want)
		}
		for _, name := range []string{"v1.", "v1.apps", "v2.autoscaling", "v1.resource.k8s.io", "v1.authorization.k8s.io"} {
			eventually(t, 10*time.Second, "APIService "+name, func() (bool, error) {
				return slices.Equal(apiServiceRow(t, s, name), []string{name, "Local", "True"}), nil
			})
		}
		if got := s.mustKubectl(t, "", "get", "apiservice", "v2.autoscaling", "-o",
			"jsonpath={.spec.groupPriorityMinimum}/{.spec.versionPriority} {.metadata.labels}"); got != `17500/30 {"kube-aggregator.kubernetes.io/automanaged":"onstart"}` {
			t.Errorf("v2.autoscaling: %s", got)
		}

		// A CRD's group version gets its APIService while the CRD serves it.
		s.mustKubectl(t, apiServicesCRD, "apply", "-f", "-")
		eventually(t, 10*time.Second, "the CRD's APIService", func() (bool, error) {
			return slices.Equal(apiServiceRow(t, s, "v1.apis.e2e.example.com"), []string{"v1.apis.e2e.example.com", "Local", "True"}), nil
		})
		if got := s.mustKubectl(t, "", "get", "apiservice", "v1.apis.e2e.example.com", "-o",
			"jsonpath={.spec.groupPriorityMinimum}/{.spec.versionPriority} {.metadata.labels}"); got != `1000/100 {"kube-aggregator.kubernetes.io/automanaged":"true"}` {
			t.Errorf("the CRD's APIService: %s", got)
		}
		s.mustKubectl(t, "", "delete", "crd", "gadgets.apis.e2e.example.com")
		eventually(t, 10*time.Second, "the CRD's APIService deleted", func() (bool, error) {
			return apiServiceRow(t, s, "v1.apis.e2e.example.com") == nil, nil
		})

		// An aggregated API's APIService is stored; nothing proxies to it or checks it.
		s.mustKubectl(t, aggregatedAPIService, "apply", "-f", "-")
		if row := apiServiceRow(t, s, "v1beta1.metrics.e2e.example.com"); !slices.Equal(row, []string{"v1beta1.metrics.e2e.example.com", "default/metrics-server", "Unknown"}) {
			t.Errorf("an aggregated APIService: %q", row)
		}
		if _, err := s.kubectl(t, strings.Replace(aggregatedAPIService, "v1beta1.metrics", "v1.metrics", 1), "apply", "-f", "-"); err == nil ||
			!strings.Contains(err.Error(), `metadata.name: Invalid value: "v1.metrics.e2e.example.com": must be `+"`spec.version+\".\"+spec.group`"+`: "v1beta1.metrics.e2e.example.com"`) {
			t.Errorf("a misnamed APIService: %v", err)
		}
		s.mustKubectl(t, "", "delete", "apiservice", "v1beta1.metrics.e2e.example.com")
	})
}

const adminClaim = `apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: debug
  namespace: %s
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, adminAccess: true}
`

func TestKubectlResourceClaims(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		s.mustKubectl(t, "", "create", "namespace", "dra")
		claim := strings.Replace(adminClaim, "%s", "dra", 1)
		_, err := s.kubectl(t, claim, "apply", "-f", "-")
		if want := "spec.devices.requests[0].adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("admin access in an unlabelled namespace: %v", err)
		}
		s.mustKubectl(t, "", "label", "namespace", "dra", "resource.kubernetes.io/admin-access=true")
		s.mustKubectl(t, claim, "apply", "-f", "-")
		rows := kubectlRows(t, s, "get", "resourceclaims", "-n", "dra")
		if len(rows) != 2 || !slices.Equal(rows[0], []string{"NAME", "STATE", "AGE"}) || !slices.Equal(rows[1][:2], []string{"debug", "pending"}) {
			t.Errorf("kubectl get resourceclaims: %q", rows)
		}
	})
}
