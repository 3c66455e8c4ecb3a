// Package tokenrequest issues ServiceAccount tokens, as kube-apiserver's TokenRequest
// (POST .../serviceaccounts/NAME/token) does: it defaults and checks the request, finds the
// ServiceAccount and the object the token is bound to, and has the serviceaccount package's
// Issuer sign the token. The HTTP layer decodes the TokenRequest, calls Issuing.Issue and
// encodes the answer; errors are apimachinery Status errors.
package tokenrequest

import (
	"context"
	"crypto"
	"fmt"
	"time"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/server/reviews"

	"github.com/google/uuid"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/audit"
	authserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/token/jwt"

	"github.com/sqlkube/sqlkube/server/serviceaccount"
)

// ServiceAccounts is how ServiceAccount tokens are issued and verified (kube-apiserver's
// --service-account-* flags).
type ServiceAccounts struct {
	// Issuer is the tokens' iss claim and the issuer discovery documents' issuer.
	Issuer string
	// SigningKey signs the tokens TokenRequest mints.
	SigningKey crypto.Signer
	// PublicKeys verify tokens (the signing key's among them, and any older keys still valid).
	PublicKeys []crypto.PublicKey
	// JWKSURI is the key set's URL in the discovery document; "" for the issuer's own.
	JWKSURI string
	// MaxExpiration caps the lifetime a TokenRequest may ask for; 0 for no cap.
	MaxExpiration time.Duration
}

// Objects finds the objects a token names (its ServiceAccount, the Secret, Pod or Node it is
// bound to); Issuing owns this interface. *RegistryObjects implements it.
type Objects interface {
	// UID is the uid of the core/v1 object of resource ("serviceaccounts", "secrets" or
	// "nodes") in namespace ("" for nodes), or a NotFound Status error.
	UID(ctx context.Context, resource, namespace, name string) (string, error)
	// Pod is what a token bound to the Pod name in namespace needs of it, or a NotFound.
	Pod(ctx context.Context, namespace, name string) (Pod, error)
}

// Pod is what binding a token to a Pod reads of it.
type Pod struct {
	UID                string
	ServiceAccountName string // spec.serviceAccountName: only its ServiceAccount's tokens bind to it
	NodeName           string // spec.nodeName: a bound token names the Node too
}

const (
	defaultTokenExpiration = time.Hour
	minTokenExpiration     = 10 * time.Minute
)

// Issuing mints the tokens TokenRequest asks for, and holds the issuer's discovery documents.
type Issuing struct {
	issuer    *serviceaccount.Issuer
	audiences []string // the default audiences of a token: the API's
	max       time.Duration
	docs      *serviceaccount.DiscoveryDocs
	objects   Objects
}

// New issues tokens as sa says, for audiences when a request names none, naming the objects
// found in objects. It fails on a key the issuer cannot sign or publish with.
func New(sa *ServiceAccounts, audiences []string, objects Objects) (*Issuing, error) {
	issuer, err := serviceaccount.NewIssuer(sa.Issuer, sa.SigningKey)
	if err != nil {
		return nil, err
	}
	docs, err := serviceaccount.NewDiscoveryDocs(sa.Issuer, sa.JWKSURI, sa.PublicKeys)
	if err != nil {
		return nil, err
	}
	return &Issuing{issuer: issuer, audiences: audiences, max: sa.MaxExpiration, docs: docs, objects: objects}, nil
}

// Creater answers POST serviceaccounts/NAME/token with Issue, recording the managedFields
// kube-apiserver's create handler records for the TokenRequest posted.
func (i *Issuing) Creater() resource.Creater {
	return reviews.Answering("serviceaccounts", "token", true, i.Issue)
}

// Discovery is the issuer's OpenID discovery document and key set, which the HTTP layer serves.
func (i *Issuing) Discovery() *serviceaccount.DiscoveryDocs { return i.docs }

