package endpoints

import (
	"mime"
	"net/http"

	"github.com/munnerz/goautoneg"
	"github.com/sqlkube/sqlkube/server/endpoints/wire"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

const (
	mediaTypeJSON = "application/json"
	mediaTypeYAML = "application/yaml"
)

// listedMediaTypes are the media types 406 and 415 answers list, as kube-apiserver lists its
// serializers' for built-in and custom resources alike: protobuf among them, though custom
// resources themselves are not read or written in it.
var listedMediaTypes = []string{mediaTypeJSON, mediaTypeYAML, wire.MediaTypeProtobuf}

// listedStreamMediaTypes are those of them a watch can be written in, as kube-apiserver names them.
var listedStreamMediaTypes = []string{mediaTypeJSON + ";stream=watch", wire.MediaTypeProtobufWatch}

// view is what shape of answer the client asked for.
type view int

const (
	viewObject  view = iota // the object or list itself
	viewTable               // meta.k8s.io Table
	viewPartial             // meta.k8s.io PartialObjectMetadata(List)
)

// format is how an answer is encoded.
type format int

const (
	formatJSON format = iota
	formatYAML
	formatProtobuf
)

// output is a negotiated response format.
type output struct {
	format format
	view   view
	// metaVersion is the meta.k8s.io version (v1 or v1beta1) of a Table or PartialObjectMetadata.
	metaVersion string
}

// contentType is the Content-Type header of a response in this format.
func (o output) contentType() string {
	switch o.format {
	case formatYAML:
		return mediaTypeYAML
	case formatProtobuf:
		return wire.MediaTypeProtobuf
	}
	return mediaTypeJSON
}

// negotiateOutput picks the first clause of the Accept header, by preference, that the server
// can produce for a get (list false) or a list of req's resource. As in kube-apiserver, clauses
// it cannot satisfy are skipped, and none satisfiable is 406.
func negotiateOutput(r *http.Request, req *request, list bool) (output, error) {
	header := r.Header.Get("Accept")
	if header == "" {
		return output{}, nil
	}
	for _, clause := range goautoneg.ParseAccept(header) {
		if o, ok := acceptClause(clause, list, req.protobufObjects()); ok {
			return o, nil
		}
	}
	return output{}, errNotAcceptable()
}

// protobufObjects reports whether the request's objects are written in protobuf when asked: those
// of the built-in types and the Scale of any type. As in kube-apiserver, a custom resource is not
// (its handler's serializers leave protobuf out), though its PartialObjectMetadata is.
func (req *request) protobufObjects() bool {
	return req.res.CRDName == "" || req.subresource == "scale"
}

// acceptClause reports whether one Accept clause names a format the server produces, the object
// itself being written in protobuf only if protobufObjects. A Table is JSON or YAML only, as in
// kube-apiserver (metav1.Table has no protobuf encoding).
func acceptClause(c goautoneg.Accept, list, protobufObjects bool) (output, bool) {
	o, ok := clauseFormat(c)
	if !ok {
		return output{}, false
	}
	as := c.Params["as"]
	if as == "" {
		return o, o.format != formatProtobuf || protobufObjects
	}
	if c.Params["g"] != metav1.GroupName {
		return output{}, false
	}
	switch v := c.Params["v"]; v {
	case "v1", "v1beta1":
		o.metaVersion = v
	default:
		return output{}, false
	}
	switch {
	case as == "Table" && o.format != formatProtobuf:
		o.view = viewTable
	case as == "PartialObjectMetadata" && !list, as == "PartialObjectMetadataList" && list:
		o.view = viewPartial
	default:
		return output{}, false
	}
	return o, true
}

// clauseFormat is the format one Accept clause names, if the server writes it; a wildcard is JSON.
func clauseFormat(c goautoneg.Accept) (output, bool) {
	switch {
	case c.Type == "*" || (c.Type == "application" && c.SubType == "*"):
		return output{}, true
	case c.Type != "application":
		return output{}, false
	}
	switch c.SubType {
	case "json":
		return output{}, true
	case "yaml":
		return output{format: formatYAML}, true
	case "vnd.kubernetes.protobuf":
		return output{format: formatProtobuf}, true
	}
	return output{}, false
}

// statusOutput is the format of an answer that is no view of an object, a Status (errors among
// them) or a review: the client's most preferred format, as kube-apiserver negotiates errors
// (clauses asking for a Table or PartialObjectMetadata skipped); ok is false when the header
// names none (JSON then). Protobuf is one only where protobufOK: kube-apiserver's resource
// handlers write it, its discovery handlers do not.
func statusOutput(r *http.Request, protobufOK bool) (out output, ok bool) {
	header := r.Header.Get("Accept")
	if header == "" {
		return output{}, true
	}
	for _, clause := range goautoneg.ParseAccept(header) {
		if o, ok := clauseFormat(clause); ok && clause.Params["as"] == "" && (protobufOK || o.format != formatProtobuf) {
			return o, true
		}
	}
	return output{}, false
}

// isResourceRequest reports whether r is about a resource, as the filters resolved it.
func isResourceRequest(r *http.Request) bool {
	info, ok := genericrequest.RequestInfoFrom(r.Context())
	return ok && info.IsResourceRequest
}

// bodyFormat is how a request body is encoded.
type bodyFormat int

const (
	bodyJSON bodyFormat = iota
	bodyYAML
	bodyProtobuf
)

// requestBodyFormat reads the request's Content-Type: JSON (the default), YAML, or, where
// protobufOK (the built-in types), Kubernetes protobuf; anything else is 415 naming kube's media
// types.
func requestBodyFormat(r *http.Request, protobufOK bool) (bodyFormat, error) {
	header := r.Header.Get("Content-Type")
	if header == "" {
		return bodyJSON, nil
	}
	mediaType, _, err := mime.ParseMediaType(header)
	if err != nil {
		return bodyJSON, storedobj.UnsupportedMediaType(listedMediaTypes)
	}
	switch {
	case mediaType == mediaTypeJSON:
		return bodyJSON, nil
	case mediaType == mediaTypeYAML:
		return bodyYAML, nil
	case mediaType == wire.MediaTypeProtobuf && protobufOK:
		return bodyProtobuf, nil
	}
	return bodyJSON, storedobj.UnsupportedMediaType(listedMediaTypes)
}
