package server

import (
	"context"
	"crypto"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sqlkube/sqlkube/server/registry"
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

const (
	defaultTokenExpiration = time.Hour
	minTokenExpiration     = 10 * time.Minute
)

// tokenIssuing is the TokenRequest endpoint's state.
type tokenIssuing struct {
	issuer    *serviceaccount.Issuer
	audiences []string // the default audiences of a token: the API's
	max       time.Duration
	docs      *serviceaccount.DiscoveryDocs
}

// newTokenIssuing sets up the issuer and the verifier, which it adds to authn.
func (s *Server) newServiceAccountTokens(sa *ServiceAccounts, audiences []string) (*tokenIssuing, *serviceaccount.Verifier, error) {
	issuer, err := serviceaccount.NewIssuer(sa.Issuer, sa.SigningKey)
	if err != nil {
		return nil, nil, err
	}
	docs, err := serviceaccount.NewDiscoveryDocs(sa.Issuer, sa.JWKSURI, sa.PublicKeys)
	if err != nil {
		return nil, nil, err
	}
	return &tokenIssuing{issuer: issuer, audiences: audiences, max: sa.MaxExpiration, docs: docs},
		serviceaccount.NewVerifier(sa.Issuer, sa.PublicKeys, uidLookup{s}), nil
}

// routeServiceAccountTokens adds TokenRequest and the issuer discovery documents.
func (s *Server) routeServiceAccountTokens(m *mux.Router) {
	if s.tokens == nil {
		return
	}
	m.Path("/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token").HandlerFunc(s.review("serviceaccounts", s.tokenRequest))
	m.Path("/.well-known/openid-configuration").HandlerFunc(s.onlyGet(serveBytes(s.tokens.docs.OpenIDConfiguration, "application/json")))
	m.Path(serviceaccount.JWKSPath).HandlerFunc(s.onlyGet(serveBytes(s.tokens.docs.JWKS, "application/jwk-set+json")))
}

func serveBytes(body []byte, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}
}

// tokenRequest mints a token for a ServiceAccount, as POST .../serviceaccounts/NAME/token does.
func (s *Server) tokenRequest(r *http.Request, body []byte) (any, error) {
	tr := &authenticationv1.TokenRequest{}
	if err := decodeReview(body, tr); err != nil {
		return nil, err
	}
	vars := mux.Vars(r)
	namespace, name := vars["namespace"], vars["name"]
	if err := s.validateTokenRequest(name, tr); err != nil {
		return nil, err
	}
	saUID, err := s.objectUID(r.Context(), "serviceaccounts", namespace, name)
	if err != nil {
		return nil, err
	}
	req := serviceaccount.Request{Namespace: namespace, ServiceAccount: serviceaccount.Ref{Name: name, UID: saUID},
		Audiences: tr.Spec.Audiences, Expiry: time.Duration(*tr.Spec.ExpirationSeconds) * time.Second}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		if req.Secret, err = s.boundSecret(r.Context(), namespace, name, ref); err != nil {
			return nil, err
		}
	}
	token, expires, err := s.tokens.issuer.Issue(req)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	tr.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(expires)}
	tr.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: namespace, CreationTimestamp: metav1.Now()}
	tr.SetGroupVersionKind(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"))
	return tr, nil
}

// validateTokenRequest defaults the audiences and lifetime, and refuses a lifetime under ten
// minutes, as kube does; a lifetime over the maximum is shortened to it.
func (s *Server) validateTokenRequest(name string, tr *authenticationv1.TokenRequest) error {
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = s.tokens.audiences
	}
	if tr.Spec.ExpirationSeconds == nil {
		seconds := int64(defaultTokenExpiration / time.Second)
		tr.Spec.ExpirationSeconds = &seconds
	}
	if seconds := *tr.Spec.ExpirationSeconds; time.Duration(seconds)*time.Second < minTokenExpiration {
		return apierrors.NewInvalid(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest").GroupKind(), name,
			field.ErrorList{field.Invalid(field.NewPath("spec", "expirationSeconds"), seconds, "may not specify a duration less than 10 minutes")})
	}
	if s.tokens.max > 0 && time.Duration(*tr.Spec.ExpirationSeconds)*time.Second > s.tokens.max {
		seconds := int64(s.tokens.max / time.Second)
		tr.Spec.ExpirationSeconds = &seconds
	}
	return nil
}

// boundSecret is the Secret a token is bound to; other kinds are refused, since sqlkube serves
// no Pods or Nodes.
func (s *Server) boundSecret(ctx context.Context, namespace, saName string, ref *authenticationv1.BoundObjectReference) (*serviceaccount.Ref, error) {
	if ref.Kind != "Secret" || (ref.APIVersion != "" && ref.APIVersion != "v1") {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to object of type %s", saName, ref.APIVersion+", Kind="+ref.Kind))
	}
	uid, err := s.objectUID(ctx, "secrets", namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	if ref.UID != "" && string(ref.UID) != uid {
		return nil, apierrors.NewConflict(corev1.Resource("secrets"), ref.Name, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return &serviceaccount.Ref{Name: ref.Name, UID: uid}, nil
}

// objectUID reads the uid of a core/v1 object, or its NotFound.
func (s *Server) objectUID(ctx context.Context, resource, namespace, name string) (string, error) {
	res, ok := s.catalog.Lookup("", "v1", resource)
	if !ok {
		return "", apierrors.NewNotFound(corev1.Resource(resource), name)
	}
	stored, err := s.registry.Get(ctx, registry.Ref{Resource: res, Namespace: namespace, Name: name}, &metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var meta registry.MetadataOnly
	if err := registry.UnmarshalStored(stored.Value, &meta); err != nil {
		return "", err
	}
	return string(meta.Metadata.UID), nil
}

// uidLookup lets the token verifier check that the objects a token names still exist.
type uidLookup struct{ s *Server }

func (l uidLookup) UID(ctx context.Context, resource, namespace, name string) (string, error) {
	return l.s.objectUID(ctx, resource, namespace, name)
}
