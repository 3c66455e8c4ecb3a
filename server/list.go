package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
}

// planList gives resourceVersion, resourceVersionMatch, limit and continue the meaning of
// kube-apiserver's resourceVersion table: unset is the latest state; "0" any (we serve the
// latest); N not-older-than, except with a limit and no match, and with match=Exact, where it is
// exactly N; a continue token reads its own snapshot.
func planList(opts *internalversion.ListOptions, scope listScope) (listPlan, error) {
	if opts.Continue != "" {
		return planContinue(opts, scope)
	}
	rv, err := parseResourceVersion(opts.ResourceVersion)
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

func planContinue(opts *internalversion.ListOptions, scope listScope) (listPlan, error) {
	rev, after, err := decodeContinue(opts.Continue, scope)
	if err != nil {
		return listPlan{}, err
	}
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return listPlan{}, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	plan := listPlan{after: after, continued: true}
	if rev != latestRevision {
		plan.revision = rev
	}
	return plan, nil
}

// parseCollectionRequest does what every request on a collection (list, deletecollection)
// starts with: negotiate the answer's format, then read the list options and their selectors.
func parseCollectionRequest(r *http.Request, req *request) (output, *internalversion.ListOptions, *selection, error) {
	out, err := negotiateOutput(r, true)
	if err != nil {
		return out, nil, nil, err
	}
	opts, err := parseListOptions(r)
	if err != nil {
		return out, nil, nil, err
	}
	sel, err := newSelection(req.res, opts)
	return out, opts, sel, err
}

// serveList answers GET on a collection, streaming the objects from storage to the client.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, req *request) error {
	out, opts, sel, err := parseCollectionRequest(r, req)
	if err != nil {
		return err
	}
	scope := listScope{resource: req.res.StorageName, namespace: req.namespace, namespaced: req.res.Namespaced}
	if scope.namespace == "" && req.res.Namespaced {
		scope.namespace = sel.namespace() // cheaper in storage than as a filter
	}
	plan, err := planList(opts, scope)
	if err != nil {
		return err
	}
	if plan.minRevision > 0 {
		if err := s.waitForRevision(r.Context(), plan.minRevision); err != nil {
			return err
		}
	}
	lw, err := s.newListWriter(w, r, req, out)
	if err != nil {
		return err
	}
	storeOpts := sqlstore.ListOptions{Resource: scope.resource, Namespace: scope.namespace, Revision: plan.revision, After: plan.after}
	if opts.Limit > 0 {
		storeOpts.Limit = opts.Limit
	}
	if !sel.empty() {
		storeOpts.Filter = sel.filter()
	}
	result, err := s.store.List(r.Context(), storeOpts, lw.item)
	if err != nil {
		return lw.fail(listError(err, req, scope, plan))
	}
	meta := metav1.ListMeta{ResourceVersion: revisionString(result.Revision)}
	if result.More {
		meta.Continue = encodeContinue(scope, result.Revision, lw.last)
		if sel.empty() && result.Remaining >= 0 {
			meta.RemainingItemCount = &result.Remaining
		}
	}
	return lw.finish(meta)
}

// listError maps a storage error of a list: a continue token whose snapshot is compacted gets
// a token to go on with at the latest state.
func listError(err error, req *request, scope listScope, plan listPlan) error {
	var compacted *sqlstore.CompactedError
	if plan.continued && errors.As(err, &compacted) {
		return errContinueCompacted(scope, plan.after)
	}
	return storageError(err, req.gr, "")
}

// listWriter streams a list response: the opening (kind, apiVersion, and for a Table its
// columns) with the first item or at the end, each item as storage delivers it, then the list
// metadata. The response is compressed past kube-apiserver's threshold when the client accepts
// gzip. YAML is the exception: it is converted from the whole JSON at the end.
type listWriter struct {
	out     output
	resp    *deferredResponse
	dst     io.Writer
	yamlBuf *bytes.Buffer
	opening []byte
	started bool
	items   int
	last    sqlstore.Key
	res     *Resource
	// encode turns an object as served into its list item.
	encode func(value []byte) ([]byte, error)
}

