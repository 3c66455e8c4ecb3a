package auth

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	api "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
)

// configCodecs decode kube's apiserver.config.k8s.io files, strictly: a misspelt field is an
// error at start rather than a silently ignored setting.
var configCodecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict)
}()

// LoadAuthenticationConfig reads and validates an AuthenticationConfiguration file
// (--authentication-config) as kube-apiserver does. disallowedIssuers are issuers no JWT
// authenticator may claim: the ServiceAccount issuer.
func LoadAuthenticationConfig(path string, disallowedIssuers []string) (*api.AuthenticationConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.Decode(configCodecs.UniversalDecoder(), data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg, ok := obj.(*api.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s: a %T, want an AuthenticationConfiguration", path, obj)
	}
	if errs := validation.ValidateAuthenticationConfiguration(authenticationcel.NewDefaultCompiler(), cfg, disallowedIssuers); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", path, errs.ToAggregate())
	}
	return cfg, nil
}

// JWTAuthenticators builds a token authenticator per JWT issuer of cfg. They fetch the issuers'
// keys over HTTPS in the background until ctx ends; a token arriving before an issuer's keys
// are known is refused.
func JWTAuthenticators(ctx context.Context, cfg *api.AuthenticationConfiguration, disallowedIssuers []string) ([]authenticator.Token, error) {
	compiler := authenticationcel.NewDefaultCompiler()
	var tokens []authenticator.Token
	for _, jwt := range cfg.JWT {
		opts := oidc.Options{JWTAuthenticator: jwt, Compiler: compiler, DisallowedIssuers: disallowedIssuers,
			SupportedSigningAlgs: supportedSigningAlgs}
		if ca := jwt.Issuer.CertificateAuthority; ca != "" {
			content, err := dynamiccertificates.NewStaticCAContent("oidc-authenticator", []byte(ca))
			if err != nil {
				return nil, fmt.Errorf("issuer %s: certificateAuthority: %w", jwt.Issuer.URL, err)
			}
			opts.CAContentProvider = content
		}
		auth, err := oidc.New(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("issuer %s: %w", jwt.Issuer.URL, err)
		}
		tokens = append(tokens, auth)
	}
	return tokens, nil
}

// supportedSigningAlgs are the algorithms kube-apiserver accepts from JWT issuers by default.
var supportedSigningAlgs = []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512"}
