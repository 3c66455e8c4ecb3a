package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// e2eClusterOptions make a dead kubelet show within seconds: kwok renews its node's lease every
// 2.5 s, kube-controller-manager marks a node Unknown 16 s after its last renewal.
var e2eClusterOptions = clusterOptions{qps: 100, burst: 200, leaseSeconds: 10, gracePeriod: 16 * time.Second}

// clusterWait bounds each wait of the cluster tests: what kube does in seconds, with room for a
// loaded two-core machine.
const clusterWait = 2 * time.Minute

// TestRealCluster runs a cluster on sqlkube, on each backend (issue 47): the real
// kube-controller-manager and kube-scheduler, each under its own identity, and kwok's simulated
// kubelets for three nodes, two of them (group a) behind one kwok process and one (group b)
// behind another, whose death is a dead kubelet. The steps build on each other in order.
func TestRealCluster(t *testing.T) {
	bins := clusterBinariesOrSkip(t)
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		s := startServer(t, dsn, clusterArgs...)
		api := s.clusterAPIOf(t, "sqlkube "+backendOf(dsn))
		client := api.clientset(t)
		kcm, scheduler := startControlPlane(t, bins, api, e2eClusterOptions)
		kubeletA := startKwok(t, bins, api, "a", e2eClusterOptions)
		kubeletB := startKwok(t, bins, api, "b", e2eClusterOptions)
		nodes := append(createNodes(t, client, "a", "node-a", 2), createNodes(t, client, "b", "node-b", 1)...)
		c := &clusterCheck{client: client, ns: "e2e-cluster", components: []*component{kcm, scheduler, kubeletA}}
		c.createNamespace(t)
		steps := []struct {
			name string
			run  func(t *testing.T)
		}{
			{"nodes Ready, leases renewed", func(t *testing.T) { c.nodesReady(t, nodes) }},
			{"Deployment rolled out and scaled", c.deploymentRollsOut},
			{"Deployment updated and rolled back", c.deploymentUpdatedAndRolledBack},
			{"Job runs to completion", c.jobCompletes},
			{"StatefulSet's pods in order", c.statefulSetInOrder},
			{"Service's EndpointSlices list its Running pods", c.serviceEndpoints},
			{"a dead kubelet's node: Unknown, tainted, pods evicted and replaced", func(t *testing.T) {
				c.pinPod(t, "pinned", "node-b-0")
				kubeletB.kill()
				c.nodeLost(t, "node-b-0")
			}},
			{"a deleted node's pods removed", func(t *testing.T) { c.nodeDeleted(t, "node-b-0") }},
			{"a namespace with running pods deleted", c.namespaceDeleted},
		}
		for _, step := range steps {
			if !t.Run(step.name, step.run) {
				return
			}
		}
	})
}

// clusterCheck is the state the steps share: the admin's client, the test namespace, and the
// components that must not exit (kwok of group b is killed on purpose).
type clusterCheck struct {
	client     kubernetes.Interface
	ns         string
	components []*component
}

