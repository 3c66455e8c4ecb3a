package builtin

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install" // certificates' defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/certificates/certificates"
	"k8s.io/kubernetes/pkg/registry/certificates/clustertrustbundle"
	"k8s.io/kubernetes/pkg/registry/certificates/podcertificaterequest"
	"k8s.io/utils/clock"

	"github.com/sqlkube/sqlkube/server/resource"
)

// CertificatesGroup is the group of CertificateSigningRequests.
const CertificatesGroup = "certificates.k8s.io"

// certificatesResources are the certificates.k8s.io/v1 types kube-apiserver v1.37 serves by
// default, with its own rules (kube): CertificateSigningRequests, with /status (where a signer
// writes the certificate) and /approval (where conditions approve or deny it),
// ClusterTrustBundles, and PodCertificateRequests, whose /status only a signer's "sign"
// permission writes (authz decides it, as kube-apiserver's authorizer does). Nothing signs them.
func certificatesResources(authz authorizer.UnconditionalAuthorizer) []*resource.Resource {
	pcrs := podcertificaterequest.NewStrategy()
	return []*resource.Resource{
		builtin(CertificatesGroup, "v1", "certificatesigningrequests", "CertificateSigningRequest", false, verbsAll, kube[certificatesv1.CertificateSigningRequest](kubeRules{
			strategy: certificates.Strategy, status: certificates.StatusStrategy, approval: certificates.ApprovalStrategy,
			fields: map[string][]string{"spec.signerName": {"spec", "signerName"}},
		}), describe(shortName("csr"), withStatus, func(r *resource.Resource) {
			r.Subresources = []resource.Subresource{{Name: "approval", Kind: "CertificateSigningRequest", Verbs: []string{"get", "patch", "update"},
				Strategy: r.Strategy.(*kubeTypeStrategy).subresourceStrategy(certificates.ApprovalStrategy)}}
		})),
		builtin(CertificatesGroup, "v1", "clustertrustbundles", "ClusterTrustBundle", false, verbsAll, kube[certificatesv1.ClusterTrustBundle](kubeRules{
			strategy: clustertrustbundle.Strategy, fields: map[string][]string{"spec.signerName": {"spec", "signerName"}},
		}), hashedAs("v1beta1")),
		builtin(CertificatesGroup, "v1", "podcertificaterequests", "PodCertificateRequest", true, verbsAll, kube[certificatesv1.PodCertificateRequest](kubeRules{
			strategy: pcrs, status: podcertificaterequest.NewStatusStrategy(pcrs, authz, clock.RealClock{}),
			fields: map[string][]string{
				"spec.signerName": {"spec", "signerName"}, "spec.podName": {"spec", "podName"}, "spec.nodeName": {"spec", "nodeName"},
			},
		}), describe(withStatus, hashedAs("v1beta1"))),
	}
}
