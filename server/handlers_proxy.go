package server

import (
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/sqlkube/sqlkube/server/registry"
)

// serveProxy answers a Service's /proxy as kube-apiserver answers it when no endpoint backs the
// Service, which is always so here: nothing runs Pods for an endpoint to point at. As there,
// the name may carry a scheme and a port ("https:web:443"), and a port number is looked up in
// the Service's ports first.
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request, req *request) error {
	_, name, port, valid := utilnet.SplitSchemeNamePort(req.name)
	if !valid {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", req.name))
	}
	if number, err := strconv.ParseInt(port, 10, 64); err == nil {
		ref := req.ref()
		ref.Name, ref.Subresource = name, ""
		obj, err := s.api.Registry.Get(r.Context(), ref, &metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !servesPort(obj.Value, number) {
			return apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", number, name))
		}
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
}

// servesPort tells whether the stored Service value lists port among its ports.
func servesPort(value []byte, port int64) bool {
	var svc struct {
		Spec struct {
			Ports []struct {
				Port int64 `json:"port"`
			} `json:"ports"`
		} `json:"spec"`
	}
	if registry.UnmarshalStored(value, &svc) != nil {
		return false
	}
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return true
		}
	}
	return false
}
