package app

import (
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/spf13/pflag"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	netutils "k8s.io/utils/net"

	"github.com/sqlkube/sqlkube/server/services"
)

// servicesConfig is kube-apiserver's service flags, as given.
type servicesConfig struct {
	ClusterIPRange         string
	NodePortRange          string
	AdvertiseAddress       string
	EndpointReconcilerType string
}

func addServicesFlags(fs *pflag.FlagSet, c *servicesConfig) {
	fs.StringVar(&c.ClusterIPRange, "service-cluster-ip-range", "",
		"CIDR range Services' cluster IPs are allocated from, or two of different IP families for dual-stack (CIDR,CIDR); empty is kube-apiserver's default, "+services.DefaultClusterIPRange.String())
	fs.StringVar(&c.NodePortRange, "service-node-port-range", services.DefaultNodePortRange.String(),
		"port range reserved for Services of type NodePort or LoadBalancer (inclusive at both ends)")
	fs.StringVar(&c.AdvertiseAddress, "advertise-address", "",
		"IP address the default/kubernetes Service's endpoints point at; empty is the --listen address, or the host's default interface's when that is unspecified or loopback")
	fs.StringVar(&c.EndpointReconcilerType, "endpoint-reconciler-type", endpointReconcilerLease,
		`how the default/kubernetes Service's endpoints are kept: "lease" (each replica renews a lease; the endpoints list the live ones) or "none" (not kept)`)
}

// The --endpoint-reconciler-type values sqlkube runs: kube-apiserver's default and none.
// kube's deprecated "master-count" is refused.
const (
	endpointReconcilerLease = "lease"
	endpointReconcilerNone  = "none"
)

// options reads the flags, for a server listening on listen; without an address to advertise,
// the kubernetes Service gets no endpoints (logged).
func (c servicesConfig) options(listen net.Addr, log *slog.Logger) (services.Options, error) {
	var opts services.Options
	if c.ClusterIPRange != "" {
		cidrs, err := netutils.ParseCIDRs(strings.Split(c.ClusterIPRange, ","))
		if err != nil {
			return opts, fmt.Errorf("--service-cluster-ip-range: %w", err)
		}
		if dual, _ := netutils.IsDualStackCIDRs(cidrs); len(cidrs) > 2 || len(cidrs) == 2 && !dual {
			return opts, fmt.Errorf("--service-cluster-ip-range: %q must be one CIDR, or two of different IP families", c.ClusterIPRange)
		}
		opts.ClusterIPRanges = cidrs
	}
	ports, err := utilnet.ParsePortRange(c.NodePortRange)
	if err != nil {
		return opts, fmt.Errorf("--service-node-port-range: %w", err)
	}
	opts.NodePortRange = *ports
	switch c.EndpointReconcilerType {
	case "", endpointReconcilerLease:
	case endpointReconcilerNone:
		opts.NoEndpointReconciler = true
	default:
		return opts, fmt.Errorf(`--endpoint-reconciler-type: %q is not supported: use "lease" or "none"`, c.EndpointReconcilerType)
	}
	tcp, _ := listen.(*net.TCPAddr)
	if tcp == nil {
		return opts, fmt.Errorf("listening on %s, not TCP", listen)
	}
	opts.Port = tcp.Port
	if c.AdvertiseAddress != "" {
		if opts.AdvertiseAddress = net.ParseIP(c.AdvertiseAddress); opts.AdvertiseAddress == nil {
			return opts, fmt.Errorf("--advertise-address: %q is not an IP address", c.AdvertiseAddress)
		}
		return opts, nil
	}
	if opts.AdvertiseAddress, err = services.AdvertiseAddress(tcp.IP.String()); err != nil {
		log.Warn("the default/kubernetes Service gets no endpoints", "err", err)
	}
	return opts, nil
}
