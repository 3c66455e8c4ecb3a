package server

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/sqlkube/sqlkube/server/registry"
)

// serveProxy answers a request, with any method, to an object's /proxy subresource: the
// object's answer (resource.Resource.Proxy). Its name may carry a scheme and a port
// ("https:web:443"), as kube-apiserver's proxy reads it.
func (s *Server) serveProxy(_ http.ResponseWriter, r *http.Request, req *request) error {
	scheme, name, port, valid := utilnet.SplitSchemeNamePort(req.name)
	if !valid {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid %s request %q", req.res.SingularName, req.name))
	}
	ref := registry.Ref{Resource: req.res, Namespace: req.namespace, Name: name}
	stored, err := s.api.Registry.Get(r.Context(), ref, &metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj, err := registry.DecodeServed(req.res, stored.Value)
	if err != nil {
		return err
	}
	return req.res.Proxy(r.Context(), obj, scheme, port)
}
