package builtin

import (
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/registry/apiservice"
	apiserviceetcd "k8s.io/kube-aggregator/pkg/registry/apiservice/etcd"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/sqlkube/sqlkube/server/resource"
)

// APIRegistrationGroup is the group of APIServices.
const APIRegistrationGroup = "apiregistration.k8s.io"

// kube-aggregator's types, defaults and conversions join legacyscheme.Scheme, where the kube
// adapter converts every built-in.
func init() { install.Install(legacyscheme.Scheme) }

// apiRegistrationResources are the apiregistration.k8s.io/v1 types kube-apiserver v1.37 serves
// by default (its aggregator's), with kube-aggregator's own rules and table: APIServices, with
// /status. A local APIService (no service) is Available from its create on, as kube-aggregator's
// strategy marks it; sqlkube proxies to no aggregated API server, so nothing checks the others.
func apiRegistrationResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(APIRegistrationGroup, "v1", "apiservices", "APIService", false, verbsAll, kube[apiregistrationv1.APIService](kubeRules{
			strategy: apiservice.NewStrategy(legacyscheme.Scheme), status: apiservice.NewStatusStrategy(legacyscheme.Scheme),
			internalTable: &apiserviceetcd.REST{},
		}), describe(withStatus, apiExtension)),
	}
}
