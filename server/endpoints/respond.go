package endpoints

import (
	"encoding/json"
	"net/http"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/endpoints/wire"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/registry/views"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// writeObject answers one stored object (its JSON as stored) in the negotiated format,
// compressed when large, as kube-apiserver answers.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, req *request, out output, code int, value []byte) error {
	body, err := s.encodeObject(r, req, out, value)
	if err != nil {
		return err
	}
	auditlog.Response(r.Context(), nil, body)
	if body, err = inEncoding(out, body); err != nil {
		return err
	}
	resp := wire.NewDeferredResponse(w, r, code, out.contentType())
	_, _ = resp.Write(body)
	return resp.Close()
}

// writeJSON answers any JSON-encodable value of an API type, such as a Status, in the
// negotiated encoding.
func writeJSON(w http.ResponseWriter, r *http.Request, out output, code int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	status, _ := v.(*metav1.Status)
	if st, ok := v.(metav1.Status); ok {
		status = &st
	}
	auditlog.Response(r.Context(), status, body)
	if body, err = inEncoding(out, body); err != nil {
		return err
	}
	w.Header().Set("Content-Type", out.contentType())
	w.WriteHeader(code)
	_, _ = w.Write(body)
	return nil
}

// inEncoding is a JSON body, the JSON of an API type with its kind and apiVersion, in the
// negotiated encoding.
func inEncoding(out output, jsonBody []byte) ([]byte, error) {
	switch out.format {
	case formatYAML:
		return yaml.JSONToYAML(jsonBody)
	case formatProtobuf:
		return wire.ProtobufObject(jsonBody)
	}
	return jsonBody, nil
}

// encodeObject turns a stored object into the JSON of the view the client asked for.
func (s *Server) encodeObject(r *http.Request, req *request, out output, stored []byte) ([]byte, error) {
	value, err := storedobj.ServedJSON(req.res, stored)
	if err != nil {
		return nil, err
	}
	switch out.view {
	case viewPartial:
		return views.PartialMetadataJSON(value, out.metaVersion)
	case viewTable:
		tc, err := newTable(r, req, out.metaVersion)
		if err != nil {
			return nil, err
		}
		row, obj, err := tc.Row(r.Context(), stored, value)
		if err != nil {
			return nil, err
		}
		table := tc.Empty()
		table.Rows = []metav1.TableRow{row}
		table.ResourceVersion = obj.GetResourceVersion()
		return json.Marshal(table)
	}
	return value, nil
}
