// Package continuetoken makes and reads the continue tokens of paged lists, as kube-apiserver's
// storage words them (meta.k8s.io/v1 tokens, 400 for a bad one, 410 with a token to go on at
// the latest state for a compacted one), bound to the list they belong to.
package continuetoken

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/storage"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// tokenVersion is the version of the token format; kube-apiserver's tokens carry the same.
const tokenVersion = "meta.k8s.io/v1"

// Latest in a token continues at the latest state: it is what the token in a 410 answer
// to a compacted continue carries, as in kube-apiserver.
const Latest = -1

// tokenContent is the opaque state of a paged list: kube-apiserver's fields (v, rv, start) plus
// the list it belongs to, so that a token cannot continue another list.
type tokenContent struct {
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

// Point is where a paged list goes on: after a key, at a snapshot revision or
// Latest, knowing how many keys follow it there (0 when unknown).
type Point struct {
	Revision  int64
	After     sqlstore.Key
	Remaining int64
}

// Scope is the list a continue token belongs to.
type Scope struct {
	Resource   string // the storage name
	Namespace  string // empty for all namespaces
	Namespaced bool
}

// Encode is the token that continues scope's list at at.
func Encode(scope Scope, at Point) string {
	start := at.After.Name
	if scope.Namespaced {
		start = at.After.Namespace + "/" + at.After.Name
	}
	data, _ := json.Marshal(tokenContent{APIVersion: tokenVersion, Revision: at.Revision, Start: start,
		Resource: scope.Resource, Namespace: scope.Namespace, Remaining: max(at.Remaining, 0)})
	return base64.RawURLEncoding.EncodeToString(data)
}

// Decode checks a continue token against the list it is used on and returns where it
// continues. Any problem is 400.
func Decode(token string, scope Scope) (Point, error) {
	at, err := parse(token, scope)
	if err != nil {
		return Point{}, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
	}
	return at, nil
}

func parse(token string, scope Scope) (Point, error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return Point{}, fmt.Errorf("%w: %v", storage.ErrGenericInvalidKey, err)
	}
	var c tokenContent
	if err := json.Unmarshal(data, &c); err != nil {
		return Point{}, fmt.Errorf("%w: %v", storage.ErrGenericInvalidKey, err)
	}
	switch {
	case c.APIVersion != tokenVersion:
		return Point{}, fmt.Errorf("%w %v", storage.ErrUnrecognizedEncodedVersion, c.APIVersion)
	case c.Revision == 0 || c.Revision < Latest:
		return Point{}, storage.ErrInvalidStartRV
	case c.Start == "":
		return Point{}, storage.ErrEmptyStartKey
	case c.Resource != scope.Resource || c.Namespace != scope.Namespace:
		return Point{}, fmt.Errorf("%w: the token belongs to another list", storage.ErrGenericInvalidKey)
	case c.Remaining < 0:
		return Point{}, fmt.Errorf("%w: negative remaining count", storage.ErrGenericInvalidKey)
	}
	after, err := startKey(c.Start, scope)
	if c.Revision == Latest {
		c.Remaining = 0 // the latest state moves: a count from another page does not hold there
	}
	return Point{Revision: c.Revision, After: after, Remaining: c.Remaining}, err
}

// startKey reads the last key a token returned.
func startKey(start string, scope Scope) (sqlstore.Key, error) {
	bad := fmt.Errorf("%w: %v", storage.ErrGenericInvalidKey, start)
	if !scope.Namespaced {
		if strings.Contains(start, "/") {
			return sqlstore.Key{}, bad
		}
		return sqlstore.Key{Resource: scope.Resource, Name: start}, nil
	}
	namespace, name, ok := strings.Cut(start, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return sqlstore.Key{}, bad
	}
	if scope.Namespace != "" && namespace != scope.Namespace {
		return sqlstore.Key{}, bad
	}
	return sqlstore.Key{Resource: scope.Resource, Namespace: namespace, Name: name}, nil
}

// ErrCompacted answers a continue token whose snapshot is compacted: 410, with a token
// that continues the same list at the latest state, as kube-apiserver answers.
func ErrCompacted(scope Scope, after sqlstore.Key) error {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list.")
	err.ErrStatus.ListMeta.Continue = Encode(scope, Point{Revision: Latest, After: after})
	return err
}
