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
	// Remaining is how many keys follow Start at Revision, as the page that issued the token
	// counted them (omitted when it did not): the next page derives its remainingItemCount from
	// it instead of counting the rest of the collection again, which at a million objects was
	// most of a page's cost.
	Remaining int64 `json:"remaining,omitempty"`
}

// continuePoint is where a paged list goes on: after a key, at a snapshot revision or
// latestRevision, knowing how many keys follow it there (0 when unknown).
type continuePoint struct {
	revision  int64
	after     sqlstore.Key
	remaining int64
}

// listScope is the list a continue token belongs to.
type listScope struct {
	resource   string
	namespace  string
	namespaced bool
}

func encodeContinue(scope listScope, at continuePoint) string {
	start := at.after.Name
	if scope.namespaced {
		start = at.after.Namespace + "/" + at.after.Name
	}
	data, _ := json.Marshal(continueToken{APIVersion: continueTokenVersion, Revision: at.revision, Start: start,
		Resource: scope.resource, Namespace: scope.namespace, Remaining: max(at.remaining, 0)})
	return base64.RawURLEncoding.EncodeToString(data)
}

// decodeContinue checks a continue token against the list it is used on and returns where it
// continues. Any problem is 400.
func decodeContinue(token string, scope listScope) (continuePoint, error) {
	at, err := parseContinue(token, scope)
	if err != nil {
		return continuePoint{}, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
	}
	return at, nil
}

func parseContinue(token string, scope listScope) (continuePoint, error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return continuePoint{}, fmt.Errorf("%w: %v", storage.ErrGenericInvalidKey, err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return continuePoint{}, fmt.Errorf("%w: %v", storage.ErrGenericInvalidKey, err)
	}
	switch {
	case c.APIVersion != continueTokenVersion:
		return continuePoint{}, fmt.Errorf("%w %v", storage.ErrUnrecognizedEncodedVersion, c.APIVersion)
	case c.Revision == 0 || c.Revision < latestRevision:
		return continuePoint{}, storage.ErrInvalidStartRV
	case c.Start == "":
		return continuePoint{}, storage.ErrEmptyStartKey
	case c.Resource != scope.resource || c.Namespace != scope.namespace:
		return continuePoint{}, fmt.Errorf("%w: the token belongs to another list", storage.ErrGenericInvalidKey)
	case c.Remaining < 0:
		return continuePoint{}, fmt.Errorf("%w: negative remaining count", storage.ErrGenericInvalidKey)
	}
	after, err := startKey(c.Start, scope)
	if c.Revision == latestRevision {
		c.Remaining = 0 // the latest state moves: a count from another page does not hold there
	}
	return continuePoint{revision: c.Revision, after: after, remaining: c.Remaining}, err
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
	err.ErrStatus.ListMeta.Continue = encodeContinue(scope, continuePoint{revision: latestRevision, after: after})
	return err
}
