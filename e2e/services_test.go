package e2e

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

// TestServices: Services through kubectl, as on kube-apiserver: cluster IPs from the default
// range (10.0.0.0/24) recorded as IPAddress objects, node ports from 30000-32767, a taken IP
// refused with kube's 422, both released on delete and on a type change; the
// default/kubernetes Service and its endpoints point at the server; cluster-info works.
func TestServices(t *testing.T) {
	forEachServerWith(t, []string{"--advertise-address=192.0.2.10"}, func(t *testing.T, s *sqlkubeServer) {
		out := s.mustKubectl(t, "", "cluster-info")
		if !strings.HasPrefix(out, "Kubernetes control plane is running at "+s.URL()) {
			t.Errorf("cluster-info printed %q", out)
		}
		checkKubernetesService(t, s)

		s.mustKubectl(t, "", "create", "deployment", "web", "--image=nginx:1.27")
		if out := s.mustKubectl(t, "", "expose", "deployment", "web", "--port=80", "--type=NodePort"); out != "service/web exposed\n" {
			t.Errorf("expose printed %q", out)
		}
		services := s.clientset().CoreV1().Services("default")
		web, err := services.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip := net.ParseIP(web.Spec.ClusterIP)
		nodePort := web.Spec.Ports[0].NodePort
		if _, cidr, _ := net.ParseCIDR("10.0.0.0/24"); ip == nil || !cidr.Contains(ip) || nodePort < 30000 || nodePort > 32767 {
			t.Fatalf("web got cluster IP %q and node port %d", web.Spec.ClusterIP, nodePort)
		}
		if web.Spec.IPFamilyPolicy == nil || *web.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack ||
			len(web.Spec.IPFamilies) != 1 || web.Spec.IPFamilies[0] != corev1.IPv4Protocol ||
			web.Spec.SessionAffinity != corev1.ServiceAffinityNone || web.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
			t.Errorf("web's defaults: %+v", web.Spec)
		}
		address, err := s.clientset().NetworkingV1().IPAddresses().Get(ctx, web.Spec.ClusterIP, metav1.GetOptions{})
		if err != nil || address.Spec.ParentRef == nil || address.Spec.ParentRef.Name != "web" || address.Spec.ParentRef.Resource != "services" {
			t.Fatalf("the IPAddress of web: %+v, %v", address, err)
		}

		s.mustKubectl(t, "", "create", "service", "clusterip", "fixed", "--tcp=80:8080", "--clusterip=10.0.0.5")
		_, err = services.Create(ctx, clusterIPService("taken", "10.0.0.5"), metav1.CreateOptions{})
		want := `Service "taken" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.5"]: failed to allocate IP 10.0.0.5: provided IP is already allocated`
		if !apierrors.IsInvalid(err) || err.Error() != want {
			t.Errorf("create with a taken IP: %v, want 422 %q", err, want)
		}
		s.mustKubectl(t, "", "delete", "service", "fixed")
		if _, err := services.Create(ctx, clusterIPService("taken", "10.0.0.5"), metav1.CreateOptions{}); err != nil {
			t.Errorf("the IP of a deleted Service is not free again: %v", err)
		}

		// A type change to ClusterIP gives the node port back, as a delete does.
		s.mustKubectl(t, "", "patch", "service", "web", "-p", `{"spec":{"type":"ClusterIP","ports":[{"port":80,"targetPort":80,"nodePort":null}]}}`)
		reused := nodePortService("reused", nodePort)
		if _, err := services.Create(ctx, reused, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the node port of a Service that changed type is not free again: %v", err)
		}
		_, err = services.Create(ctx, nodePortService("again", nodePort), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), fmt.Sprintf("spec.ports[0].nodePort: Invalid value: %d: provided port is already allocated", nodePort)) {
			t.Errorf("create with a taken node port: %v", err)
		}
		s.mustKubectl(t, "", "delete", "service", "reused", "web")
		if _, err := s.clientset().NetworkingV1().IPAddresses().Get(ctx, web.Spec.ClusterIP, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the IPAddress of deleted web: %v, want NotFound", err)
		}
		if _, err := services.Create(ctx, nodePortService("again", nodePort), metav1.CreateOptions{}); err != nil {
			t.Errorf("the node port of a deleted Service is not free again: %v", err)
		}

		_, err = s.kubectl(t, "", "get", "--raw", "/api/v1/namespaces/default/services/again/proxy/")
		if err == nil || !strings.Contains(err.Error(), `Error from server (ServiceUnavailable): no endpoints available for service "again"`) {
			t.Errorf("proxy: %v", err)
		}
	})
}

// checkKubernetesService: default/kubernetes is kube-apiserver's, with the first IP of the
// range, port 443 to the server's port, and Endpoints and an EndpointSlice at the advertised
// address.
func checkKubernetesService(t *testing.T, s *sqlkubeServer) {
	t.Helper()
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	client := s.clientset()
	var svc *corev1.Service
	eventually(t, 10*time.Second, "the kubernetes Service", func() (bool, error) {
		svc, err = client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil, err
	})
	if svc.Spec.ClusterIP != "10.0.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 ||
		svc.Spec.Ports[0].TargetPort != intstr.FromInt32(int32(port)) || svc.Labels["component"] != "apiserver" || svc.Labels["provider"] != "kubernetes" {
		t.Errorf("the kubernetes Service: %+v %+v", svc.Labels, svc.Spec)
	}
	eventually(t, 10*time.Second, "the kubernetes EndpointSlice", func() (bool, error) {
		slice, err := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(slice.Endpoints) == 1 && slice.Endpoints[0].Addresses[0] == "192.0.2.10" &&
			len(slice.Ports) == 1 && *slice.Ports[0].Port == int32(port), fmt.Errorf("slice %+v", slice)
	})
	endpoints, err := client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(endpoints.Subsets) != 1 || endpoints.Subsets[0].Addresses[0].IP != "192.0.2.10" {
		t.Errorf("the kubernetes Endpoints: %+v, %v", endpoints, err)
	}
}