// wait polls condition until it holds, fails the test after clusterWait with the last state it
// described, or as soon as a component exits (it would never hold then).
func (c *clusterCheck) wait(t *testing.T, what string, condition func() (bool, string, error)) {
	t.Helper()
	deadline := time.Now().Add(clusterWait)
	state := ""
	for poll := time.NewTicker(250 * time.Millisecond); ; <-poll.C {
		done, now, err := condition()
		if err != nil {
			now = err.Error()
		}
		if done {
			poll.Stop()
			return
		}
		state = now
		for _, comp := range c.components {
			if comp.exited() {
				t.Fatalf("%s: %s exited (%v) while waiting; last state: %s", what, comp.name, comp.cmd.ProcessState, state)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after %s; last state: %s", what, clusterWait, state)
		}
	}
}

func (c *clusterCheck) createNamespace(t *testing.T) {
	t.Helper()
	_, err := c.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// nodesReady waits for each node to be Ready (kwok's node-initialize stage) and then for each
// node's lease to be renewed after it was first seen (kwok's lease controller), which is what
// keeps them Ready for kube-controller-manager.
func (c *clusterCheck) nodesReady(t *testing.T, names []string) {
	ctx := context.Background()
	c.wait(t, "nodes Ready", func() (bool, string, error) {
		var states []string
		ready := 0
		for _, name := range names {
			node, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			status := nodeCondition(node, corev1.NodeReady)
			states = append(states, name+"="+string(status))
			if status == corev1.ConditionTrue {
				ready++
			}
		}
		return ready == len(names), strings.Join(states, " "), nil
	})
	first := map[string]time.Time{}
	c.wait(t, "node leases renewed", func() (bool, string, error) {
		var states []string
		renewed := 0
		for _, name := range names {
			lease, err := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				states = append(states, name+": no lease")
				continue
			} else if err != nil {
				return false, "", err
			}
			if lease.Spec.RenewTime == nil {
				states = append(states, name+": never renewed")
				continue
			}
			at := lease.Spec.RenewTime.Time
			if seen, ok := first[name]; !ok {
				first[name] = at
			} else if at.After(seen) {
				renewed++
			}
			states = append(states, fmt.Sprintf("%s renewed at %s", name, at.Format(time.RFC3339Nano)))
		}
		return renewed == len(names), strings.Join(states, ", "), nil
	})
}

func nodeCondition(node *corev1.Node, kind corev1.NodeConditionType) corev1.ConditionStatus {
	for _, cond := range node.Status.Conditions {
		if cond.Type == kind {
			return cond.Status
		}
	}
	return ""
}

// webLabels select the Deployment's pods.
var webLabels = map[string]string{"app": "web"}

// webSpreadDeployment is spread one pod per node at most apart (so that every node has one of its
// pods once it has as many as nodes) and leaves an unreachable node after 5 s rather than kube's
// default 300, so that the dead-kubelet step is quick.
func webSpreadDeployment(ns string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: webLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: webLabels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}},
					Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
						Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
						WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: webLabels},
						// A node tainted unreachable is no domain for the replacements.
						NodeTaintsPolicy: ptr.To(corev1.NodeInclusionPolicyHonor)}},
				},
			},
		},
	}
}

// runningPods are the pods of selector that are Running and Ready and not being deleted.
func (c *clusterCheck) runningPods(selector string) ([]corev1.Pod, string, error) {
	list, err := c.client.CoreV1().Pods(c.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, "", err
	}
	var running []corev1.Pod
	var states []string
	for _, pod := range list.Items {
		states = append(states, fmt.Sprintf("%s on %q: %s ready=%v deleting=%v", pod.Name, pod.Spec.NodeName, pod.Status.Phase,
			podReady(&pod), pod.DeletionTimestamp != nil))
		if pod.Status.Phase == corev1.PodRunning && podReady(&pod) && pod.DeletionTimestamp == nil {
			running = append(running, pod)
		}
	}
	return running, strings.Join(states, "; "), nil
}

