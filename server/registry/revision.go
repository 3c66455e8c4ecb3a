package registry

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
)

// revisionPollInterval is how often a read waiting for a revision checks the store again.
const revisionPollInterval = 20 * time.Millisecond

func revisionString(rev int64) string { return strconv.FormatInt(rev, 10) }

// parseResourceVersion reads a resourceVersion parameter; "" and "0" are 0. Anything that is not
// a revision is 400, worded as kube-apiserver words it.
func ParseResourceVersion(rv string) (int64, error) {
	v, err := storage.APIObjectVersioner{}.ParseResourceVersion(rv)
	if err == nil && v > math.MaxInt64 {
		err = fmt.Errorf("resource version %s is out of range", rv)
	}
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	return int64(v), nil
}

// waitForRevision returns once the store has reached rev. A revision the store does not reach
// within RevisionWait is 504 "Too large resource version", with the Retry-After kube-apiserver
// sends.
func (r *Registry) WaitForRevision(ctx context.Context, rev int64) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RevisionWait)
	defer cancel()
	ticker := time.NewTicker(revisionPollInterval)
	defer ticker.Stop()
	var current int64
	for {
		latest, err := r.store.CurrentRevision(ctx)
		switch {
		case err == nil:
			current = latest
		case ctx.Err() == nil:
			return storedobj.StorageError(err, schema.GroupResource{}, "")
		}
		if current >= rev {
			return nil
		}
		select {
		case <-ctx.Done():
			return storage.NewTooLargeResourceVersionError(uint64(rev), uint64(current), 1)
		case <-ticker.C:
		}
	}
}
