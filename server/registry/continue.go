package registry

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/storage"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// continueTokenVersion is the version of the token format; kube-apiserver's tokens carry the same.
const continueTokenVersion = "meta.k8s.io/v1"

// latestRevision in a token continues at the latest state: it is what the token in a 410 answer
// to a compacted continue carries, as in kube-apiserver.
const latestRevision = -1

// continueToken is the opaque state of a paged list: kube-apiserver's fields (v, rv, start) plus
// the list it belongs to, so that a token cannot continue another list.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	// Start is the last key returned: "namespace/name", or "name" for cluster-scoped types.
	Start     string `json:"start"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
}

// listScope is the list a continue token belongs to.
type listScope struct {
	resource   string
	namespace  string
	namespaced bool
}

func encodeContinue(scope listScope, rev int64, last sqlstore.Key) string {
	start := last.Name
	if scope.namespaced {
		start = last.Namespace + "/" + last.Name
	}
	data, _ := json.Marshal(continueToken{APIVersion: continueTokenVersion, Revision: rev, Start: start, Resource: scope.resource, Namespace: scope.namespace})
	return base64.RawURLEncoding.EncodeToString(data)
}

// decodeContinue checks a continue token against the list it is used on and returns its revision
// (latestRevision or a snapshot) and the key to continue after. Any problem is 400.
func decodeContinue(token string, scope listScope) (int64, sqlstore.Key, error) {
	rev, after, err := parseContinue(token, scope)
	if err != nil {
		return 0, sqlstore.Key{}, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
	}
	return rev, after, nil
}

func parseContinue(token string, scope listScope) (int64, sqlstore.Key, error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, sqlstore.Key{}, fmt.Errorf("%w: %v", storage.ErrGenericInvalidKey, err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, sqlstore.Key{}, fmt.Errorf("%w: %v", storage.ErrGenericInvalidKey, err)
	}
	switch {
	case c.APIVersion != continueTokenVersion:
		return 0, sqlstore.Key{}, fmt.Errorf("%w %v", storage.ErrUnrecognizedEncodedVersion, c.APIVersion)
	case c.Revision == 0 || c.Revision < latestRevision:
		return 0, sqlstore.Key{}, storage.ErrInvalidStartRV
	case c.Start == "":
		return 0, sqlstore.Key{}, storage.ErrEmptyStartKey
	case c.Resource != scope.resource || c.Namespace != scope.namespace:
		return 0, sqlstore.Key{}, fmt.Errorf("%w: the token belongs to another list", storage.ErrGenericInvalidKey)
	}
	after, err := startKey(c.Start, scope)
	return c.Revision, after, err
}

// startKey reads the last key a token returned.
func startKey(start string, scope listScope) (sqlstore.Key, error) {
	bad := fmt.Errorf("%w: %v", storage.ErrGenericInvalidKey, start)
	if !scope.namespaced {
		if strings.Contains(start, "/") {
			return sqlstore.Key{}, bad
		}
		return sqlstore.Key{Resource: scope.resource, Name: start}, nil
	}
	namespace, name, ok := strings.Cut(start, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return sqlstore.Key{}, bad
	}
	if scope.namespace != "" && namespace != scope.namespace {
		return sqlstore.Key{}, bad
	}
	return sqlstore.Key{Resource: scope.resource, Namespace: namespace, Name: name}, nil
}

// errContinueCompacted answers a continue token whose snapshot is compacted: 410, with a token
// that continues the same list at the latest state, as kube-apiserver answers.
func errContinueCompacted(scope listScope, after sqlstore.Key) error {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list.")
	err.ErrStatus.ListMeta.Continue = encodeContinue(scope, latestRevision, after)
	return err
}
