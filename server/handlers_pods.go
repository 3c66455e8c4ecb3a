package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"sigs.k8s.io/yaml"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/registry/decode"
)

// routePodBindings adds POST namespaces/NS/bindings, the older path of a pod's binding,
// ahead of the generic routes: kube-apiserver serves it as a create-only resource.
func (s *Server) routePodBindings(m *mux.Router) {
	if s.api.Pods == nil {
		return
	}
	m.Path("/api/v1/namespaces/{namespace}/bindings").HandlerFunc(s.review("bindings", func(r *http.Request, body []byte) (any, error) {
		binding, opts, err := decodeSubresourceBody[corev1.Binding](r, body, false, corev1.SchemeGroupVersion.WithKind("Binding"))
		if err != nil {
			return nil, err
		}
		// This path names no object: kube's create handler names its audit event's object after
		// the decoded body, before checking it.
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(binding)
		if err != nil {
			return nil, err
		}
		auditlog.RequestObject(r.Context(), &unstructured.Unstructured{Object: content})
		return s.api.Pods.Bind(r.Context(), mux.Vars(r)["namespace"], binding.Name, binding, len(opts.DryRun) > 0)
	}))
}

// dispatchPodSubresource serves a pod's subresources beyond /status (package pods answers
// them): binding and eviction take a POST, log a GET, the streams GET or POST, proxy any method.
func (s *Server) dispatchPodSubresource(w http.ResponseWriter, r *http.Request, req *request) {
	switch {
	case req.subresource == "binding" || req.subresource == "eviction":
		if r.Method != http.MethodPost {
			s.methodNotSupported(w, r, req)
			return
		}
		s.handle(w, r, req, s.servePodCreateSubresource)
	case req.subresource == "log":
		if r.Method != http.MethodGet {
			s.methodNotSupported(w, r, req)
			return
		}
		s.handle(w, r, req, func(w http.ResponseWriter, r *http.Request, req *request) error {
			if err := s.api.Pods.Log(r.Context(), req.namespace, req.name, r.URL.Query()); err != nil {
				return err
			}
			w.WriteHeader(http.StatusNoContent) // no node runs the pod: no log, as kube answers
			return nil
		})
	case req.subresource == "proxy" || r.Method == http.MethodGet || r.Method == http.MethodPost:
		s.writeError(w, r, s.api.Pods.Connect(r.Context(), req.namespace, req.name, req.subresource, r.URL.Query(), httpstream.IsUpgradeRequest(r)))
	default:
		s.methodNotSupported(w, r, req)
	}
}

// servePodCreateSubresource answers POST pods/NAME/binding and pods/NAME/eviction: 201 with a
// Success Status, or the Status kube answers with its own code.
func (s *Server) servePodCreateSubresource(w http.ResponseWriter, r *http.Request, req *request) error {
	out, err := negotiateOutput(r, false)
	if err != nil {
		return err
	}
	body, isYAML, err := s.readRequestBody(r, true)
	if err != nil {
		return err
	}
	auditlog.RequestBody(r.Context(), body)
	var status *metav1.Status
	if req.subresource == "binding" {
		binding, opts, err := decodeSubresourceBody[corev1.Binding](r, body, isYAML, corev1.SchemeGroupVersion.WithKind("Binding"))
		if err != nil {
			return err
		}
		status, err = s.api.Pods.Bind(r.Context(), req.namespace, req.name, binding, len(opts.DryRun) > 0)
		if err != nil {
			return err
		}
	} else {
		eviction, opts, err := decodeSubresourceBody[policyv1.Eviction](r, body, isYAML, policyv1.SchemeGroupVersion.WithKind("Eviction"))
		if err != nil {
			return err
		}
		if status, err = s.api.Pods.Evict(r.Context(), req.namespace, req.name, eviction, opts.DryRun); err != nil {
			return err
		}
	}
	code := http.StatusCreated
	if status.Code != 0 {
		code = int(status.Code)
	}
	writeJSON(w, r, out, code, status)
	return nil
}

// decodeSubresourceBody decodes a subresource's body as T, of kind want, and the request's
// create options; a body that does not decode, or is of another kind, is kube's 400.
func decodeSubresourceBody[T any, PT interface {
	*T
	runtime.Object
}](r *http.Request, body []byte, isYAML bool, want schema.GroupVersionKind) (*T, *metav1.CreateOptions, error) {
	opts, err := parseCreateOptions(r)
	if err != nil {
		return nil, nil, err
	}
	into := new(T)
	unmarshal := json.Unmarshal
	if isYAML {
		unmarshal = func(data []byte, v any) error { return yaml.Unmarshal(data, v) }
	}
	if err := unmarshal(body, into); err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", want.Kind, want.Version, want.Kind, err))
	}
	if err := checkBodyKind(PT(into).GetObjectKind().GroupVersionKind(), want); err != nil {
		return nil, nil, err
	}
	return into, opts, nil
}

// checkBodyKind refuses a body of a kind (gvk, defaulted from want where it names none) that
// kube-apiserver's decoder cannot read as want, with its 400: that decoder makes the body's type
// from kube's scheme and converts it to want's internal type, so another kind fails as not
// registered in its version or as a conversion kube does not have (a v1beta1 Eviction converts).
func checkBodyKind(gvk, want schema.GroupVersionKind) error {
	if gvk.Kind == "" {
		gvk.Kind = want.Kind
	}
	if gvk.GroupVersion().Empty() {
		gvk.Group, gvk.Version = want.Group, want.Version
	}
	if err := convertsTo(gvk, want.GroupKind()); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, want.Kind, err))
	}
	return nil
}

// convertsTo is nil if kube's scheme converts an object of kind gvk to the internal type of
// kind, or the scheme's error, naming the scheme as kube-apiserver's binary names it.
func convertsTo(gvk schema.GroupVersionKind, kind schema.GroupKind) error {
	versioned, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		return runtime.NewNotRegisteredErrForKind(decode.LegacySchemeName, gvk)
	}
	internal, err := legacyscheme.Scheme.New(kind.WithVersion(runtime.APIVersionInternal))
	if err != nil {
		return err
	}
	return legacyscheme.Scheme.Convert(versioned, internal, nil)
}
