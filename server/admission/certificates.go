package admission

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/certificates"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/registry"
)

// certificatePlugins are kube-apiserver's default admission plugins of CertificateSigningRequests,
// deciding with authz: CertificateApproval (an /approval write needs the approve verb on the
// request's signer), CertificateSigning (a /status write that changes the certificate or
// conditions needs sign) and CertificateSubjectRestriction (no kube-apiserver-client request
// for the system:masters group).
func certificatePlugins(authz authorizer.Authorizer) []kubeadmission.ValidationInterface {
	approve, sign := approval.NewPlugin(), signing.NewPlugin()
	approve.SetUnconditionalAuthorizer(authz)
	sign.SetUnconditionalAuthorizer(authz)
	return []kubeadmission.ValidationInterface{approve, sign, subjectrestriction.NewPlugin()}
}

// validateCertificates runs the certificate plugins on a write of a CertificateSigningRequest,
// once the chain has started (they need the authorizer), with the objects as the internal
// type they read.
func (c *Chain) validateCertificates(ctx context.Context, req *registry.AdmissionRequest) error {
	plugins := c.certificates.Load()
	if plugins == nil || req.Resource.Group != builtin.CertificatesGroup || req.Resource.Name != "certificatesigningrequests" {
		return nil
	}
	obj, err := internalCSR(req.Object)
	if err != nil {
		return err
	}
	old, err := internalCSR(req.OldObject)
	if err != nil {
		return err
	}
	u, _ := genericrequest.UserFrom(ctx)
	attrs := kubeadmission.NewAttributesRecord(obj, old, req.Kind, req.Namespace, req.Name,
		req.Resource.GroupResource().WithVersion(req.Resource.Version), req.Subresource, req.Operation, req.Options, req.DryRun, u)
	for _, plugin := range *plugins {
		if !plugin.Handles(attrs.GetOperation()) {
			continue
		}
		if err := plugin.Validate(ctx, attrs, c.objects); err != nil {
			return err
		}
	}
	return nil
}

// internalCSR is a CertificateSigningRequest as kube's internal type, nil for none.
func internalCSR(obj *unstructured.Unstructured) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	versioned := &certificatesv1.CertificateSigningRequest{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, versioned); err != nil {
		return nil, fmt.Errorf("converting CertificateSigningRequest %q: %w", obj.GetName(), err)
	}
	internal := &certificates.CertificateSigningRequest{}
	if err := legacyscheme.Scheme.Convert(versioned, internal, nil); err != nil {
		return nil, fmt.Errorf("converting CertificateSigningRequest %q: %w", obj.GetName(), err)
	}
	return internal, nil
}
