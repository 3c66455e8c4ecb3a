package server

import (
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// serveDeleteCollection answers DELETE on a namespace's collection (or a cluster-scoped one):
// every object the list options select is deleted as a single delete would delete it, and the
// answer is the list of what was deleted (or marked for deletion), as kube-apiserver answers.
func (s *Server) serveDeleteCollection(w http.ResponseWriter, r *http.Request, req *request) error {
	out, _, sel, err := parseCollectionRequest(r, req)
	if err != nil {
		return err
	}
	deleteOpts, err := s.decodeDeleteOptions(r)
	if err != nil {
		return err
	}
	keys, err := s.selectedKeys(r, req, sel)
	if err != nil {
		return err
	}
	lw, err := s.newListWriter(w, r, req, out)
	if err != nil {
		return err
	}
	for _, key := range keys {
		one := *req
		one.namespace, one.name, one.dryRun = key.Namespace, key.Name, len(deleteOpts.DryRun) > 0
		stored, _, err := s.delete(r.Context(), &one, deleteOpts)
		if apierrors.IsNotFound(err) {
			continue // deleted meanwhile
		}
		if err == nil {
			err = lw.item(stored)
		}
		if err != nil {
			return lw.fail(err)
		}
	}
	return lw.finish(metav1.ListMeta{})
}

// selectedKeys lists the keys of the objects sel selects in the request's collection.
func (s *Server) selectedKeys(r *http.Request, req *request, sel *selection) ([]sqlstore.Key, error) {
	opts := sqlstore.ListOptions{Resource: req.res.StorageName, Namespace: req.namespace}
	if !sel.empty() {
		opts.Filter = sel.filter()
	}
	var keys []sqlstore.Key
	_, err := s.store.List(r.Context(), opts, func(o sqlstore.Object) error {
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		return nil, storageError(err, req.gr, "")
	}
	return keys, nil
}

// allowsDeleteCollection reports whether the type serves deletecollection (namespaces do not).
func allowsDeleteCollection(res *Resource) bool {
	return slices.Contains(res.Verbs, "deletecollection")
}
