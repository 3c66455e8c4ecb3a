package endpoints

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"

	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// serveGet answers GET on an object (or its status).
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, req *request) error {
	out, err := negotiateOutput(r, req, false)
	if err != nil {
		return err
	}
	obj, err := s.api.Registry.Get(r.Context(), req.ref(), getOptions(r))
	if err != nil {
		return err
	}
	return storedobj.ReadFailed(req.res, req.namespace, req.name, s.writeObject(w, r, req, out, http.StatusOK, obj.Value))
}

// serveCreate answers POST on a collection.
func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, req *request) error {
	out, err := negotiateOutput(r, req, false)
	if err != nil {
		return err
	}
	opts, err := parseCreateOptions(r)
	if err != nil {
		return err
	}
	// A refused create answers before its body is read, as kube-apiserver's does.
	if err := registry.CheckCreate(req.ref()); err != nil {
		return err
	}
	obj, warnings, err := s.decodeObject(r, req.res, opts.FieldValidation)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	opts.FieldManager = req.manager
	stored, warnings, err := s.api.Registry.Create(r.Context(), req.ref(), obj, opts)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	return s.writeObject(w, r, req, out, http.StatusCreated, stored.Value)
}

// serveUpdate answers PUT on an object or one of its subresources.
func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, req *request) error {
	out, err := negotiateOutput(r, req, false)
	if err != nil {
		return err
	}
	opts, err := parseUpdateOptions(r)
	if err != nil {
		return err
	}
	obj, warnings, err := s.decodeObject(r, req.res, opts.FieldValidation)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	opts.FieldManager = req.manager
	stored, created, err := s.api.Registry.Update(r.Context(), req.ref(), obj, opts)
	if err != nil {
		return err
	}
	return s.writeObject(w, r, req, out, writtenCode(created), stored.Value)
}

// writtenCode is the status of a successful write: 201 when it created the object.
func writtenCode(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

// serveDelete answers DELETE on an object.
func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, req *request) error {
	out, err := negotiateOutput(r, req, false)
	if err != nil {
		return err
	}
	opts, err := s.decodeDeleteOptions(r)
	if err != nil {
		return err
	}
	stored, deleted, err := s.api.Registry.Delete(r.Context(), req.ref(), opts)
	if err != nil {
		return err
	}
	if !deleted {
		// kube-apiserver accepts (202) a delete that asked for cascading with
		// orphanDependents=false and did not happen at once.
		code := http.StatusOK
		if opts.OrphanDependents != nil && !*opts.OrphanDependents {
			code = http.StatusAccepted
		}
		return s.writeObject(w, r, req, out, code, stored.Value)
	}
	if req.res.ReturnsDeletedObject {
		return s.writeObject(w, r, req, out, http.StatusOK, stored.Value)
	}
	return writeJSON(w, r, out, http.StatusOK, deletedStatus(req, stored))
}

// deletedStatus is kube-apiserver's answer to an immediate delete: a Success Status naming the
// object (its kind being, as there, the resource).
func deletedStatus(req *request, stored sqlstore.Object) metav1.Status {
	var deleted storedobj.MetadataOnly
	_ = storedobj.UnmarshalStored(stored.Value, &deleted) // only the uid is missing if this fails
	return metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name:  req.name,
			Group: req.gr.Group,
			Kind:  req.gr.Resource,
			UID:   deleted.Metadata.UID,
		},
	}
}

// serveDeleteCollection answers DELETE on a namespace's collection (or a cluster-scoped one):
// every object the list options select is deleted as a single delete would delete it, and the
// answer is the list of those objects as they were before, as kube-apiserver answers.
func (s *Server) serveDeleteCollection(w http.ResponseWriter, r *http.Request, req *request) error {
	out, opts, err := parseCollectionRequest(r, req)
	if err != nil {
		return err
	}
	deleteOpts, err := s.decodeDeleteOptions(r)
	if err != nil {
		return err
	}
	lw, err := s.newListWriter(w, r, req, out)
	if err != nil {
		return err
	}
	defer lw.close()
	meta, err := s.api.Registry.DeleteCollection(r.Context(), req.ref(), opts, deleteOpts, lw.item)
	if err != nil {
		return lw.fail(err)
	}
	return lw.finish(meta)
}

// allowsDeleteCollection reports whether the type serves deletecollection (namespaces do not).
func allowsDeleteCollection(res *resource.Resource) bool {
	return slices.Contains(res.Verbs, "deletecollection")
}

// managerOrUserAgent is who a write is recorded for in managedFields: the fieldManager option,
// or else, as kube-apiserver derives it, the User-Agent up to its first "/", printable
// characters only, at most the longest manager name allowed.
func managerOrUserAgent(manager, userAgent string) string {
	if manager != "" {
		return manager
	}
	name, _, _ := strings.Cut(userAgent, "/")
	var buf bytes.Buffer
	for _, r := range name {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}
