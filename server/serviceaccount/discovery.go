package serviceaccount

import (
	"crypto"
	"encoding/json"
	"strings"
)

// DiscoveryDocs are the issuer discovery documents kube-apiserver serves, so that systems
// outside the cluster can verify ServiceAccount tokens: /.well-known/openid-configuration and
// the key set it points at, /openid/v1/jwks.
type DiscoveryDocs struct {
	OpenIDConfiguration []byte
	JWKS                []byte
}

// JWKSPath is where the key set is served.
const JWKSPath = "/openid/v1/jwks"

// NewDiscoveryDocs builds the documents for issuer and keys; jwksURI is where clients fetch the
// keys (default: the issuer's JWKSPath).
func NewDiscoveryDocs(issuer, jwksURI string, keys []crypto.PublicKey) (*DiscoveryDocs, error) {
	if jwksURI == "" {
		jwksURI = strings.TrimSuffix(issuer, "/") + JWKSPath
	}
	set, err := keySet(keys)
	if err != nil {
		return nil, err
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	var algs []string
	for _, k := range set.Keys {
		algs = append(algs, k.Algorithm)
	}
	config, err := json.Marshal(map[string]any{
		"issuer":                                issuer,
		"jwks_uri":                              jwksURI,
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": algs,
	})
	return &DiscoveryDocs{OpenIDConfiguration: config, JWKS: jwks}, err
}
