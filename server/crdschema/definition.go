package crdschema

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// crdStrategy is apiextensions-apiserver's strategy for CustomResourceDefinition objects; only
// its validation and warnings are used, which need no typer.
var crdStrategy = customresourcedefinition.NewStrategy(nil)

// PrepareDefinition readies a CRD about to be written to the main resource as kube-apiserver
// does: on create (old nil) the status is cleared and generation set to 1; on update the
// stored status is kept and generation bumped when the spec changed. Either way the storage
// version joins status.storedVersions. Call it before ValidateDefinition.
func PrepareDefinition(crd, old *apiextensionsv1.CustomResourceDefinition) error {
	internal, err := toInternal(crd)
	if err != nil {
		return err
	}
	if old == nil {
		crdStrategy.PrepareForCreate(context.Background(), internal)
	} else {
		internalOld, err := toInternal(old)
		if err != nil {
			return err
		}
		crdStrategy.PrepareForUpdate(context.Background(), internal, internalOld)
	}
	prepared := &apiextensionsv1.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_apiextensions_CustomResourceDefinition_To_v1_CustomResourceDefinition(internal, prepared, nil); err != nil {
		return fmt.Errorf("converting the CustomResourceDefinition back: %w", err)
	}
	prepared.TypeMeta = crd.TypeMeta // conversions leave it to the codec
	*crd = *prepared
	return nil
}

// ValidateDefinition checks a CRD about to be written as kube-apiserver does (names, versions,
// structural schema, defaults, CEL rules compiled and within their estimated cost limits,
// printer columns, selectable fields...), old being nil on create or the stored CRD on update
// (which allows invalid parts that did not change). It returns the errors, to be answered with
// apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind:
// "CustomResourceDefinition"}, name, errs), and the warnings of a valid write. crd must have
// had apiextensions/v1 defaults applied (apiextensionsv1.SetObjectDefaults_CustomResourceDefinition),
// as decoding does in kube-apiserver.
func ValidateDefinition(ctx context.Context, crd, old *apiextensionsv1.CustomResourceDefinition) (field.ErrorList, []string) {
	internal, err := toInternal(crd)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}, nil
	}
	if old == nil {
		return crdStrategy.Validate(ctx, internal), crdStrategy.WarningsOnCreate(ctx, internal)
	}
	internalOld, err := toInternal(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}, nil
	}
	return crdStrategy.ValidateUpdate(ctx, internal, internalOld), crdStrategy.WarningsOnUpdate(ctx, internal, internalOld)
}

func toInternal(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return nil, fmt.Errorf("converting the CustomResourceDefinition: %w", err)
	}
	return internal, nil
}