func podReady(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitWebPods waits for exactly n Running pods of the Deployment, not on avoid, all of its current
// template (the ReplicaSet whose pod-template-hash the Deployment's newest ReplicaSet has), and
// for the Deployment to count them available.
func (c *clusterCheck) waitWebPods(t *testing.T, n int, avoid string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	c.wait(t, fmt.Sprintf("%d Running web pods", n), func() (bool, string, error) {
		running, states, err := c.runningPods("app=web")
		if err != nil {
			return false, "", err
		}
		dep, err := c.client.AppsV1().Deployments(c.ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pods = running
		st := dep.Status
		states = fmt.Sprintf("deployment generation %d observed %d, updated %d, available %d; pods: %s",
			dep.Generation, st.ObservedGeneration, st.UpdatedReplicas, st.AvailableReplicas, states)
		done := len(running) == n && st.ObservedGeneration == dep.Generation && st.UpdatedReplicas == int32(n) &&
			st.AvailableReplicas == int32(n) && st.Replicas == int32(n) &&
			!slices.ContainsFunc(running, func(p corev1.Pod) bool { return p.Spec.NodeName == avoid })
		return done, states, nil
	})
	return pods
}

// deploymentRollsOut creates a Deployment of 3, waits for its pods Running (ReplicaSet
// controller, scheduler, kubelet), then scales it to 4 through its scale subresource, which
// puts a pod of it on every node (the spread allows no node two more than another).
func (c *clusterCheck) deploymentRollsOut(t *testing.T) {
	ctx := context.Background()
	if _, err := c.client.AppsV1().Deployments(c.ns).Create(ctx, webSpreadDeployment(c.ns, 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitWebPods(t, 3, "")
	// As the horizontal pod autoscaler does: client-go's UpdateScale, a PUT of the Scale (in
	// protobuf).
	scale, err := c.client.AppsV1().Deployments(c.ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 4
	if _, err := c.client.AppsV1().Deployments(c.ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := c.waitWebPods(t, 4, "")
	perNode := map[string]int{}
	for _, pod := range pods {
		perNode[pod.Spec.NodeName]++
	}
	if len(perNode) != 3 {
		t.Errorf("4 pods spread with skew 1 over 3 nodes are on %v; want every node", perNode)
	}
}

// deploymentUpdatedAndRolledBack changes the pod template (a new ReplicaSet takes over), then
// restores it, as kubectl rollout undo does: the first ReplicaSet takes over again.
func (c *clusterCheck) deploymentUpdatedAndRolledBack(t *testing.T) {
	ctx := context.Background()
	first := c.activeReplicaSet(t)
	c.setWebImage(t, "nginx:2")
	c.waitWebPods(t, 4, "")
	second := c.activeReplicaSet(t)
	if second == first {
		t.Fatalf("ReplicaSet %s still active after the template changed", first)
	}
	c.setWebImage(t, "nginx:1")
	c.waitWebPods(t, 4, "")
	if back := c.activeReplicaSet(t); back != first {
		t.Errorf("after the rollback ReplicaSet %s is active; want the first, %s", back, first)
	}
	rs, err := c.client.AppsV1().ReplicaSets(c.ns).Get(ctx, second, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *rs.Spec.Replicas != 0 {
		t.Errorf("the updated template's ReplicaSet %s wants %d replicas after the rollback; want 0", second, *rs.Spec.Replicas)
	}
}

// activeReplicaSet is the name of the one ReplicaSet of web that wants replicas.
func (c *clusterCheck) activeReplicaSet(t *testing.T) string {
	t.Helper()
	list, err := c.client.AppsV1().ReplicaSets(c.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var active []string
	for _, rs := range list.Items {
		if *rs.Spec.Replicas > 0 {
			active = append(active, rs.Name)
		}
	}
	if len(active) != 1 {
		t.Fatalf("ReplicaSets of web that want replicas: %v; want one", active)
	}
	return active[0]
}

func (c *clusterCheck) setWebImage(t *testing.T, image string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, image)
	if _, err := c.client.AppsV1().Deployments(c.ns).Patch(context.Background(), "web", types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// jobCompletes runs a Job of two completions, two at a time; kwok completes a Job's running pods.
func (c *clusterCheck) jobCompletes(t *testing.T) {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: c.ns},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](2), Parallelism: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "work", Image: "busybox:1"}},
			}},
		},
	}
	if _, err := c.client.BatchV1().Jobs(c.ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.wait(t, "Job complete", func() (bool, string, error) {
		job, err := c.client.BatchV1().Jobs(c.ns).Get(context.Background(), "batch", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		complete := false
		for _, cond := range job.Status.Conditions {
			complete = complete || cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue
		}
		return complete && job.Status.Succeeded == 2, fmt.Sprintf("succeeded %d, failed %d, active %d, conditions %v",
			job.Status.Succeeded, job.Status.Failed, job.Status.Active, job.Status.Conditions), nil
	})
}

// serviceEndpoints creates a Service for web and waits until its EndpointSlices list exactly
// the IPs of web's Running pods, ready (EndpointSlice controller).
func (c *clusterCheck) serviceEndpoints(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: c.ns},
		Spec: corev1.ServiceSpec{Selector: webLabels,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := c.client.CoreV1().Services(c.ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.wait(t, "EndpointSlices list the Running pods", func() (bool, string, error) {
		pods, states, err := c.runningPods("app=web")
		if err != nil {
			return false, "", err
		}
		var want []string
		for _, pod := range pods {
			want = append(want, pod.Status.PodIP)
		}
		got, err := c.endpointIPs("web")
		if err != nil {
			return false, "", err
		}
		sort.Strings(want)
		return len(want) == 4 && slices.Equal(got, want), fmt.Sprintf("slices list %v, pods' IPs %v (%s)", got, want, states), nil
	})
}

// endpointIPs are the ready addresses the EndpointSlices of service list, sorted.
func (c *clusterCheck) endpointIPs(service string) ([]string, error) {
	list, err := c.client.DiscoveryV1().EndpointSlices(c.ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, slice := range list.Items {
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				ips = append(ips, ep.Addresses...)
			}
		}
	}
	sort.Strings(ips)
	return ips, nil
}

// nodeLost: with its kubelet gone, the node turns Unknown, is tainted unreachable (node lifecycle
// controller), its pods are evicted once their 5 s toleration ends (taint eviction controller)
// and the Deployment's pods are replaced on the other nodes.
func (c *clusterCheck) nodeLost(t *testing.T, name string) {
	ctx := context.Background()
	c.wait(t, name+" Unknown and tainted unreachable", func() (bool, string, error) {
		node, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		tainted := slices.ContainsFunc(node.Spec.Taints, func(taint corev1.Taint) bool {
			return taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute
		})
		ready := nodeCondition(node, corev1.NodeReady)
		return ready == corev1.ConditionUnknown && tainted, fmt.Sprintf("Ready=%s, taints %v", ready, node.Spec.Taints), nil
	})
	// The Job's completed pods tolerate the taint for kube's default 300 s; web's and the pinned
	// pod's for 5 (the pinned pod makes sure there is one: web's rollouts may leave none there).
	c.wait(t, name+"'s web and pinned pods evicted", func() (bool, string, error) {
		pods, err := c.podsOn(name, "app in (web, pinned)")
		if err != nil {
			return false, "", err
		}
		var states []string
		evicted := 0
		for _, pod := range pods {
			states = append(states, fmt.Sprintf("%s deleting=%v", pod.Name, pod.DeletionTimestamp != nil))
			if pod.DeletionTimestamp != nil {
				evicted++
			}
		}
		pinned := slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == "pinned" })
		return pinned && evicted == len(pods), strings.Join(states, ", "), nil
	})
	c.waitWebPods(t, 4, name)
}

// pinPod creates a pod bound to node (as a kubelet's static pods are, without the scheduler)
// that leaves an unreachable node after 5 s, and waits until it runs.
func (c *clusterCheck) pinPod(t *testing.T, name, node string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns, Labels: map[string]string{"app": "pinned"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}},
			Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}}},
	}
	if _, err := c.client.CoreV1().Pods(c.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.wait(t, name+" Running", func() (bool, string, error) {
		pods, states, err := c.runningPods("app=pinned")
		return len(pods) == 1, states, err
	})
}

