package pods

import (
	"context"
	"fmt"
	"net/http"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/sqlkube/sqlkube/server/auditlog"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/decode"
	"github.com/sqlkube/sqlkube/server/resource"
)

// register has the pods, nodes and Services types serve, with s, the subresources this package
// answers.
func (s *Subresources) register() error {
	handlers := map[string]map[string]any{
		"pods": {
			"binding": creater(s.createBinding), "eviction": creater(s.createEviction), "log": connecter{methods: getOnly, connect: s.connectLog},
			"exec": s.streams("exec"), "attach": s.streams("attach"), "portforward": s.streams("portforward"), "proxy": s.streams("proxy"),
		},
		"nodes":    {"proxy": connecter{methods: proxyMethods, connect: s.objectProxy("nodes", nodeProxy)}},
		"services": {"proxy": connecter{methods: proxyMethods, connect: s.objectProxy("services", serviceProxy)}},
	}
	for name, subs := range handlers {
		res, ok := s.types.Lookup("", "v1", name)
		if !ok {
			continue // not served (a test's catalog)
		}
		for sub, h := range subs {
			if err := res.Serve(sub, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// Bindings is namespaces/NS/bindings, the older path of a pod's binding, which kube-apiserver
// serves as a create-only resource.
func (s *Subresources) Bindings() *resource.Resource {
	return resource.CreateOnly("", "v1", "bindings", true, reflect.TypeFor[corev1.Binding](), creater(s.createNamedBinding))
}

// creater is a resource.Creater of a function.
type creater func(ctx context.Context, namespace, name string, body []byte, isYAML bool, opts *metav1.CreateOptions) (runtime.Object, error)

func (c creater) Create(ctx context.Context, namespace, name string, body []byte, isYAML bool, opts *metav1.CreateOptions) (runtime.Object, error) {
	return c(ctx, namespace, name, body, isYAML, opts)
}

// connecter is a resource.Connecter of a function, serving methods.
type connecter struct {
	methods []string
	connect func(ctx context.Context, namespace, name string, req resource.ConnectRequest) (http.Handler, error)
}

func (c connecter) ConnectMethods() []string { return c.methods }

func (c connecter) Connect(ctx context.Context, namespace, name string, req resource.ConnectRequest) (http.Handler, error) {
	return c.connect(ctx, namespace, name, req)
}

// The methods kube-apiserver's connect routes take: its log route takes GET; exec, attach and
// portforward GET and POST; proxy any method.
var (
	getOnly       = []string{http.MethodGet}
	streamMethods = []string{http.MethodGet, http.MethodPost}
	proxyMethods  = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}
)

func (s *Subresources) createBinding(ctx context.Context, namespace, name string, body []byte, isYAML bool, opts *metav1.CreateOptions) (runtime.Object, error) {
	binding, err := decodeBinding(body, isYAML)
	if err != nil {
		return nil, err
	}
	return s.Bind(ctx, namespace, name, binding, len(opts.DryRun) > 0)
}

// createNamedBinding answers POST namespaces/NS/bindings: the path names no pod, the Binding
// does. kube's create handler names its audit event's object after the decoded body, before
// checking it.
func (s *Subresources) createNamedBinding(ctx context.Context, namespace, _ string, body []byte, isYAML bool, opts *metav1.CreateOptions) (runtime.Object, error) {
	binding, err := decodeBinding(body, isYAML)
	if err != nil {
		return nil, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(binding)
	if err != nil {
		return nil, err
	}
	auditlog.RequestObject(ctx, &unstructured.Unstructured{Object: content})
	return s.Bind(ctx, namespace, binding.Name, binding, len(opts.DryRun) > 0)
}

// decodeBinding reads a body as a core/v1 Binding.
func decodeBinding(body []byte, isYAML bool) (*corev1.Binding, error) {
	return decode.Kind[corev1.Binding](body, isYAML, corev1.SchemeGroupVersion.WithKind("Binding"))
}

func (s *Subresources) createEviction(ctx context.Context, namespace, name string, body []byte, isYAML bool, opts *metav1.CreateOptions) (runtime.Object, error) {
	eviction, err := decode.Kind[policyv1.Eviction](body, isYAML, policyv1.SchemeGroupVersion.WithKind("Eviction"))
	if err != nil {
		return nil, err
	}
	return s.Evict(ctx, namespace, name, eviction, opts.DryRun)
}

// connectLog answers a pod's log: no node runs the pod, so there is no log, and no content, as
// kube answers.
func (s *Subresources) connectLog(ctx context.Context, namespace, name string, req resource.ConnectRequest) (http.Handler, error) {
	if err := s.Log(ctx, namespace, name, req.Query); err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }), nil
}

// streams is the Connecter of a pod's exec, attach, portforward or proxy (sub), which never
// succeed (see Connect).
func (s *Subresources) streams(sub string) connecter {
	methods := streamMethods
	if sub == "proxy" {
		methods = proxyMethods
	}
	return connecter{methods: methods, connect: func(ctx context.Context, namespace, name string, req resource.ConnectRequest) (http.Handler, error) {
		return nil, s.Connect(ctx, namespace, name, sub, req.Query, req.Upgrade)
	}}
}

// objectProxy is the Connecter of the /proxy of an object of the core type resourceName, which
// answers what check makes of the object, read through the registry, and of the scheme and
// port the path's name may carry ("https:web:443"), as kube-apiserver's proxy reads it.
func (s *Subresources) objectProxy(resourceName string, check func(ctx context.Context, obj *unstructured.Unstructured, scheme, port string) error) func(context.Context, string, string, resource.ConnectRequest) (http.Handler, error) {
	return func(ctx context.Context, namespace, id string, _ resource.ConnectRequest) (http.Handler, error) {
		scheme, name, port, valid := utilnet.SplitSchemeNamePort(id)
		ref, err := s.ref("", resourceName, namespace, name)
		if err != nil {
			return nil, err
		}
		if !valid {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid %s request %q", ref.Resource.SingularName, id))
		}
		obj, err := s.getObject(ctx, registry.Ref{Resource: ref.Resource, Namespace: namespace, Name: name})
		if err != nil {
			return nil, err
		}
		return nil, check(ctx, obj, scheme, port)
	}
}
