package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/endpoints/wire"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/registry/views"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
)

// parseCollectionRequest does what every request on a collection (list, deletecollection)
// starts with: negotiate the answer's format, then read the list options.
func parseCollectionRequest(r *http.Request, req *request) (output, *internalversion.ListOptions, error) {
	out, err := negotiateOutput(r, req, true)
	if err != nil {
		return out, nil, err
	}
	opts, err := parseListOptions(r)
	return out, opts, err
}

// serveList answers GET on a collection, streaming the objects from storage to the client.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, req *request) error {
	lw, opts, err := s.startList(w, r, req)
	if err != nil {
		return err
	}
	defer lw.close()
	meta, err := s.api.Registry.List(r.Context(), req.ref(), opts, lw.item)
	if err == nil {
		err = lw.failures.Err()
	}
	if err != nil {
		return lw.fail(err)
	}
	return lw.finish(meta)
}

// startList reads a list request's options and output and starts its answer.
func (s *Server) startList(w http.ResponseWriter, r *http.Request, req *request) (*listWriter, *internalversion.ListOptions, error) {
	out, opts, err := parseCollectionRequest(r, req)
	if err != nil {
		return nil, nil, err
	}
	lw, err := s.newListWriter(w, r, req, out)
	return lw, opts, err
}

// listWriter streams a list response: the opening (kind, apiVersion, and for a Table its
// columns) with the first item or at the end, each item as storage delivers it, then the list
// metadata. The response is compressed past kube-apiserver's threshold when the client accepts
// gzip. YAML and protobuf are the exceptions: YAML is converted from the whole JSON at the end,
// and protobuf holds its encoded items until the list's length is known, at the end.
type listWriter struct {
	out  output
	resp *wire.DeferredResponse
	// dst is where the list's JSON goes: the response, a buffer for YAML, the audit copy; nil
	// when nobody reads it (a protobuf list that is not audited).
	dst     io.Writer
	yamlBuf *bytes.Buffer
	proto   *wire.ProtobufList
	opening []byte
	started bool
	items   int
	res     *resource.Resource
	// ctx and auditCopy record the whole list in the request's audit event, when the policy
	// asks for responses (auditCopy is nil otherwise).
	ctx       context.Context
	auditCopy *bytes.Buffer
	// encode turns an object, as stored and as served, into its list item's JSON with its kind
	// and apiVersion; withoutTypeMeta drops them from the JSON written, as kube-apiserver's
	// lists of built-in types carry none on their items.
	encode          func(stored, served []byte) ([]byte, error)
	withoutTypeMeta bool
	itemBuf         []byte // reused: each item is written out before the next is encoded
	// failures are the objects that could not be converted to the version listed: the list
	// goes on without them, then fails naming them all, as kube-apiserver's does.
	failures *storedobj.ListFailures
}

func (s *Server) newListWriter(w http.ResponseWriter, r *http.Request, req *request, out output) (*listWriter, error) {
	lw := &listWriter{out: out, resp: wire.NewDeferredResponse(w, r, http.StatusOK, out.contentType()), res: req.res, failures: storedobj.NewListFailures(req.res)}
	lw.ctx, lw.auditCopy = r.Context(), auditlog.ResponseCopy(r.Context())
	lw.setSinks()
	metaAPIVersion := metav1.GroupName + "/" + out.metaVersion
	switch out.view {
	case viewObject:
		lw.opening = listOpening(req.res.ListKind, req.res.APIVersion(), "items", nil)
		lw.encode = func(_, value []byte) ([]byte, error) { return value, nil }
		lw.withoutTypeMeta = req.res.CRDName == ""
	case viewPartial:
		lw.opening = listOpening("PartialObjectMetadataList", metaAPIVersion, "items", nil)
		lw.encode = func(_, value []byte) ([]byte, error) { return views.PartialMetadataJSON(value, out.metaVersion) }
	case viewTable:
		tc, err := newTable(r, req, out.metaVersion)
		if err != nil {
			return nil, err
		}
		columns, _ := json.Marshal(tc.Columns())
		lw.opening = listOpening("Table", metaAPIVersion, "rows", columns)
		lw.encode = func(stored, served []byte) ([]byte, error) {
			row, _, err := tc.Row(r.Context(), stored, served)
			if err != nil {
				return nil, err
			}
			return json.Marshal(row)
		}
	}
	if out.format == formatProtobuf {
		kind, apiVersion, itemKind := req.res.ListKind, req.res.APIVersion(), req.res.Kind
		if out.view == viewPartial {
			kind, apiVersion, itemKind = "PartialObjectMetadataList", metaAPIVersion, "PartialObjectMetadata"
		}
		var err error
		if lw.proto, err = wire.NewProtobufList(apiVersion, kind, itemKind); err != nil {
			return nil, err
		}
	}
	return lw, nil
}