// podsOn are the pods bound to node (of any namespace) that selector selects.
func (c *clusterCheck) podsOn(node, selector string) ([]corev1.Pod, error) {
	list, err := c.client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node, LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// nodeDeleted deletes the lost node: the pod garbage collector removes the pods still bound to
// it (kube's does within about a minute: it checks every 20 s, and waits 40 s to be sure the node
// is gone).
func (c *clusterCheck) nodeDeleted(t *testing.T, name string) {
	if err := c.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.wait(t, name+"'s pods removed", func() (bool, string, error) {
		pods, err := c.podsOn(name, "")
		if err != nil {
			return false, "", err
		}
		var names []string
		for _, pod := range pods {
			names = append(names, pod.Namespace+"/"+pod.Name)
		}
		return len(pods) == 0, fmt.Sprintf("pods still bound: %v", names), nil
	})
}

// statefulSetInOrder creates a StatefulSet of 3 (OrderedReady): its pods are named by ordinal and
// each is created only once the one before it is Running and Ready.
func (c *clusterCheck) statefulSetInOrder(t *testing.T) {
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: c.ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres:16"}}}},
		},
	}
	if _, err := c.client.AppsV1().StatefulSets(c.ns).Create(context.Background(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	c.wait(t, "StatefulSet's 3 pods Running", func() (bool, string, error) {
		running, states, err := c.runningPods("app=db")
		pods = running
		return len(running) == 3, states, err
	})
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for i, pod := range pods {
		if want := fmt.Sprintf("db-%d", i); pod.Name != want {
			t.Fatalf("pod %d is %s; want %s", i, pod.Name, want)
		}
		if i == 0 {
			continue
		}
		// Timestamps have whole seconds: a pod created before its predecessor was Ready would
		// show as created the second before at the latest.
		if ready := readySince(&pods[i-1]); pod.CreationTimestamp.Before(&ready) {
			t.Errorf("%s created at %s, before %s was Ready at %s", pod.Name, pod.CreationTimestamp, pods[i-1].Name, ready)
		}
	}
}

// readySince is when pod's Ready condition last turned true.
func readySince(pod *corev1.Pod) metav1.Time {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.LastTransitionTime
		}
	}
	return metav1.Time{}
}

// namespaceDeleted deletes the test namespace with its running pods: the namespace controller
// deletes its objects, the kubelets confirm the pods' deletion, and the namespace goes.
func (c *clusterCheck) namespaceDeleted(t *testing.T) {
	ctx := context.Background()
	if err := c.client.CoreV1().Namespaces().Delete(ctx, c.ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.wait(t, "namespace "+c.ns+" gone", func() (bool, string, error) {
		ns, err := c.client.CoreV1().Namespaces().Get(ctx, c.ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		} else if err != nil {
			return false, "", err
		}
		pods, err := c.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("phase %s, conditions %v, %d pods left", ns.Status.Phase, ns.Status.Conditions, len(pods.Items)), nil
	})
}