// Issue mints a token for the ServiceAccount name in namespace, and returns tr with the token
// and its expiry in its status: a NotFound for a ServiceAccount or bound Secret that does not
// exist, Invalid for a lifetime under ten minutes, BadRequest for a binding to anything but a
// Secret, Pod or Node or to a Pod of another ServiceAccount, Conflict for a request or bound Secret whose uid is not the one named. As kube's, the
// answer carries the ServiceAccount's uid.
func (i *Issuing) Issue(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if err := i.defaultAndValidate(name, tr); err != nil {
		return nil, err
	}
	saUID, err := i.objects.UID(ctx, "serviceaccounts", namespace, name)
	if err != nil {
		return nil, err
	}
	if tr.UID != "" && string(tr.UID) != saUID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: authenticationv1.GroupName, Resource: "TokenRequest"}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", tr.UID, saUID))
	}
	req := serviceaccount.Request{Namespace: namespace, ServiceAccount: serviceaccount.Ref{Name: name, UID: saUID},
		Audiences: tr.Spec.Audiences, Expiry: time.Duration(*tr.Spec.ExpirationSeconds) * time.Second, ID: uuid.NewString()}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		if err := i.bind(ctx, namespace, name, ref, &req); err != nil {
			return nil, err
		}
	}
	token, expires, err := i.issuer.Issue(req)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// As kube's TokenRequest storage, the audit event names the credential issued.
	audit.AddAuditAnnotation(ctx, authserviceaccount.IssuedCredentialIDAuditAnnotationKey, jwt.CredentialIDForJTI(req.ID))
	tr.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(expires)}
	tr.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(saUID), CreationTimestamp: metav1.Now()}
	tr.SetGroupVersionKind(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"))
	return tr, nil
}

// defaultAndValidate defaults the audiences and lifetime, and refuses a lifetime under ten
// minutes, as kube does; a lifetime over the maximum is shortened to it.
func (i *Issuing) defaultAndValidate(name string, tr *authenticationv1.TokenRequest) error {
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = i.audiences
	}
	if tr.Spec.ExpirationSeconds == nil {
		seconds := int64(defaultTokenExpiration / time.Second)
		tr.Spec.ExpirationSeconds = &seconds
	}
	if seconds := *tr.Spec.ExpirationSeconds; time.Duration(seconds)*time.Second < minTokenExpiration {
		return apierrors.NewInvalid(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest").GroupKind(), name,
			field.ErrorList{field.Invalid(field.NewPath("spec", "expirationSeconds"), seconds, "may not specify a duration less than 10 minutes")})
	}
	if i.max > 0 && time.Duration(*tr.Spec.ExpirationSeconds)*time.Second > i.max {
		seconds := int64(i.max / time.Second)
		tr.Spec.ExpirationSeconds = &seconds
	}
	return nil
}

// bind names in req the object ref binds the token to, as kube does: its kind is a core
// Secret, Pod or Node (the apiVersion's version is not checked), and its uid, if given, must
// be the object's.
func (i *Issuing) bind(ctx context.Context, namespace, saName string, ref *authenticationv1.BoundObjectReference, req *serviceaccount.Request) error {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var bound *serviceaccount.Ref
	var err error
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		bound, req.Node, err = i.boundPod(ctx, namespace, saName, ref.Name)
		req.Pod = bound
	case gvk.Group == "" && gvk.Kind == "Node":
		bound, err = i.boundRef(ctx, "nodes", "", ref.Name)
		req.Node = bound
	case gvk.Group == "" && gvk.Kind == "Secret":
		bound, err = i.boundRef(ctx, "secrets", namespace, ref.Name)
		req.Secret = bound
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if err != nil {
		return err
	}
	if ref.UID != "" && string(ref.UID) != bound.UID {
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return nil
}

func (i *Issuing) boundRef(ctx context.Context, resource, namespace, name string) (*serviceaccount.Ref, error) {
	uid, err := i.objects.UID(ctx, resource, namespace, name)
	if err != nil {
		return nil, err
	}
	return &serviceaccount.Ref{Name: name, UID: uid}, nil
}

// boundPod is the Pod a token is bound to and the Node it is scheduled to, if any. As kube, a
// missing Node is named without a uid.
func (i *Issuing) boundPod(ctx context.Context, namespace, saName, name string) (pod, node *serviceaccount.Ref, err error) {
	p, err := i.objects.Pod(ctx, namespace, name)
	if err != nil {
		return nil, nil, err
	}
	if p.ServiceAccountName != saName {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", saName))
	}
	pod = &serviceaccount.Ref{Name: name, UID: p.UID}
	if p.NodeName == "" {
		return pod, nil, nil
	}
	uid, err := i.objects.UID(ctx, "nodes", "", p.NodeName)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, apierrors.NewInternalError(err)
	}
	return pod, &serviceaccount.Ref{Name: p.NodeName, UID: uid}, nil
}
