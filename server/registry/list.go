package registry

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/storage"

	"github.com/sqlkube/sqlkube/server/registry/continuetoken"
	"github.com/sqlkube/sqlkube/server/registry/selection"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// listPlan is which snapshot a list reads and where it starts.
type listPlan struct {
	// revision is the exact snapshot to read; 0 reads the latest state.
	revision int64
	// minRevision is the revision the latest state must have reached (not older than).
	minRevision int64
	// after continues a paged list after this key.
	after     sqlstore.Key
	continued bool
	// knownRemaining is how many keys follow after at revision, when the page before counted
	// them; 0 when unknown.
	knownRemaining int64
}

// planList gives resourceVersion, resourceVersionMatch, limit and continue the meaning of
// kube-apiserver's resourceVersion table: unset is the latest state; "0" any (we serve the
// latest); N not-older-than, except with a limit and no match, and with match=Exact, where it is
// exactly N; a continue token reads its own snapshot.
func planList(opts *internalversion.ListOptions, scope continuetoken.Scope) (listPlan, error) {
	if opts.Continue != "" {
		return planContinue(opts, scope)
	}
	rv, err := ParseResourceVersion(opts.ResourceVersion)
	if err != nil || rv == 0 {
		return listPlan{}, err
	}
	switch opts.ResourceVersionMatch {
	case metav1.ResourceVersionMatchExact:
		return listPlan{revision: rv, minRevision: rv}, nil
	case metav1.ResourceVersionMatchNotOlderThan:
		return listPlan{minRevision: rv}, nil
	}
	if opts.Limit > 0 {
		return listPlan{revision: rv, minRevision: rv}, nil
	}
	return listPlan{minRevision: rv}, nil
}

func planContinue(opts *internalversion.ListOptions, scope continuetoken.Scope) (listPlan, error) {
	at, err := continuetoken.Decode(opts.Continue, scope)
	if err != nil {
		return listPlan{}, err
	}
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return listPlan{}, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	plan := listPlan{after: at.After, continued: true, knownRemaining: at.Remaining}
	if at.Revision != continuetoken.Latest {
		plan.revision = at.Revision
	}
	return plan, nil
}

// listError maps a storage error of a list: a continue token whose snapshot is compacted gets
// a token to go on with at the latest state.
func listError(err error, ref Ref, scope continuetoken.Scope, plan listPlan) error {
	var compacted *sqlstore.CompactedError
	if plan.continued && errors.As(err, &compacted) {
		return continuetoken.ErrCompacted(scope, plan.after)
	}
	if plan.continued && errors.Is(err, sqlstore.ErrUnstorableKey) {
		// A token of ours never names such a key: the client made this one.
		return apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", storage.ErrGenericInvalidKey))
	}
	return storedobj.ListStorageError(err, ref.Resource)
}

// newSelection checks a list's or watch's selectors against what res supports; a custom
// resource's selectable fields are read from its objects as served.
func newSelection(res *resource.Resource, opts *internalversion.ListOptions) (*selection.Selection, error) {
	return selection.New(res, opts, func(value []byte) (*unstructured.Unstructured, error) { return storedobj.DecodeServed(res, value) })
}
