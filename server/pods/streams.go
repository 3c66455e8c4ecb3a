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
// bound to a node gets kube's answer for that node (see noKubelets).
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
	_, _, err := pod.LogLocation(ctx, podGetter{s, namespace}, noKubelets{s}, name, opts)
	return err
}

// Connect answers pods/NAME/exec, attach, portforward and proxy (the subresource sub) as
// kube-apiserver does when it cannot reach the pod: its options decoded from query, the pod and
// container checked, then 400 "pod NAME does not have a host assigned" for a pod no node runs,
// NotFound for a node that is not stored, 503 otherwise (sqlkube runs no kubelets); proxy
// needs a pod IP (400 "address not allowed" without one) and a kubelet all the same. It never
// succeeds.
func (s *Subresources) Connect(ctx context.Context, namespace, name, sub string, query url.Values) error {
	getter, nodes := podGetter{s, namespace}, noKubelets{s}
	var err error
	switch sub {
	case "exec":
		opts := &api.PodExecOptions{}
		if err = decodeOptions(query, opts); err == nil {
			_, _, err = pod.ExecLocation(ctx, getter, nodes, name, opts)
		}
	case "attach":
		opts := &api.PodAttachOptions{}
		if err = decodeOptions(query, opts); err == nil {
			_, _, err = pod.AttachLocation(ctx, getter, nodes, name, opts)
		}
	case "portforward":
		opts := &api.PodPortForwardOptions{}
		if err = decodeOptions(query, opts); err == nil {
			_, _, err = pod.PortForwardLocation(ctx, getter, nodes, name, opts)
		}
	default: // proxy
		err = s.proxy(ctx, getter, name)
	}
	return err
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
