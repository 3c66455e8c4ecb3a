// Package crdtype holds the rules of the CustomResourceDefinition type itself (decoding, preparing,
// validating, naming and establishing CRDs, as apiextensions-apiserver's strategy and controllers
// do) and turns an established CRD into the resources it serves.
package crdtype

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	sigsjson "sigs.k8s.io/json"

	"github.com/sqlkube/sqlkube/server/crdschema"
	"github.com/sqlkube/sqlkube/server/resource"
)

// CleanupFinalizer is the finalizer apiextensions-apiserver puts on a CRD being deleted; it
// is removed once the CRD's objects are gone.
const CleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// TakenNames returns the resource names (plural, singular, short names) and kinds (kind, list
// kind) that the served types of group hold, except the CRD called except.
type TakenNames func(group, except string) (resources, kinds sets.Set[string])

// BindHooks gives the customresourcedefinitions resource apiextensions-apiserver's rules, on
// top of those of its Go type that its strategy has: taken says which names are in use, and
// afterWrite (the catalog's) returns once the written CRD is served as written.
func BindHooks(r *resource.Resource, taken TakenNames, afterWrite func(ctx context.Context, revision int64) error) {
	r.Strategy = &definitionStrategy{TypedStrategy: r.Typed(), res: r, taken: taken}
	r.AfterWrite = afterWrite
}

// Decode reads a CRD the way kube-apiserver decodes a request body: into the v1 type, with
// its defaults applied (conversion strategy None, listKind, singular...).
func Decode(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return DecodeJSON(data)
}

func DecodeJSON(data []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, crd); err != nil {
		return nil, err
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	return crd, nil
}

// Encode writes crd back into obj, replacing its content.
func Encode(crd *apiextensionsv1.CustomResourceDefinition, obj *unstructured.Unstructured) {
	data, err := json.Marshal(crd)
	if err != nil {
		panic(fmt.Sprintf("encoding a decoded CustomResourceDefinition: %v", err)) // cannot happen
	}
	content := map[string]any{}
	if err := utiljson.Unmarshal(data, &content); err != nil {
		panic(fmt.Sprintf("re-reading an encoded CustomResourceDefinition: %v", err)) // cannot happen
	}
	obj.Object = content
}

// prepare readies a CRD about to be written (old is nil on create) as apiextensions-apiserver's
// strategy does, then sets what its naming and establishing controllers set, all at once, so
// that the type is served (under its new names) as soon as the write returns. A body that does
// not decode is left for validate to reject.
func prepare(taken TakenNames, obj, old *unstructured.Unstructured) {
	crd, oldCRD, err := decodeCRDs(obj, old)
	if err != nil {
		return
	}
	if err := crdschema.PrepareDefinition(crd, oldCRD); err != nil {
		return
	}
	AcceptNames(crd, taken)
	setAPIApprovalCondition(crd)
	Encode(crd, obj)
}

// apiApprovalConditions are the KubernetesAPIApprovalPolicyConformant conditions of a CRD in a
// protected group (*.k8s.io, *.kubernetes.io), by the state of its approval annotation.
var apiApprovalConditions = map[apihelpers.APIApprovalState]struct {
	status apiextensionsv1.ConditionStatus
	reason string
}{
	apihelpers.APIApproved:         {apiextensionsv1.ConditionTrue, "ApprovedAnnotation"},
	apihelpers.APIApprovalBypassed: {apiextensionsv1.ConditionFalse, "UnapprovedAnnotation"},
	apihelpers.APIApprovalMissing:  {apiextensionsv1.ConditionFalse, "MissingAnnotation"},
	apihelpers.APIApprovalInvalid:  {apiextensionsv1.ConditionFalse, "InvalidAnnotation"},
}

// setAPIApprovalCondition says whether a CRD of a protected group follows the API approval
// policy, as apiextensions-apiserver's approval controller does.
func setAPIApprovalCondition(crd *apiextensionsv1.CustomResourceDefinition) {
	if !apihelpers.IsProtectedCommunityGroup(crd.Spec.Group) {
		return
	}
	state, message := apihelpers.GetAPIApprovalState(crd.Annotations)
	c := apiApprovalConditions[state]
	apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.KubernetesAPIApprovalPolicyConformant, Status: c.status, Reason: c.reason, Message: message,
	})
}

// decodeCRDs decodes a CRD being written and, unless nil, the stored one it replaces.
func decodeCRDs(obj, old *unstructured.Unstructured) (crd, oldCRD *apiextensionsv1.CustomResourceDefinition, err error) {
	if crd, err = Decode(obj.Object); err != nil || old == nil {
		return crd, nil, err
	}
	oldCRD, err = Decode(old.Object)
	return crd, oldCRD, err
}

