package pods

import (
	"context"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/registry/core/pod"
)

// Log answers GET pods/NAME/log as kube-apiserver's LogREST does: the options are decoded and
// validated (422 Invalid PodLogOptions), the container checked against the pod (400), and a
// pod no node runs has no log: no error, and no content (kube-apiserver answers 204). A pod
// bound to a node gets kube's answer for that node's kubelet (see Connect).
func (s *Subresources) Log(ctx context.Context, namespace, name string, query url.Values) error {
	opts := &api.PodLogOptions{}
	if err := decodeOptions(query, opts); err != nil {
		return err
	}
	if opts.Stream == nil {
		stream := api.LogStreamAll // kube's default, with its split streams feature on
		opts.Stream = &stream
	}
	if errs := validation.ValidatePodLogOptions(opts, true); len(errs) > 0 {
		return apierrors.NewInvalid(api.Kind("PodLogOptions"), name, errs)
	}
	location, _, err := pod.LogLocation(ctx, podGetter{s, namespace}, s.kubelets, name, opts)
	if err != nil || location == nil {
		return err
	}
	return errNoKubelet(location)
}

// Connect answers pods/NAME/exec, attach, portforward and proxy (the subresource sub) as
// kube-apiserver does when it cannot reach the pod; upgrade says whether the request asks for
// a protocol upgrade. The streams' options are decoded from query and the pod and container
// checked, then the pod's kubelet is looked up as kube does (400 "pod NAME does not have a host
// assigned" for a pod no node runs, NotFound for a node that is not stored, kube's errors for
// a node without an address); a request that is not an upgrade is then 400 "Upgrade request
// required", as kube's upgrade-aware proxy answers before calling the kubelet, and one that is
// 503 (sqlkube runs no kubelets). Proxy needs a pod IP (400 "address not allowed" without one)
// and a cluster network all the same. It never succeeds.
func (s *Subresources) Connect(ctx context.Context, namespace, name, sub string, query url.Values, upgrade bool) error {
	if sub == "proxy" {
		return s.proxy(ctx, podGetter{s, namespace}, name)
	}
	location, err := s.streamLocation(ctx, namespace, name, sub, query)
	if err != nil {
		return err
	}
	if !upgrade {
		return apierrors.NewBadRequest("Upgrade request required")
	}
	return errNoKubelet(location)
}

// streamLocation is where kube-apiserver connects pods/NAME/exec, attach or portforward (sub),
// as kube's location function of the subresource finds it from the options in query.
func (s *Subresources) streamLocation(ctx context.Context, namespace, name, sub string, query url.Values) (*url.URL, error) {
	getter := podGetter{s, namespace}
	var location *url.URL
	var err error
	switch sub {
	case "exec":
		opts := &api.PodExecOptions{}
		if err = decodeOptions(query, opts); err == nil {
			location, _, err = pod.ExecLocation(ctx, getter, s.kubelets, name, opts)
		}
	case "attach":
		opts := &api.PodAttachOptions{}
		if err = decodeOptions(query, opts); err == nil {
			location, _, err = pod.AttachLocation(ctx, getter, s.kubelets, name, opts)
		}
	default: // portforward
		opts := &api.PodPortForwardOptions{}
		if err = decodeOptions(query, opts); err == nil {
			location, _, err = pod.PortForwardLocation(ctx, getter, s.kubelets, name, opts)
		}
	}
	return location, err
}

// proxy is kube's check of a proxied pod (pod.ResourceLocation, for NAME or [SCHEME:]NAME:PORT):
// a pod without an IP is 400 "address not allowed"; one with an IP is not reachable either,
// since sqlkube has no cluster network (503).
func (s *Subresources) proxy(ctx context.Context, getter podGetter, id string) error {
	if _, _, err := pod.ResourceLocation(ctx, getter, nil, id); err != nil {
		return err
	}
	return unavailable(fmt.Sprintf("nothing answers for pod %q: sqlkube has no cluster network (it stores pods and runs none)", id))
}
