package endpoints_test

import (
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

func TestRequestErrors(t *testing.T) {
	api := sqliteAPI(t)
	takenUID := str(api.do("POST", cmPath, `{"metadata":{"name":"taken"}}`).expect(t, http.StatusCreated).object(t), "metadata", "uid")
	api.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"doomed","finalizers":["example.com/hold"]}}`).expect(t, http.StatusCreated)
	api.do("DELETE", "/api/v1/namespaces/doomed", "").expect(t, http.StatusOK)

	// A path that names nothing is answered with net/http's plain 404, as kube-apiserver does;
	// this stands for it in the table.
	notFoundPath := metav1.Status{Code: 404, Message: plainNotFound}
	tests := []struct {
		name, method, path, body string
		headers                  []string
		want                     metav1.Status
	}{
		{"unknown resource", "GET", "/api/v1/widgets", "", nil, notFoundPath},
		{"unknown group", "GET", "/apis/example.com/v1/widgets", "", nil, notFoundPath},
		{"too deep", "GET", cmPath + "/x/status/more", "", nil, notFoundPath},
		{"namespaced object without namespace", "GET", "/api/v1/configmaps/x", "", nil, notFoundPath},
		{"cluster-scoped under a namespace", "GET", "/api/v1/namespaces/default/namespaces", "", nil, notFoundPath},
		{"no such subresource", "GET", cmPath + "/taken/status", "", nil, notFoundPath},
		{"method not allowed", "PATCH", cmPath, "{}", nil, metav1.Status{Code: 405, Reason: metav1.StatusReasonMethodNotAllowed,
			Message: "the server does not allow this method on the requested resource", Details: &metav1.StatusDetails{}}},
		{"create across namespaces", "POST", "/api/v1/configmaps", `{"metadata":{"name":"a"}}`, nil, metav1.Status{Code: 405, Reason: metav1.StatusReasonMethodNotAllowed,
			Message: "the server does not allow this method on the requested resource", Details: &metav1.StatusDetails{}}},
		{"malformed JSON", "POST", cmPath, `{"metadata":`, nil, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: `the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"metadata":)`}},
		{"wrong apiVersion", "POST", cmPath, `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"a"}}`, nil, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: `ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"`}},
		{"wrong kind", "POST", cmPath, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`, nil, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: `Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`}},
		{"missing name", "POST", cmPath, `{"data":{}}`, nil, metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid,
			Message: `ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required`,
			Details: &metav1.StatusDetails{Kind: "ConfigMap", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueRequired, Message: "Required value: name or generateName is required", Field: "metadata.name"}}}}},
		{"invalid name", "POST", cmPath, `{"metadata":{"name":"Not_Valid"}}`, nil, metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid,
			Message: `ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			Details: &metav1.StatusDetails{Name: "Not_Valid", Kind: "ConfigMap", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`, Field: "metadata.name"}}}}},
		{"namespace mismatch on create", "POST", cmPath, `{"metadata":{"name":"a","namespace":"other"}}`, nil, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: "the namespace of the provided object does not match the namespace sent on the request"}},
		{"name mismatch on update", "PUT", cmPath + "/taken", `{"metadata":{"name":"other"}}`, nil, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: "the name of the object (other) does not match the name on the URL (taken)"}},
		{"namespace mismatch on update", "PUT", cmPath + "/taken", `{"metadata":{"name":"taken","namespace":"other"}}`, nil, metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest,
			Message: "the namespace of the provided object does not match the namespace sent on the request"}},
		{"update of a missing object", "PUT", cmPath + "/missing", `{"metadata":{"name":"missing"}}`, nil, metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound,
			Message: `configmaps "missing" not found`, Details: &metav1.StatusDetails{Name: "missing", Kind: "configmaps"}}},
		{"already exists", "POST", cmPath, `{"metadata":{"name":"taken"}}`, nil, metav1.Status{Code: 409, Reason: metav1.StatusReasonAlreadyExists,
			Message: `configmaps "taken" already exists`, Details: &metav1.StatusDetails{Name: "taken", Kind: "configmaps"}}},
		{"missing namespace", "POST", "/api/v1/namespaces/nowhere/configmaps", `{"metadata":{"name":"a"}}`, nil, metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound,
			Message: `namespaces "nowhere" not found`, Details: &metav1.StatusDetails{Name: "nowhere", Kind: "namespaces"}}},
		{"terminating namespace", "POST", "/api/v1/namespaces/doomed/configmaps", `{"metadata":{"name":"a"}}`, nil, metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden,
			Message: `configmaps "a" is forbidden: unable to create new content in namespace doomed because it is being terminated`, Details: &metav1.StatusDetails{Name: "a", Kind: "configmaps",
				Causes: []metav1.StatusCause{{Type: "NamespaceTerminating", Message: "namespace doomed is being terminated", Field: "metadata.namespace"}}}}},
		{"immortal namespace", "DELETE", "/api/v1/namespaces/default", "", nil, metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden,
			Message: `namespaces "default" is forbidden: this namespace may not be deleted`, Details: &metav1.StatusDetails{Name: "default", Kind: "namespaces"}}},
		{"unsupported media type", "POST", cmPath, `x`, []string{"Content-Type: text/plain"}, metav1.Status{Code: 415, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"}},
		{"not acceptable", "GET", cmPath, "", []string{"Accept: text/html"}, metav1.Status{Code: 406, Reason: metav1.StatusReasonNotAcceptable,
			Message: "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"}},
		{"table of the wrong group", "GET", cmPath, "", []string{"Accept: application/json;as=Table;v=v1;g=example.com"}, metav1.Status{Code: 406, Reason: metav1.StatusReasonNotAcceptable,
			Message: "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"}},
		{"stale delete precondition", "DELETE", cmPath + "/taken", `{"preconditions":{"uid":"nope"}}`, nil, metav1.Status{Code: 409, Reason: metav1.StatusReasonConflict,
			Message: `Operation cannot be fulfilled on ConfigMap "taken": the UID in the precondition (nope) does not match the UID in record (` + takenUID + `). The object might have been deleted and then recreated`,
			Details: &metav1.StatusDetails{Name: "taken", Kind: "ConfigMap"}}},
		{"update of another uid", "PUT", cmPath + "/taken", `{"metadata":{"name":"taken","uid":"other"}}`, nil, metav1.Status{Code: 409, Reason: metav1.StatusReasonConflict,
			Message: `Operation cannot be fulfilled on configmaps "taken": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/taken, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object meta: ` + takenUID,
			Details: &metav1.StatusDetails{Name: "taken", Kind: "configmaps"}}},
		{"bad fieldValidation", "POST", cmPath + "?fieldValidation=Loose", `{"metadata":{"name":"a"}}`, nil, metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid,
			Message: `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"`,
			Details: &metav1.StatusDetails{Group: "meta.k8s.io", Kind: "CreateOptions", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueNotSupported, Message: `Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"`, Field: "fieldValidation"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := api.do(tt.method, tt.path, tt.body, tt.headers...)
			if tt.want.Message == plainNotFound {
				resp.expectPathNotFound(t)
				return
			}
			resp.expectStatus(t, tt.want)
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	api := newTestAPI(t, sqltest.SQLiteDSN(t), apiserver.Options{Options: endpoints.Options{MaxRequestBodyBytes: 1024}})
	body := `{"metadata":{"name":"big"},"data":{"a":"` + strings.Repeat("x", 2048) + `"}}`
	api.do("POST", cmPath, body).expectStatus(t, metav1.Status{Code: 413, Reason: metav1.StatusReasonRequestEntityTooLarge, Message: "Request entity too large: limit is 1024"})
}

func TestYAMLBodyAndResponse(t *testing.T) {
	api := sqliteAPI(t)
	resp := api.do("POST", cmPath, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-y\ndata:\n  k: v\n", "Content-Type: application/yaml", "Accept: application/yaml").expect(t, http.StatusCreated)
	if ct := resp.header.Get("Content-Type"); ct != "application/yaml" {
		t.Fatalf("Content-Type %q", ct)
	}
	if !strings.Contains(string(resp.body), "\n  k: v\n") || !strings.HasPrefix(string(resp.body), "apiVersion: v1\n") {
		t.Fatalf("YAML body:\n%s", resp.body)
	}
	resp = api.do("GET", cmPath+"/missing", "", "Accept: application/yaml").expect(t, http.StatusNotFound)
	if !strings.Contains(string(resp.body), "reason: NotFound") {
		t.Fatalf("YAML Status:\n%s", resp.body)
	}
}

// TestDatabaseFaultTextStaysInTheLog: a failure of the database is a 500 with a fixed message;
// its own text (SQL, table names, the driver's words) is for the server's log, never the client.
func TestDatabaseFaultTextStaysInTheLog(t *testing.T) {
	dsn := sqltest.SQLiteDSN(t)
	api := newTestAPI(t, dsn, apiserver.Options{RevisionWait: 300 * time.Millisecond})
	db, err := sql.Open("sqlite", strings.TrimPrefix(dsn, "sqlite://"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`ALTER TABLE objects RENAME TO objects_gone`); err != nil {
		t.Fatal(err)
	}
	api.do("GET", cmPath, "").expectStatus(t, apierrors.NewInternalError(endpoints.ErrDatabaseFault).ErrStatus)
	api.do("GET", cmPath+"/x", "").expectStatus(t, apierrors.NewInternalError(endpoints.ErrDatabaseFault).ErrStatus)
}