// prepareForDelete turns the first delete of a CRD into marking it for cleanup, as
// apiextensions-apiserver does: the finalizer keeps it until syncCRDs has deleted its objects.
func prepareForDelete(obj *unstructured.Unstructured) {
	crd, err := Decode(obj.Object)
	if err != nil {
		return
	}
	if !slices.Contains(crd.Finalizers, CleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, CleanupFinalizer)
	}
	apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type:    apiextensionsv1.Terminating,
		Status:  apiextensionsv1.ConditionTrue,
		Reason:  "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; instance deletion is pending",
	})
	Encode(crd, obj)
}

// validate runs apiextensions-apiserver's own validation, so causes and messages are
// kube-apiserver's. A body that does not decode as a CRD is refused as a whole.
func validate(obj, old *unstructured.Unstructured) field.ErrorList {
	crd, oldCRD, err := decodeCRDs(obj, old)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath(""), nil, err.Error())}
	}
	errs, _ := crdschema.ValidateDefinition(context.Background(), crd, oldCRD)
	return errs
}

// AcceptNames decides which of the requested names crd gets and sets its NamesAccepted and
// Established conditions, as apiextensions-apiserver's naming and establishing controllers do:
// a name another CRD of the group (or a built-in) already holds is refused, and the type keeps
// the names it was accepted with before.
func AcceptNames(crd *apiextensionsv1.CustomResourceDefinition, taken TakenNames) {
	resources, kinds := taken(crd.Spec.Group, crd.Name)
	requested, accepted := crd.Spec.Names, crd.Status.AcceptedNames
	names := accepted
	namesAccepted := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue,
		Reason: "NoConflicts", Message: "no conflicts found",
	}
	conflict := func(reason string, err error) {
		namesAccepted.Status, namesAccepted.Reason, namesAccepted.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}

	if err := freeOrOwned(requested.Plural, accepted.Plural, resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		names.Plural = requested.Plural
	}
	if err := freeOrOwned(requested.Singular, accepted.Singular, resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		names.Singular = requested.Singular
	}
	var shortNameErrs []error
	for _, short := range requested.ShortNames {
		if slices.Contains(accepted.ShortNames, short) {
			continue
		}
		if err := freeOrOwned(short, "", resources); err != nil {
			shortNameErrs = append(shortNameErrs, err)
		}
	}
	if err := utilerrors.NewAggregate(shortNameErrs); err != nil {
		conflict("ShortNamesConflict", err)
	} else {
		names.ShortNames = requested.ShortNames
	}
	if err := freeOrOwned(requested.Kind, accepted.Kind, kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		names.Kind = requested.Kind
	}
	if err := freeOrOwned(requested.ListKind, accepted.ListKind, kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		names.ListKind = requested.ListKind
	}
	names.Categories = requested.Categories

	crd.Status.AcceptedNames = names
	apihelpers.SetCRDCondition(crd, namesAccepted)
	establish(crd, namesAccepted.Status == apiextensionsv1.ConditionTrue)
}

// establish sets the Established condition: once the initial names are accepted the type is
// served, and stays so even if later name changes conflict.
func establish(crd *apiextensionsv1.CustomResourceDefinition, namesAccepted bool) {
	switch {
	case apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established):
	case namesAccepted:
		apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
			Reason: "InitialNamesAccepted", Message: "the initial names have been accepted",
		})
	default:
		apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
			Reason: "NotAccepted", Message: "not all names are accepted",
		})
	}
}

