// Package services is what kube-apiserver itself does for Services, with kube's own code:
// cluster IPs allocated as networking.k8s.io/v1 IPAddress objects within the ServiceCIDRs (the
// default one, "kubernetes", made from --service-cluster-ip-range), node ports allocated from
// --service-node-port-range in a bitmap kept in the database, both released on delete; and the
// default/kubernetes Service with its Endpoints and EndpointSlice pointing at the server.
//
// Several replicas on one database allocate safely: an IPAddress is taken by creating it (the
// store's create fails for all but one), the node port bitmap is written by compare-and-swap.
package services

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/controlplane/controller/defaultservicecidr"
	"k8s.io/kubernetes/pkg/controlplane/controller/kubernetesservice"
	"k8s.io/kubernetes/pkg/controlplane/reconcilers"
	"k8s.io/kubernetes/pkg/registry/core/service/allocator"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	"k8s.io/kubernetes/pkg/registry/core/service/portallocator"
	netutils "k8s.io/utils/net"

	"github.com/sqlkube/sqlkube/server/resource"
)

// Options are kube-apiserver's service flags.
type Options struct {
	// ClusterIPRanges are --service-cluster-ip-range: one CIDR, or two of different IP
	// families for dual-stack, the primary first. Empty means kube's default, 10.0.0.0/24.
	ClusterIPRanges []*net.IPNet
	// NodePortRange is --service-node-port-range; zero means kube's default, 30000-32767.
	NodePortRange utilnet.PortRange
	// AdvertiseAddress is the IP the kubernetes Service's Endpoints and EndpointSlice point at
	// (--advertise-address); nil when the server has none, then they are not written.
	AdvertiseAddress net.IP
	// Port is the port the server serves on: the kubernetes Service's target port.
	Port int
	// NoEndpointReconciler keeps no lease and leaves the kubernetes Service's endpoints alone
	// (--endpoint-reconciler-type=none), as kube-apiserver does with it.
	NoEndpointReconciler bool
	// ClientCA is the CA this server mints client certificates with (its --cert-dir's, PEM);
	// nil when it mints none. Replicas must share one (CheckSharedCA).
	ClientCA []byte
}

// DefaultClusterIPRange is kube-apiserver's --service-cluster-ip-range when unset.
var DefaultClusterIPRange = &net.IPNet{IP: net.IPv4(10, 0, 0, 0).To4(), Mask: net.CIDRMask(24, 32)}

// DefaultNodePortRange is kube-apiserver's --service-node-port-range when unset.
var DefaultNodePortRange = utilnet.PortRange{Base: 30000, Size: 2768}

// Services is the services' allocation, installed on the services resource.
type Services struct {
	opts    Options
	leases  *storedLeases // the replicas', in the store
	primary *ipallocator.MetaAllocator
	// ready is set once the primary allocator has a ServiceCIDR to allocate from.
	ready atomic.Bool
}

// Install binds (with bind) the services resource's Allocations: kube's service storage hooks
// on cluster IP allocators that follow the ServiceCIDR and IPAddress objects through factory
// (which the caller starts) and write IPAddresses through client, and a node port allocator
// kept in store. Allocation stops when ctx ends.
func Install(ctx context.Context, services *resource.Resource, bind func(resource.Allocations), store Storage, client kubernetes.Interface, factory informers.SharedInformerFactory, opts Options) (*Services, error) {
	opts = withDefaults(opts)
	ips := map[api.IPFamily]ipallocator.Interface{}
	var primary *ipallocator.MetaAllocator
	for _, cidr := range opts.ClusterIPRanges {
		alloc, err := ipallocator.NewMetaAllocator(client.NetworkingV1(), factory.Networking().V1().ServiceCIDRs(),
			factory.Networking().V1().IPAddresses(), netutils.IsIPv6CIDR(cidr), nil)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, alloc.Destroy)
		if primary == nil {
			primary = alloc
		}
		ips[alloc.IPFamily()] = alloc
	}
	ports, err := portallocator.New(opts.NodePortRange, func(max int, rangeSpec string, offset int) (allocator.Interface, error) {
		return &storedRange{store: store, key: nodePortsKey, bitmap: allocator.NewAllocationMapWithOffset(max, rangeSpec, offset)}, nil
	})
	if err != nil {
		return nil, err
	}
	hooks, err := newAllocations(services, primary.IPFamily(), ips, ports)
	if err != nil {
		return nil, err
	}
	bind(hooks)
	// Not ctx: this replica's lease is removed after ctx has ended.
	leases := &storedLeases{ctx: context.WithoutCancel(ctx), store: store, now: time.Now, ca: CAFingerprint(opts.ClientCA)}
	return &Services{opts: opts, leases: leases, primary: primary}, nil
}

