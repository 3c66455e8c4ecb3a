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
	resp := wire.NewDeferredResponse(w, r, code, out.contentType())
	_, _ = resp.Write(inEncoding(out, body))
	return resp.Close()
}

// writeJSON answers any JSON-encodable value, such as a Status, in the negotiated encoding.
func writeJSON(w http.ResponseWriter, r *http.Request, out output, code int, v any) {
	body, _ := json.Marshal(v)
	status, _ := v.(*metav1.Status)
	if st, ok := v.(metav1.Status); ok {
		status = &st
	}
	auditlog.Response(r.Context(), status, body)
	writeBody(w, out, code, body)
}

func writeBody(w http.ResponseWriter, out output, code int, jsonBody []byte) {
	w.Header().Set("Content-Type", out.contentType())
	w.WriteHeader(code)
	_, _ = w.Write(inEncoding(out, jsonBody))
}

// inEncoding is a JSON body in the negotiated encoding.
func inEncoding(out output, jsonBody []byte) []byte {
	if !out.yaml {
		return jsonBody
	}
	y, err := yaml.JSONToYAML(jsonBody)
	if err != nil {
		return jsonBody
	}
	return y
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