// freeOrOwned accepts a requested name that is already the accepted one or that nobody uses.
func freeOrOwned(requested, accepted string, used sets.Set[string]) error {
	if requested == accepted || !used.Has(requested) {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

// The verbs apiextensions-apiserver lists for custom resources, in its order, and those left
// while their CRD is being deleted.
var (
	crdVerbs            = []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}
	crdTerminatingVerbs = []string{"delete", "deletecollection", "get", "list", "watch"}
)

// Converters builds the converter of a CRD with conversion strategy Webhook;
// apiextensions-apiserver's CRConverterFactory implements it.
type Converters interface {
	NewConverter(crd *apiextensionsv1.CustomResourceDefinition) (safe, unsafe runtime.ObjectConvertor, err error)
}

// ServedResources lists the served versions of an established CRD as resources, with the names
// it was accepted with. A version whose schema does not compile (only possible for a CRD that
// was written without validation) is logged and not served, as is a CRD whose conversion
// webhook cannot be called (converters is nil, or its client cannot be built).
func ServedResources(crd *apiextensionsv1.CustomResourceDefinition, converters Converters, log *slog.Logger) []*resource.Resource {
	return versionResources(crd, converters, log, func(v *apiextensionsv1.CustomResourceDefinitionVersion, _ string) bool { return v.Served })
}

// StorageVersionResource is the storage version of an established CRD as a resource, served or
// not (nil if it cannot be built): what its objects are deleted as when the CRD is deleted, as
// apiextensions-apiserver's finalizer deletes them through the storage it keeps for every
// version, served or not.
func StorageVersionResource(crd *apiextensionsv1.CustomResourceDefinition, converters Converters, log *slog.Logger) *resource.Resource {
	rs := versionResources(crd, converters, log, func(v *apiextensionsv1.CustomResourceDefinitionVersion, storageVersion string) bool {
		return v.Name == storageVersion
	})
	if len(rs) == 0 {
		return nil
	}
	return rs[0]
}

// versionResources lists the versions of an established CRD that include takes as resources.
func versionResources(crd *apiextensionsv1.CustomResourceDefinition, converters Converters, log *slog.Logger, include func(v *apiextensionsv1.CustomResourceDefinitionVersion, storageVersion string) bool) []*resource.Resource {
	if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		return nil
	}
	storageVersion, err := apihelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil
	}
	converter, err := webhookConverter(crd, converters)
	if err != nil {
		log.Error("not serving a CustomResourceDefinition", "name", crd.Name, "err", err)
		return nil
	}
	var served []*resource.Resource
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !include(v, storageVersion) {
			continue
		}
		schema, err := crdschema.Compile(crd, v.Name)
		if err != nil {
			log.Error("not serving a CustomResourceDefinition version", "name", crd.Name, "version", v.Name, "err", err)
			continue
		}
		served = append(served, crdVersionResource(crd, v, storageVersion, schema))
	}
	storageSchema, readsDefaults := storageSchemaOf(crd, storageVersion, served)
	for _, r := range served {
		r.StorageSchema, r.ReadsDefaults, r.Converter = storageSchema, readsDefaults, converter
	}
	return served
}

// webhookConverter is the converter of a CRD with conversion strategy Webhook, nil for
// strategy None. It is the unsafe one, which may change the object it converts: the registry
// converts objects it decoded for the purpose.
func webhookConverter(crd *apiextensionsv1.CustomResourceDefinition, converters Converters) (runtime.ObjectConvertor, error) {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil, nil
	}
	if converters == nil {
		return nil, errors.New("conversion webhooks are not configured")
	}
	_, unsafe, err := converters.NewConverter(crd)
	return unsafe, err
}

// crdVersionResource is one served version of crd, under the names it was accepted with.
func crdVersionResource(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, storageVersion string, schema *crdschema.Schema) *resource.Resource {
	names := crd.Status.AcceptedNames
	terminating := apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating)
	r := &resource.Resource{
		Group:          crd.Spec.Group,
		Version:        v.Name,
		Name:           names.Plural,
		SingularName:   names.Singular,
		Kind:           names.Kind,
		ListKind:       names.ListKind,
		Namespaced:     crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		ShortNames:     names.ShortNames,
		Categories:     names.Categories,
		Verbs:          crdVerbs,
		StorageName:    crd.Name, // plural.group, as validation requires
		StorageVersion: storageVersion,
		CRDName:        crd.Name,
		Definition:     crd,
		Terminating:    terminating,
		Schema:         schema,
	}
	r.Strategy = &customResourceStrategy{res: r, schema: schema}
	if terminating {
		r.Verbs = crdTerminatingVerbs
	}
	if v.Deprecated {
		r.DeprecationWarning = fmt.Sprintf("%s/%s %s is deprecated", crd.Spec.Group, v.Name, names.Kind)
		if v.DeprecationWarning != nil {
			r.DeprecationWarning = *v.DeprecationWarning
		}
	}
	if sub := v.Subresources; sub != nil {
		r.Status = sub.Status != nil
		if sub.Scale != nil {
			r.Scale = &resource.ScaleSubresource{
				SpecReplicasPath:   sub.Scale.SpecReplicasPath,
				StatusReplicasPath: sub.Scale.StatusReplicasPath,
				LabelSelectorPath:  ptrValue(sub.Scale.LabelSelectorPath),
			}
		}
	}
	return r
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// IsBeingCleanedUp is true for a CRD marked for deletion whose objects must be deleted.
func IsBeingCleanedUp(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.DeletionTimestamp != nil && slices.Contains(crd.Finalizers, CleanupFinalizer)
}
