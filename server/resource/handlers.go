package resource

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The handlers a type registers for what is not an object of its own: kube-apiserver's REST
// storage of such a subresource or resource is a rest.NamedCreater or a rest.Connecter, and
// these are their counterparts. The HTTP layer reads and negotiates the request, calls the
// handler and encodes its answer; it knows nothing of the type.

// Creater answers a POST whose body is of a kind of its own, which is not stored as it is: a
// subresource acting on the object at the path (a pod's binding or eviction, a ServiceAccount's
// token), or a create-only resource answering a question (a review) or acting on another
// object (namespaces/NS/bindings).
type Creater interface {
	// Create decodes body (JSON, or YAML when isYAML) as the handler's kind and acts on it for
	// the object namespace/name of the path (name empty for a create-only resource, namespace
	// empty outside a namespace). It returns what the answer carries: an object, encoded with
	// 201 Created, or a *metav1.Status, encoded with its Code (201 when unset). Errors are
	// apimachinery Status errors (400 for a body that does not decode).
	Create(ctx context.Context, namespace, name string, body []byte, isYAML bool, opts *metav1.CreateOptions) (runtime.Object, error)
}

// Connecter answers a request to a subresource that connects to what runs the object (a pod's
// log, exec, attach, portforward or proxy; a node's or a Service's proxy), with any of the
// methods its subresource's verbs allow.
type Connecter interface {
	// ConnectMethods are the HTTP methods it answers; others are 405.
	ConnectMethods() []string
	// Connect answers req for the object namespace/name (for proxy, name may carry a scheme and
	// a port: "https:web:443"); the handler it returns writes the answer, an error is the
	// answer's Status.
	Connect(ctx context.Context, namespace, name string, req ConnectRequest) (http.Handler, error)
}

// ConnectRequest is what a Connecter reads of a request.
type ConnectRequest struct {
	// Query holds the request's parameters (the subresource's options: container, command...).
	Query url.Values
	// Upgrade is set when the request asks for a streaming protocol upgrade (SPDY, WebSocket).
	Upgrade bool
}

// CreateOnly describes a resource whose only verb is create, answered by creater and stored
// nowhere: the access and authentication reviews, and namespaces/NS/bindings. goType is its
// kind's Go type (authorizationv1.SubjectAccessReview), which names its kind and its OpenAPI
// schema. The catalog serves it (Catalog.ServeCreateOnly) like any other type, so that discovery
// lists it and the HTTP layer resolves its path.
func CreateOnly(group, version, name string, namespaced bool, goType reflect.Type, creater Creater) *Resource {
	return &Resource{
		Group: group, Version: version, Name: name, SingularName: strings.TrimSuffix(name, "s"), Kind: goType.Name(),
		Namespaced: namespaced, Verbs: []string{"create"}, Creater: creater, AnswerType: goType,
	}
}

// Serve has r's subresource name answered by h, a Creater or a Connecter: subresources whose
// handlers need the registry (built after the catalog describes the types) are registered by
// the package serving them when the server is assembled, before it serves. It is an error for a
// subresource r does not declare, or for a handler of neither kind.
func (r *Resource) Serve(name string, h any) error {
	for i := range r.Subresources {
		sub := &r.Subresources[i]
		if sub.Name != name {
			continue
		}
		switch h := h.(type) {
		case Creater:
			sub.Creater = h
		case Connecter:
			sub.Connecter = h
		default:
			return fmt.Errorf("%s/%s: a handler of type %T is neither a Creater nor a Connecter", r.Name, name, h)
		}
		return nil
	}
	return fmt.Errorf("%s has no subresource %q", r.Name, name)
}