// setSinks sets where the list's JSON goes (dst).
func (lw *listWriter) setSinks() {
	var sinks []io.Writer
	switch lw.out.format {
	case formatJSON:
		sinks = append(sinks, lw.resp)
	case formatYAML:
		lw.yamlBuf = &bytes.Buffer{}
		sinks = append(sinks, lw.yamlBuf)
	}
	if lw.auditCopy != nil {
		sinks = append(sinks, lw.auditCopy)
	}
	if len(sinks) > 0 {
		lw.dst = io.MultiWriter(sinks...)
	}
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
	lw.writeJSON(lw.opening)
}

// writeJSON writes part of the list's JSON, if anyone reads it.
func (lw *listWriter) writeJSON(b []byte) error {
	if lw.dst == nil {
		return nil
	}
	_, err := lw.dst.Write(b)
	return err
}

// item writes one object; it is the callback storage streams the list into.
func (lw *listWriter) item(o sqlstore.Object) error {
	value, err := storedobj.ServedJSON(lw.res, o.Value)
	if err != nil {
		return lw.failures.Add(o, err)
	}
	data, err := lw.encode(o.Value, value)
	if err != nil {
		return err
	}
	if lw.proto != nil {
		if err := lw.proto.Add(data); err != nil {
			return err
		}
	}
	if lw.dst == nil {
		return nil
	}
	if lw.withoutTypeMeta {
		lw.itemBuf = wire.AppendWithoutTypeMeta(lw.itemBuf[:0], data)
		data = lw.itemBuf
	}
	lw.start()
	if lw.items > 0 {
		if err := lw.writeJSON([]byte{','}); err != nil {
			return err
		}
	}
	lw.items++
	return lw.writeJSON(data)
}

// finish closes the list with its metadata.
func (lw *listWriter) finish(meta metav1.ListMeta) error {
	lw.start()
	m, _ := json.Marshal(meta)
	if lw.res.CRDName != "" && lw.out.view == viewObject {
		m, _ = json.Marshal(unstructuredListMeta{ListMeta: meta, Continue: meta.Continue})
	}
	_ = lw.writeJSON([]byte(`],"metadata":`))
	_ = lw.writeJSON(m)
	_ = lw.writeJSON([]byte{'}'})
	if lw.auditCopy != nil {
		auditlog.Response(lw.ctx, nil, lw.auditCopy.Bytes())
	}
	switch {
	case lw.yamlBuf != nil:
		y, err := inEncoding(lw.out, lw.yamlBuf.Bytes())
		if err != nil {
			return err
		}
		_, _ = lw.resp.Write(y)
	case lw.proto != nil:
		if err := lw.proto.WriteTo(lw.resp, meta); err != nil {
			return err
		}
	}
	return lw.resp.Close()
}

// close releases what the list held for its end.
func (lw *listWriter) close() {
	if lw.proto != nil {
		_ = lw.proto.Close()
	}
}

// unstructuredListMeta is a custom resource list's metadata as apiextensions-apiserver encodes it:
// its unstructured list always carries continue, empty on the last page.
type unstructuredListMeta struct {
	metav1.ListMeta
	Continue string `json:"continue"`
}

// fail reports err if nothing was sent yet. Once part of the list is on the wire the status
// cannot change: the connection is aborted so that the client sees a broken response, never a
// short list that looks complete.
func (lw *listWriter) fail(err error) error {
	if lw.resp.Sent() {
		panic(http.ErrAbortHandler)
	}
	return err
}
