package registry

import (
	"context"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sqlkube/sqlkube/server/registry/scales"
	"github.com/sqlkube/sqlkube/server/resource"
)

// Admission is kube's admission step of writes, which the registry runs where kube-apiserver
// runs its admission chain: Mutate before the object is validated, Validate once it is, just
// before it is stored. An error is the request's answer. Writes made without a user in their
// context (the server's own controllers) are not admitted.
type Admission interface {
	Mutate(ctx context.Context, a *AdmissionRequest) error
	Validate(ctx context.Context, a *AdmissionRequest) error
	// ChecksNamespaces says whether Mutate runs the namespace check of creates
	// (CheckNamespaceAcceptsContent) itself, where kube's chain runs NamespaceLifecycle: after
	// NamespaceAutoProvision, which may create the namespace. Otherwise the registry runs it
	// before Mutate.
	ChecksNamespaces() bool
}

// AdmissionRequest is one write as admission sees it.
type AdmissionRequest struct {
	Resource    *resource.Resource
	Subresource string
	// Kind is the object's: the resource's, or autoscaling/v1 Scale through /scale.
	Kind      schema.GroupVersionKind
	Namespace string
	// Name is empty on a create whose name is still to be generated.
	Name      string
	Operation admission.Operation
	// Object is what the write stores, which Mutate may change (nil on a delete); OldObject is
	// what it replaces (nil on a create).
	// Through /scale, as in kube, they are the objects' autoscaling/v1 Scales, of which a
	// mutation's spec.replicas is written back.
	Object, OldObject *unstructured.Unstructured
	// Options are the write's CreateOptions, UpdateOptions, PatchOptions or DeleteOptions.
	Options runtime.Object
	DryRun  bool
}

// mutate runs the mutating admission of a write.
func (r *Registry) mutate(ctx context.Context, req *request, op admission.Operation, obj, old *unstructured.Unstructured) error {
	if r.opts.Admission == nil || !hasUser(ctx) {
		return nil
	}
	a, err := req.admissionRequest(op, obj, old)
	if err != nil {
		return err
	}
	if err := r.opts.Admission.Mutate(ctx, a); err != nil {
		return err
	}
	if req.subresource != "scale" || obj == nil {
		return nil
	}
	replicas, _, err := unstructured.NestedInt64(a.Object.Object, "spec", "replicas")
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return unstructured.SetNestedField(obj.Object, replicas, scales.FieldPath(req.res.Scale.SpecReplicasPath)...)
}

// admit runs the validating admission of a write.
func (r *Registry) admit(ctx context.Context, req *request, op admission.Operation, obj, old *unstructured.Unstructured) error {
	if r.opts.Admission == nil || !hasUser(ctx) {
		return nil
	}
	a, err := req.admissionRequest(op, obj, old)
	if err != nil {
		return err
	}
	return r.opts.Admission.Validate(ctx, a)
}

func hasUser(ctx context.Context) bool {
	_, ok := genericrequest.UserFrom(ctx)
	return ok
}

func (req *request) admissionRequest(op admission.Operation, obj, old *unstructured.Unstructured) (*AdmissionRequest, error) {
	name := req.name
	if obj != nil && obj.GetName() != "" {
		name = obj.GetName()
	}
	kind := req.res.GroupKind().WithVersion(req.res.Version)
	if req.subresource == "scale" {
		var err error
		if obj, err = scaleForAdmission(req.res, obj); err != nil {
			return nil, err
		}
		if old, err = scaleForAdmission(req.res, old); err != nil {
			return nil, err
		}
		kind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	}
	return &AdmissionRequest{Resource: req.res, Subresource: req.subresource, Kind: kind, Namespace: req.namespace, Name: name,
		Operation: op, Object: obj, OldObject: old, Options: optionsFor(op, req.options), DryRun: req.dryRun}, nil
}

// scaleForAdmission is obj's Scale as unstructured content.
func scaleForAdmission(res *resource.Resource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, nil
	}
	scale, _, err := scales.Of(res.Scale, obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(scale)
	return &unstructured.Unstructured{Object: content}, err
}

// optionsFor are the options admission sees: kube turns those of an update or apply that
// creates the object into CreateOptions.
func optionsFor(op admission.Operation, opts runtime.Object) runtime.Object {
	if op != admission.Create {
		return opts
	}
	switch o := opts.(type) {
	case *metav1.UpdateOptions:
		return &metav1.CreateOptions{DryRun: o.DryRun, FieldManager: o.FieldManager, FieldValidation: o.FieldValidation}
	case *metav1.PatchOptions:
		return &metav1.CreateOptions{DryRun: o.DryRun, FieldManager: o.FieldManager, FieldValidation: o.FieldValidation}
	}
	return opts
}

// AdmitCreate runs the admission of a create through ref's subresource whose object is not of
// the resource's kind (a pod's Binding), where kube-apiserver's handler and store run it: the
// mutating admission, which may change obj, then check (the store's validation), then the
// validating admission. Without a user in ctx, only check runs.
func (r *Registry) AdmitCreate(ctx context.Context, ref Ref, obj *unstructured.Unstructured, dryRun bool, check func() error) error {
	if r.opts.Admission == nil || !hasUser(ctx) {
		return check()
	}
	opts := &metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	a := &AdmissionRequest{Resource: ref.Resource, Subresource: ref.Subresource, Kind: obj.GroupVersionKind(), Namespace: ref.Namespace,
		Name: ref.Name, Operation: admission.Create, Object: obj, Options: opts, DryRun: dryRun}
	if err := r.opts.Admission.Mutate(ctx, a); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	return r.opts.Admission.Validate(ctx, a)
}