func withDefaults(opts Options) Options {
	if len(opts.ClusterIPRanges) == 0 {
		opts.ClusterIPRanges = []*net.IPNet{DefaultClusterIPRange}
	}
	if opts.NodePortRange.Size == 0 {
		opts.NodePortRange = DefaultNodePortRange
	}
	return opts
}

// Ready tells whether cluster IPs can be allocated: the primary range's ServiceCIDR has been
// seen. kube-apiserver's start-service-ip-repair-controllers hook waits for the same.
func (s *Services) Ready() bool {
	if !s.ready.Load() && s.primary.Free() > 0 {
		s.ready.Store(true)
	}
	return s.ready.Load()
}

// endpointInterval is how often kube-apiserver reconciles the kubernetes Service and its
// endpoints (--endpoint-reconciler's interval).
const endpointInterval = 10 * time.Second

// RunDefaultObjects runs, until ctx ends, kube-apiserver's controllers of the default
// ServiceCIDR (named "kubernetes", the --service-cluster-ip-range) and of the
// default/kubernetes Service (port 443 to the server's port, the first IP of the primary
// range) with its Endpoints and EndpointSlice. They write through client, once the server
// answers it.
//
// The endpoints are kube's lease reconciler's (kube-apiserver's default): each replica renews a
// lease on its AdvertiseAddress in the database every endpointInterval, and the endpoints list
// the address of every replica whose lease has not expired (storedLeases).
//
// The function it answers removes this replica's lease, as kube-apiserver's pre-shutdown hook
// does: call it when shutdown begins, while the store is open, so that the other replicas
// drop this address at their next reconcile and the next start finds nothing stale.
func (s *Services) RunDefaultObjects(ctx context.Context, client kubernetes.Interface) (removeLease func()) {
	var secondary net.IPNet
	if len(s.opts.ClusterIPRanges) > 1 {
		secondary = *s.opts.ClusterIPRanges[1]
	}
	go defaultservicecidr.NewController(*s.opts.ClusterIPRanges[0], secondary, client).Start(ctx)

	endpoints := reconcilers.NewNoneEndpointReconciler()
	if s.opts.AdvertiseAddress != nil && !s.opts.NoEndpointReconciler {
		endpoints = reconcilers.NewLeaseEndpointReconciler(reconcilers.NewEndpointsAdapter(client.CoreV1(), client.DiscoveryV1()), s.leases)
	}
	// The controller reads default/kubernetes alone: its informer holds no other Service.
	onlyKubernetesService := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(metav1.NamespaceDefault),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", "kubernetes").String()
		}))
	serviceIP, err := netutils.GetIndexedIP(s.opts.ClusterIPRanges[0], 1)
	if err != nil {
		return func() {} // cannot happen: a range has a first address
	}
	kubernetesService := kubernetesservice.New(kubernetesservice.Config{
		PublicIP:           s.opts.AdvertiseAddress,
		EndpointReconciler: endpoints,
		EndpointInterval:   endpointInterval,
		ServiceIP:          serviceIP,
		ServicePort:        443,
		PublicServicePort:  s.opts.Port,
	}, client, onlyKubernetesService.Core().V1().Services())
	onlyKubernetesService.Start(ctx.Done())
	go kubernetesService.Start(ctx.Done())
	return func() {
		endpoints.StopReconciling()
		// It waits for a reconcile in flight, removes the lease, then rewrites the endpoints
		// without this replica, as kube-apiserver's pre-shutdown hook does: the in-process client
		// still serves until the server has stopped serving (app.Serve).
		_ = endpoints.RemoveEndpoints("kubernetes", s.opts.AdvertiseAddress, []corev1.EndpointPort{{Name: "https", Port: int32(s.opts.Port), Protocol: corev1.ProtocolTCP}})
	}
}

// CheckSharedCA refuses to start beside a live replica whose client CA differs from this
// one's (storedLeases.checkSharedCA).
func (s *Services) CheckSharedCA() error { return s.leases.checkSharedCA() }

// AdvertiseAddress is the address kube-apiserver would advertise when serving on host
// (--advertise-address unset): host itself unless it is unspecified or loopback, else the
// address of the host's default interface.
func AdvertiseAddress(host string) (net.IP, error) {
	ip := net.ParseIP(host)
	resolved, err := utilnet.ResolveBindAddress(ip)
	if err != nil {
		return nil, fmt.Errorf("choosing the address to advertise: %w", err)
	}
	return resolved, nil
}
