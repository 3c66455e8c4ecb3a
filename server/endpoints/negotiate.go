package endpoints

import (
	"mime"
	"net/http"

	"github.com/munnerz/goautoneg"
	"github.com/sqlkube/sqlkube/server/endpoints/wire"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	mediaTypeJSON = "application/json"
	mediaTypeYAML = "application/yaml"
)

// listedMediaTypes are the media types 406 and 415 answers list, as kube-apiserver lists its
// serializers' for built-in and custom resources alike: protobuf among them, though sqlkube reads
// it only for the built-in types and writes it for none.
var listedMediaTypes = []string{mediaTypeJSON, mediaTypeYAML, wire.MediaTypeProtobuf}

// view is what shape of answer the client asked for.
type view int

const (
	viewObject  view = iota // the object or list itself
	viewTable               // meta.k8s.io Table
	viewPartial             // meta.k8s.io PartialObjectMetadata(List)
)

// output is a negotiated response format.
type output struct {
	yaml bool
	view view
	// metaVersion is the meta.k8s.io version (v1 or v1beta1) of a Table or PartialObjectMetadata.
	metaVersion string
}

// contentType is the Content-Type header of a response in this format.
func (o output) contentType() string {
	if o.yaml {
		return mediaTypeYAML
	}
	return mediaTypeJSON
}

// negotiateOutput picks the first clause of the Accept header, by preference, that the server
// can produce for a get (list false) or a list. As in kube-apiserver, clauses it cannot satisfy
// are skipped, and none satisfiable is 406.
func negotiateOutput(r *http.Request, list bool) (output, error) {
	header := r.Header.Get("Accept")
	if header == "" {
		return output{}, nil
	}
	for _, clause := range goautoneg.ParseAccept(header) {
		if o, ok := acceptClause(clause, list); ok {
			return o, nil
		}
	}
	return output{}, errNotAcceptable()
}

// acceptClause reports whether one Accept clause names a format the server produces.
func acceptClause(c goautoneg.Accept, list bool) (output, bool) {
	switch {
	case c.Type == "*" || (c.Type == "application" && c.SubType == "*"):
		return output{}, true
	case c.Type != "application" || (c.SubType != "json" && c.SubType != "yaml"):
		return output{}, false
	}
	o := output{yaml: c.SubType == "yaml"}
	as := c.Params["as"]
	if as == "" {
		return o, true
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
	case as == "Table":
		o.view = viewTable
	case as == "PartialObjectMetadata" && !list, as == "PartialObjectMetadataList" && list:
		o.view = viewPartial
	default:
		return output{}, false
	}
	return o, true
}

// prefersYAML reports whether errors for r should be written in YAML: the client's most preferred
// format is YAML.
func prefersYAML(r *http.Request) bool {
	o, err := negotiateOutput(r, false)
	return err == nil && o.yaml
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