func (s *Server) newListWriter(w http.ResponseWriter, r *http.Request, req *request, out output) (*listWriter, error) {
	lw := &listWriter{out: out, resp: newDeferredResponse(w, r, out.contentType()), res: req.res}
	lw.dst = lw.resp
	if out.yaml {
		lw.yamlBuf = &bytes.Buffer{}
		lw.dst = lw.yamlBuf
	}
	metaAPIVersion := metav1.GroupName + "/" + out.metaVersion
	switch out.view {
	case viewObject:
		lw.opening = listOpening(req.res.ListKind, req.res.APIVersion(), "items", nil)
		lw.encode = func(value []byte) ([]byte, error) { return value, nil }
		if req.res.CRDName == "" {
			// kube-apiserver's lists of built-in types carry no type metadata on their items.
			var buf []byte // reused: each item is written out before the next is encoded
			lw.encode = func(value []byte) ([]byte, error) {
				buf = appendWithoutTypeMeta(buf[:0], value)
				return buf, nil
			}
		}
	case viewPartial:
		lw.opening = listOpening("PartialObjectMetadataList", metaAPIVersion, "items", nil)
		lw.encode = func(value []byte) ([]byte, error) { return partialMetadataJSON(value, out.metaVersion) }
	case viewTable:
		tc, err := s.newTableConverter(r, req, out.metaVersion)
		if err != nil {
			return nil, err
		}
		columns, _ := json.Marshal(tc.columns)
		lw.opening = listOpening("Table", metaAPIVersion, "rows", columns)
		lw.encode = func(value []byte) ([]byte, error) {
			row, _, err := tc.row(r.Context(), value)
			if err != nil {
				return nil, err
			}
			return json.Marshal(row)
		}
	}
	return lw, nil
}

// listOpening is `{"kind":K,"apiVersion":V,["columnDefinitions":C,]"ITEMS":[`.
func listOpening(kind, apiVersion, itemsField string, columns []byte) []byte {
	var b bytes.Buffer
	k, _ := json.Marshal(kind)
	v, _ := json.Marshal(apiVersion)
	b.WriteString(`{"kind":`)
	b.Write(k)
	b.WriteString(`,"apiVersion":`)
	b.Write(v)
	if columns != nil {
		b.WriteString(`,"columnDefinitions":`)
		b.Write(columns)
	}
	b.WriteString(`,"` + itemsField + `":[`)
	return b.Bytes()
}

func (lw *listWriter) start() {
	if lw.started {
		return
	}
	lw.started = true
	_, _ = lw.dst.Write(lw.opening)
}

// item writes one object; it is the callback storage streams the list into.
func (lw *listWriter) item(o sqlstore.Object) error {
	value, err := servedJSON(lw.res, o.Value)
	if err != nil {
		return err
	}
	data, err := lw.encode(value)
	if err != nil {
		return err
	}
	lw.start()
	if lw.items > 0 {
		if _, err := lw.dst.Write([]byte{','}); err != nil {
			return err
		}
	}
	lw.items++
	lw.last = o.Key
	_, err = lw.dst.Write(data)
	return err
}

// finish closes the list with its metadata.
func (lw *listWriter) finish(meta metav1.ListMeta) error {
	lw.start()
	m, _ := json.Marshal(meta)
	_, _ = lw.dst.Write([]byte(`],"metadata":`))
	_, _ = lw.dst.Write(m)
	_, _ = lw.dst.Write([]byte{'}'})
	if lw.yamlBuf != nil {
		_, _ = lw.resp.Write(inEncoding(lw.out, lw.yamlBuf.Bytes()))
	}
	return lw.resp.Close()
}

// fail reports err if nothing was sent yet. Once part of the list is on the wire the status
// cannot change: the connection is aborted so that the client sees a broken response, never a
// short list that looks complete.
func (lw *listWriter) fail(err error) error {
	if lw.resp.sent() {
		panic(http.ErrAbortHandler)
	}
	return err
}
