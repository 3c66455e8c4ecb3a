package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// clusterManifests are a node, a volume, and in namespace e2e-cluster a claim, a limit range
// and a quota.
const clusterManifests = `apiVersion: v1
kind: Node
metadata: {name: worker-1}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /data}
---
apiVersion: v1
kind: Namespace
metadata: {name: e2e-cluster}
---
apiVersion: v1
kind: LimitRange
metadata: {name: limits, namespace: e2e-cluster}
spec:
  limits:
  - type: PersistentVolumeClaim
    max: {storage: 2Gi}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: quota, namespace: e2e-cluster}
spec:
  hard: {pods: "2", requests.storage: 10Gi}
`

// storageClassCRD stands for storage.k8s.io's StorageClasses where sqlkube does not serve
// them: kube's DefaultStorageClass admission reads what is stored as
// storageclasses.storage.k8s.io. Where the built-in is served, this CRD is not, and the
// StorageClass below is the built-in's.
const storageClassCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: storageclasses.storage.k8s.io
  annotations: {api-approved.kubernetes.io: "https://github.com/kubernetes/kubernetes/pull/1"}
spec:
  group: storage.k8s.io
  scope: Cluster
  names: {plural: storageclasses, singular: storageclass, kind: StorageClass, listKind: StorageClassList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

const defaultStorageClass = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: example.com/none
`

const claimManifest = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %s, namespace: e2e-cluster}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: %s}}
`

// TestClusterTypesWithKubectl: nodes, volumes, claims, limit ranges, quotas and
// componentstatuses through kubectl,
// with kube's columns and the effects of kube's admission plugins: a new node's not-ready
// taint, cordon as a patch of spec.unschedulable, the protection finalizers, the default
// StorageClass, a claim beyond the namespace's LimitRange refused.
func TestClusterTypesWithKubectl(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		s.mustKubectl(t, clusterManifests, "apply", "-f", "-")

		rows := kubectlRows(t, s, "get", "nodes")
		if len(rows) != 2 || strings.Join(rows[0], " ") != "NAME STATUS ROLES AGE VERSION" || rows[1][0] != "worker-1" || rows[1][1] != "Unknown" {
			t.Errorf("kubectl get nodes: %v", rows)
		}
		if taints := s.mustKubectl(t, "", "get", "node", "worker-1", "-o", "jsonpath={.spec.taints[*].key}={.spec.taints[*].effect}"); taints != "node.kubernetes.io/not-ready=NoSchedule" {
			t.Errorf("a new node's taints: %q", taints)
		}
		if out := s.mustKubectl(t, "", "cordon", "worker-1"); out != "node/worker-1 cordoned\n" {
			t.Errorf("kubectl cordon: %q", out)
		}
		if out := s.mustKubectl(t, "", "get", "nodes", "--field-selector", "spec.unschedulable=true", "-o", "name"); out != "node/worker-1\n" {
			t.Errorf("cordoned nodes: %q", out)
		}
		if rows := kubectlRows(t, s, "get", "no"); len(rows) != 2 || rows[1][1] != "Unknown,SchedulingDisabled" {
			t.Errorf("kubectl get no after cordon: %v", rows)
		}
		s.mustKubectl(t, "", "uncordon", "worker-1")
		if out := s.mustKubectl(t, "", "get", "nodes", "--field-selector", "spec.unschedulable=false", "-o", "name"); out != "node/worker-1\n" {
			t.Errorf("schedulable nodes: %q", out)
		}

		if f := s.mustKubectl(t, "", "get", "pv", "pv-1", "-o", "jsonpath={.metadata.finalizers}"); f != `["kubernetes.io/pv-protection"]` {
			t.Errorf("volume's finalizers: %s", f)
		}
		s.mustKubectl(t, storageClassCRD, "apply", "-f", "-")
		eventually(t, 30*time.Second, "the default StorageClass stored", func() (bool, error) {
			_, err := s.kubectl(t, defaultStorageClass, "apply", "-f", "-")
			return err == nil, nil
		})
		s.mustKubectl(t, fmt.Sprintf(claimManifest, "data", "1Gi"), "apply", "-f", "-")
		if out := s.mustKubectl(t, "", "get", "pvc", "data", "-n", "e2e-cluster", "-o", "jsonpath={.spec.storageClassName} {.metadata.finalizers} {.status.phase}"); out != `standard ["kubernetes.io/pvc-protection"] Pending` {
			t.Errorf("claim: %q", out)
		}
		rows = kubectlRows(t, s, "get", "pvc", "-n", "e2e-cluster")
		if len(rows) != 2 || strings.Join(rows[0], " ") != "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE" || rows[1][1] != "Pending" || rows[1][2] != "standard" {
			t.Errorf("kubectl get pvc: %v", rows)
		}
		_, err := s.kubectl(t, fmt.Sprintf(claimManifest, "big", "5Gi"), "apply", "-f", "-")
		if err == nil || !strings.Contains(err.Error(), `persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi`) {
			t.Errorf("a claim beyond the LimitRange: %v", err)
		}

		if out := s.mustKubectl(t, "", "get", "limits,quota", "-n", "e2e-cluster", "-o", "name"); out != "limitrange/limits\nresourcequota/quota\n" {
			t.Errorf("kubectl get limits,quota: %q", out)
		}
		if rows := kubectlRows(t, s, "get", "quota", "-n", "e2e-cluster"); len(rows) != 2 || rows[0][0] != "NAME" || rows[1][0] != "quota" {
			t.Errorf("kubectl get quota: %v", rows)
		}

		// sqlkube's one component is its database.
		out, stderr, err := s.kubectlStreams(t, "", "get", "cs")
		if err != nil || out != "NAME       STATUS    MESSAGE   ERROR\ndatabase   Healthy   ok        \n" ||
			!strings.Contains(stderr, "Warning: v1 ComponentStatus is deprecated in v1.19+") {
			t.Errorf("kubectl get cs: %v\n%q\n%s", err, out, stderr)
		}
	})
}

// kubectlRows runs kubectl and splits its output in rows of fields.
func kubectlRows(t *testing.T, s *sqlkubeServer, args ...string) [][]string {
	t.Helper()
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(s.mustKubectl(t, "", args...)), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}
