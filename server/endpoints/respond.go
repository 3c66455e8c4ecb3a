package endpoints

import (
	"encoding/json"
	"net/http"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/registry"
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
	resp := newDeferredResponse(w, r, out.contentType())
	resp.code = code
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
	value, err := registry.ServedJSON(req.res, stored)
	if err != nil {
		return nil, err
	}
	switch out.view {
	case viewPartial:
		return partialMetadataJSON(value, out.metaVersion)
	case viewTable:
		tc, err := s.newTableConverter(r, req, out.metaVersion)
		if err != nil {
			return nil, err
		}
		row, obj, err := tc.row(r.Context(), stored, value)
		if err != nil {
			return nil, err
		}
		table := tc.table()
		table.Rows = []metav1.TableRow{row}
		table.ResourceVersion = obj.GetResourceVersion()
		return json.Marshal(table)
	}
	return value, nil
}

// partialMetadataJSON encodes a stored object as a meta.k8s.io PartialObjectMetadata of the given
// version.
func partialMetadataJSON(value []byte, version string) ([]byte, error) {
	var obj registry.MetadataOnly
	if err := registry.UnmarshalStored(value, &obj); err != nil {
		return nil, err
	}
	return partialMetadataOf(obj.Metadata, version)
}

// partialMetadataOf is objMeta as a meta.k8s.io PartialObjectMetadata of version.
func partialMetadataOf(objMeta metav1.ObjectMeta, version string) ([]byte, error) {
	return json.Marshal(metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: metav1.GroupName + "/" + version},
		ObjectMeta: objMeta,
	})
}
