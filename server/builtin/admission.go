package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	restclient "k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install" // its defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingwebhookconfiguration"
	fieldpath "sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sqlkube/sqlkube/server/resource"
)

// AdmissionGroup is the group of the admission configuration types: policies, their bindings
// and webhook configurations, which the server's admission chain follows.
const AdmissionGroup = admissionregistrationv1.GroupName

// validatingPolicies is where ValidatingAdmissionPolicies are stored.
const validatingPolicies = "validatingadmissionpolicies." + AdmissionGroup

// admissionResources are the admissionregistration.k8s.io/v1 types, served with kube's own
// rules (kube). The strategies of the policies and their bindings authorize what a write refers
// to (a policy's paramKind, a binding's paramRef) as kube-apiserver's do, asking access (see
// paramAuthorizing).
func admissionResources(access *Access) []*resource.Resource {
	vaps := validatingadmissionpolicy.NewStrategy(access, access)
	return []*resource.Resource{
		builtin(AdmissionGroup, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, verbsAll, kube[admissionregistrationv1.ValidatingWebhookConfiguration](kubeRules{
			strategy: validatingwebhookconfiguration.Strategy,
		}), apiExtension),
		builtin(AdmissionGroup, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, verbsAll, kube[admissionregistrationv1.MutatingWebhookConfiguration](kubeRules{
			strategy: mutatingwebhookconfiguration.Strategy,
		}), apiExtension),
		builtin(AdmissionGroup, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, verbsAll, kube[admissionregistrationv1.ValidatingAdmissionPolicy](kubeRules{
			strategy: paramAuthorizing{vaps, validatingadmissionpolicy.NewStrategy(nil, access), access},
			status:   validatingadmissionpolicy.NewStatusStrategy(vaps),
		}), describe(withStatus, apiExtension)),
		builtin(AdmissionGroup, "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, verbsAll, kube[admissionregistrationv1.ValidatingAdmissionPolicyBinding](kubeRules{
			strategy: paramAuthorizing{validatingadmissionpolicybinding.NewStrategy(access, access, access),
				validatingadmissionpolicybinding.NewStrategy(nil, access, access), access},
		}), apiExtension),
		builtin(AdmissionGroup, "v1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", false, verbsAll, kube[admissionregistrationv1.MutatingAdmissionPolicy](kubeRules{
			strategy: paramAuthorizing{mutatingadmissionpolicy.NewStrategy(access, access), mutatingadmissionpolicy.NewStrategy(nil, access), access},
		}), apiExtension),
		builtin(AdmissionGroup, "v1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", false, verbsAll, kube[admissionregistrationv1.MutatingAdmissionPolicyBinding](kubeRules{
			strategy: paramAuthorizing{mutatingadmissionpolicybinding.NewStrategy(access, access, access),
				mutatingadmissionpolicybinding.NewStrategy(nil, access, access), access},
		}), apiExtension),
	}
}

// paramAuthorizing is kube's strategy of an admission policy or binding, which authorizes the
// writer's access to the policy's params with the server's authorizer (Access), once the
// server has bound it, for the writes a user makes: the server's own writes (no user) and the
// writes before the binding get kube's strategy without an authorizer (which authorizes none).
type paramAuthorizing struct {
	kubeStrategy
	// unauthorized is the same strategy without an authorizer.
	unauthorized kubeStrategy
	access       *Access
}

func (s paramAuthorizing) authorizing(ctx context.Context) kubeStrategy {
	if _, ok := genericrequest.UserFrom(ctx); ok && s.access.bound.Load() != nil {
		return s.kubeStrategy
	}
	return s.unauthorized
}

func (s paramAuthorizing) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return s.authorizing(ctx).Validate(ctx, obj)
}

func (s paramAuthorizing) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return s.authorizing(ctx).ValidateUpdate(ctx, obj, old)
}

// GetResetFields are those of kube's strategy, if it has any (rest.ResetFieldsStrategy).
func (s paramAuthorizing) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	if resets, ok := s.kubeStrategy.(rest.ResetFieldsStrategy); ok {
		return resets.GetResetFields()
	}
	return nil
}

// Resolve is the resource of kind gvk as the server's discovery lists it (kube's resolver of a
// policy's paramKind, resolver.ResourceResolver), asked through the server's loopback client.
func (a *Access) Resolve(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	url := path.Join("/apis", gvk.Group, gvk.Version)
	if gvk.Group == "" {
		url = path.Join("/api", gvk.Version)
	}
	var list metav1.APIResourceList
	if err := a.loopbackGet(context.Background(), url, &list); err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return gvk.GroupVersion().WithResource(r.Name), nil
		}
	}
	return schema.GroupVersionResource{}, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
}

// GetValidatingAdmissionPolicy and GetMutatingAdmissionPolicy read the policy a binding names
// (kube's PolicyGetter of the bindings' strategies), through the server's loopback client.
func (a *Access) GetValidatingAdmissionPolicy(ctx context.Context, name string) (*admissionregistration.ValidatingAdmissionPolicy, error) {
	policy := &admissionregistration.ValidatingAdmissionPolicy{}
	return policy, a.getPolicy(ctx, "validatingadmissionpolicies", name, &admissionregistrationv1.ValidatingAdmissionPolicy{}, policy)
}

func (a *Access) GetMutatingAdmissionPolicy(ctx context.Context, name string) (*admissionregistration.MutatingAdmissionPolicy, error) {
	policy := &admissionregistration.MutatingAdmissionPolicy{}
	return policy, a.getPolicy(ctx, "mutatingadmissionpolicies", name, &admissionregistrationv1.MutatingAdmissionPolicy{}, policy)
}

func (a *Access) getPolicy(ctx context.Context, resource, name string, versioned, internal runtime.Object) error {
	if err := a.loopbackGet(ctx, path.Join("/apis", AdmissionGroup, "v1", resource, name), versioned); err != nil {
		return err
	}
	return legacyscheme.Scheme.Convert(versioned, internal, nil)
}

// loopbackGet reads the JSON at url into into with the server's loopback client: the REST
// client under the namespace client Bind was given.
func (a *Access) loopbackGet(ctx context.Context, url string, into any) error {
	bound := a.bound.Load()
	if bound == nil {
		return errUnbound
	}
	client, ok := bound.namespaces.(interface{ GetClient() restclient.Interface })
	if !ok {
		return fmt.Errorf("reading %s: the namespace client bound has no REST client", url)
	}
	data, err := client.GetClient().Get().AbsPath(url).Do(ctx).Raw()
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}
