package server

import (
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// serveComputed answers a type whose objects are computed from the server's liveness checks
// when read (resource.Resource.Computed): get and list, as kube-apiserver's componentstatuses
// storage serves them; any other method is not allowed, and there is no watch.
func (s *Server) serveComputed(w http.ResponseWriter, r *http.Request, req *request) {
	if r.Method != http.MethodGet || IsWatch(r) {
		s.writeError(w, r, errMethodNotAllowed(r.Method))
		return
	}
	if req.subresource != "" {
		s.writeError(w, r, errNotFoundPath())
		return
	}
	objects := req.res.Computed(s.liveChecks(r))
	if req.name != "" {
		s.handle(w, r, req, func(w http.ResponseWriter, r *http.Request, req *request) error {
			return s.serveComputedObject(w, r, req, objects)
		})
		return
	}
	s.handle(w, r, req, func(w http.ResponseWriter, r *http.Request, req *request) error {
		return s.serveComputedList(w, r, req, objects)
	})
}

// liveChecks runs the server's liveness checks.
func (s *Server) liveChecks(r *http.Request) []resource.Check {
	var checks []resource.Check
	for _, c := range s.api.Checks.Live {
		checks = append(checks, resource.Check{Name: c.Name(), Err: c.Check(r)})
	}
	return checks
}

// serveComputedObject answers the object req names, or kube's NotFound, which names the type by
// its singular name.
func (s *Server) serveComputedObject(w http.ResponseWriter, r *http.Request, req *request, objects []*unstructured.Unstructured) error {
	out, err := negotiateOutput(r, false)
	if err != nil {
		return err
	}
	for _, obj := range objects {
		if obj.GetName() == req.name {
			value, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			return s.writeObject(w, r, req, out, http.StatusOK, value)
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: req.res.Group, Resource: req.res.SingularName}, req.name)
}

// serveComputedList answers the objects the request's selectors select, by their metadata
// alone as kube's componentstatuses storage does, in a list without a resourceVersion.
func (s *Server) serveComputedList(w http.ResponseWriter, r *http.Request, req *request, objects []*unstructured.Unstructured) error {
	lw, opts, err := s.startList(w, r, req)
	if err != nil {
		return err
	}
	labelSelector, fieldSelector := labels.Everything(), fields.Everything()
	if opts.LabelSelector != nil {
		labelSelector = opts.LabelSelector
	}
	if opts.FieldSelector != nil {
		fieldSelector = opts.FieldSelector
	}
	for _, obj := range objects {
		metaFields := fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
		if !labelSelector.Matches(labels.Set(obj.GetLabels())) || !fieldSelector.Matches(metaFields) {
			continue
		}
		value, err := json.Marshal(obj)
		if err != nil {
			return lw.fail(err)
		}
		if err := lw.item(sqlstore.Object{Value: value}); err != nil {
			return lw.fail(err)
		}
	}
	return lw.finish(metav1.ListMeta{})
}
