package builtin

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install" // certificates' defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/certificates/certificates"

	"github.com/sqlkube/sqlkube/server/resource"
)

// CertificatesGroup is the group of CertificateSigningRequests.
const CertificatesGroup = "certificates.k8s.io"

// certificatesResources are the certificates.k8s.io/v1 types kube-apiserver v1.37 serves by
// default, with its own rules (kube): CertificateSigningRequests, with /status (where a signer
// writes the certificate) and /approval (where conditions approve or deny it). Nothing signs
// them.
func certificatesResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(CertificatesGroup, "v1", "certificatesigningrequests", "CertificateSigningRequest", false, verbsAll, kube[certificatesv1.CertificateSigningRequest](kubeRules{
			strategy: certificates.Strategy, status: certificates.StatusStrategy, approval: certificates.ApprovalStrategy,
			fields: map[string][]string{"spec.signerName": {"spec", "signerName"}},
		}), describe(shortName("csr"), withStatus, func(r *resource.Resource) {
			r.Subresources = []resource.Subresource{{Name: "approval", Kind: "CertificateSigningRequest", Verbs: []string{"get", "patch", "update"},
				Strategy: r.Strategy.(*kubeTypeStrategy).subresourceStrategy(certificates.ApprovalStrategy)}}
		})),
	}
}
