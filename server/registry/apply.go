package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/sqlkube/sqlkube/server/registry/decode"
	"github.com/sqlkube/sqlkube/server/registry/fieldmanagers"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// apply merges p's apply configuration into old (or, to create an object, into an empty
// one) by server-side apply: p's manager then owns the fields it applied, and fields another
// manager owns with a different value are a 409 conflict unless the apply is forced.
func (p *patchRequest) apply(ctx context.Context, res *resource.Resource, mode updateMode, old *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	applied, err := p.applyTo(res, subresourceOf(mode), old)
	if err != nil {
		return nil, err
	}
	obj, ok := applied.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("apply produced a %T", applied)
	}
	// kube's field manager converts what it applied to the internal type, which folds what
	// only the version has (a Secret's write-only stringData) into the object: a built-in's
	// result is decoded as a body of its type, which does the same.
	if res.Typed() != nil {
		if _, err := decode.AsRequestBody(res)(obj); err != nil {
			return nil, storedobj.Unclassified(err)
		}
	}
	if old.GetUID() == "" {
		return obj, nil
	}
	return fieldmanagers.KeepTimes(ctx, obj, old), nil
}

// applyTo applies p's configuration to live through the field manager of res's subresource
// ("" for the object itself), and then checks the configuration for duplicate fields.
func (p *patchRequest) applyTo(res *resource.Resource, subresource string, live runtime.Object) (runtime.Object, error) {
	config, err := p.applyConfiguration()
	if err != nil {
		return nil, err
	}
	fm, err := fieldmanagers.For(res, subresource)
	if err != nil {
		return nil, err
	}
	applied, err := fm.Apply(live, config, p.opts.FieldManager, p.forced())
	if err != nil {
		return nil, storedobj.Unclassified(err)
	}
	if err := p.checkApplyStrictness(); err != nil {
		return nil, err
	}
	return applied, nil
}

// applyConfiguration is the apply configuration p's YAML body holds.
func (p *patchRequest) applyConfiguration() (*unstructured.Unstructured, error) {
	config := &unstructured.Unstructured{Object: map[string]any{}}
	if err := utilyaml.Unmarshal(p.body, &config.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	return config, nil
}

// forced reports whether an apply takes the fields it conflicts on from their managers.
func (p *patchRequest) forced() bool {
	return p.opts.Force != nil && *p.opts.Force
}

// checkApplyStrictness finds duplicate fields in the apply configuration: 400 under
// fieldValidation=Strict, a warning under Warn. (Unknown fields are the type converter's to
// reject.)
func (p *patchRequest) checkApplyStrictness() error {
	if !p.checksFields() {
		return nil
	}
	err := utilyaml.UnmarshalStrict(p.body, &map[string]any{})
	switch {
	case err == nil:
		return nil
	case p.opts.FieldValidation == metav1.FieldValidationStrict:
		return apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err))
	}
	// Each duplicate is a warning of its own, without the conversion's wording around them.
	p.warnings = append(p.warnings, decode.StrictWarnings([]error{errors.New(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))})...)
	return nil
}

// applyCreate creates the object an apply names when it does not exist, as kube-apiserver
// does: the configuration applied to an empty object, then the create path.
func (r *Registry) applyCreate(ctx context.Context, req *request, p *patchRequest) (sqlstore.Object, error) {
	if req.res.Terminating {
		return sqlstore.Object{}, apierrors.NewForbidden(req.gr, req.name, errors.New("create not allowed while custom resource definition is terminating"))
	}
	p.warnings = nil
	empty := fieldmanagers.EmptyObjectOf(req.res, req.res.GroupKind().WithVersion(req.res.Version))
	obj, err := p.apply(ctx, req.res, replaceAll, empty)
	if err != nil {
		return sqlstore.Object{}, err
	}
	if uid := obj.GetUID(); uid != "" {
		return sqlstore.Object{}, apierrors.NewConflict(req.gr, req.name, fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", uid))
	}
	if err := checkObjectName(obj, req); err != nil {
		return sqlstore.Object{}, err
	}
	return r.create(ctx, req, obj)
}