func clusterIPService(name, ip string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}},
	}}
}

func nodePortService(name string, nodePort int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: nodePort}},
	}}
}

// TestServiceAllocationAcrossReplicas: two replicas on one PostgreSQL database create
// NodePort Services concurrently from a small range; every create succeeds and no cluster IP or
// node port is handed out twice.
func TestServiceAllocationAcrossReplicas(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	flags := []string{"--service-cluster-ip-range=10.1.0.0/26", "--service-node-port-range=31000-31100"}
	replicas := []*sqlkubeServer{startServer(t, dsn, flags...), startServer(t, dsn, flags...)}
	const perReplica = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*perReplica)
	for r, s := range replicas {
		services := s.clientset().CoreV1().Services("default")
		for i := range perReplica {
			wg.Go(func() {
				svc := nodePortService(fmt.Sprintf("svc-%d-%d", r, i), 0)
				if _, err := services.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("create: %v", err)
	}
	list, err := replicas[0].clientset().CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ips, ports := map[string]string{}, map[int32]string{}
	for _, svc := range list.Items {
		if other, taken := ips[svc.Spec.ClusterIP]; taken {
			t.Errorf("%s and %s both have cluster IP %s", other, svc.Name, svc.Spec.ClusterIP)
		}
		ips[svc.Spec.ClusterIP] = svc.Name
		for _, p := range svc.Spec.Ports {
			if p.NodePort == 0 {
				continue
			}
			if other, taken := ports[p.NodePort]; taken {
				t.Errorf("%s and %s both have node port %d", other, svc.Name, p.NodePort)
			}
			ports[p.NodePort] = svc.Name
		}
	}
	if len(list.Items) != 2*perReplica+1 || len(ports) != 2*perReplica {
		t.Errorf("%d Services, %d node ports; want %d and %d", len(list.Items), len(ports), 2*perReplica+1, 2*perReplica)
	}
	addresses, err := replicas[1].clientset().NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{})
	if err != nil || len(addresses.Items) != len(list.Items) {
		t.Errorf("%d IPAddresses for %d Services (%v)", len(addresses.Items), len(list.Items), err)
	}
}

// TestKubernetesServiceListsEveryReplica: the default/kubernetes Service's endpoints hold the
// advertised address of every live replica (kube's lease reconciler), a replica that stops is
// dropped from them, and one that starts again after a clean stop logs no error (kube's "Found
// stale data" is for an unclean exit).
func TestKubernetesServiceListsEveryReplica(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	a := startServer(t, dsn, "--advertise-address=192.0.2.10")
	b := startServer(t, dsn, "--advertise-address=192.0.2.11")
	waitForKubernetesEndpoints(t, a, "192.0.2.10", "192.0.2.11")
	b.stop()
	waitForKubernetesEndpoints(t, a, "192.0.2.10")
	b.restart()
	waitForKubernetesEndpoints(t, b, "192.0.2.10", "192.0.2.11")
	for name, s := range map[string]*sqlkubeServer{"first": a, "second": b} {
		if line := firstErrorLine(s.log.String()); line != "" {
			t.Errorf("the %s replica logged an error: %s", name, line)
		}
	}
}

// TestReplicaWithAnotherCAIsRefused: a replica started on a database a live replica serves,
// with another certificate directory (so another CA), exits with a clear error rather than mint
// credentials the other refuses.
func TestReplicaWithAnotherCAIsRefused(t *testing.T) {
	dsn := sqltest.PostgresDSN(t)
	s := startServer(t, dsn, "--advertise-address=192.0.2.10")
	waitForKubernetesEndpoints(t, s, "192.0.2.10") // its lease, naming its CA, is written
	code, out := runToExit(t, nil, "--listen=127.0.0.1:0", "--db="+dsn, "--cert-dir="+t.TempDir(), "--advertise-address=192.0.2.11")
	if want := "the replica serving this database at 192.0.2.10 mints client certificates with another CA"; code == 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, output:\n%s\nwant a non-zero exit mentioning %q", code, out, want)
	}
	createNamespace(t, s.clientset(), "still-served")
}

// waitForKubernetesEndpoints waits until the kubernetes Endpoints and EndpointSlice list
// exactly addresses.
func waitForKubernetesEndpoints(t *testing.T, s *sqlkubeServer, addresses ...string) {
	t.Helper()
	client := s.clientset()
	eventually(t, 30*time.Second, fmt.Sprintf("the kubernetes endpoints %v", addresses), func() (bool, error) {
		endpoints, err := client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var listed []string
		for _, subset := range endpoints.Subsets {
			for _, address := range subset.Addresses {
				listed = append(listed, address.IP)
			}
		}
		slice, err := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var sliced []string
		for _, endpoint := range slice.Endpoints {
			sliced = append(sliced, endpoint.Addresses...)
		}
		slices.Sort(listed)
		slices.Sort(sliced)
		return slices.Equal(listed, addresses) && slices.Equal(sliced, addresses), fmt.Errorf("endpoints %v, slice %v", listed, sliced)
	})
}

// firstErrorLine is the first line of a server's log at level ERROR, or "".
func firstErrorLine(log string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=ERROR") {
			return line
		}
	}
	return ""
}
