package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	sigsjson "sigs.k8s.io/json"

	"github.com/sqlkube/sqlkube/server/crdschema"
	"github.com/sqlkube/sqlkube/server/registry/decode"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// maxJSONPatchOperations is kube-apiserver's limit on the operations of one JSON patch.
const maxJSONPatchOperations = 10000

// maxJSONPatchCopyBytes is kube-apiserver's limit (its server configuration's default, which no
// flag changes) on how much the copy operations of one JSON patch may add to the document:
// without it, a hundred kilobytes of copies that each double a field ask for exabytes.
const maxJSONPatchCopyBytes = 3 << 20

// The JSON patch library reads its copy limit from a package variable, which kube-apiserver also
// sets for the whole process: it bounds every JSON patch the server applies, those of mutating
// admission webhooks included. Set before any patch can be applied, it is never written again.
func init() {
	jsonpatch.AccumulatedCopySizeLimit = maxJSONPatchCopyBytes
}

// PatchTypes are the patch media types res accepts, in the order kube-apiserver lists them
// in its 415: custom resources have no Go type to carry strategic merge keys.
func PatchTypes(res *resource.Resource) []string {
	if res.CRDName != "" {
		return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}
	}
	return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}
}

// patchRequest is one PATCH: its type, its body and options. Applying it to the current object
// may produce warnings, kept for the answer.
type patchRequest struct {
	patchType types.PatchType
	body      []byte
	opts      *metav1.PatchOptions
	warnings  []string
}

// manager is the field manager the write is recorded for: none for an apply (its managed fields
// are set by the apply itself, so none is recorded afterwards), otherwise the fieldManager
// option.
func (p *patchRequest) manager() string {
	if p.patchType == types.ApplyYAMLPatchType {
		return ""
	}
	return p.opts.FieldManager
}

// patch applies p to the current object and writes the result through the update path. As in
// kube-apiserver, a patch is re-applied to the newer object when a concurrent write wins the
// race, and conflicts only when it carries a resourceVersion other than the current one. An
// apply to the main resource creates a missing object; created says so.
func (r *Registry) patch(ctx context.Context, req *request, p *patchRequest, mode updateMode) (stored sqlstore.Object, created bool, err error) {
	for {
		current, err := r.store.Get(ctx, req.key())
		if errors.Is(err, sqlstore.ErrNotFound) && p.patchType == types.ApplyYAMLPatchType && mode == replaceAll {
			stored, err := r.applyCreate(ctx, req, p)
			if apierrors.IsAlreadyExists(err) {
				continue // created meanwhile: apply to it
			}
			return stored, err == nil, err
		}
		if err != nil {
			return sqlstore.Object{}, false, storedobj.StorageError(err, req.gr, req.name)
		}
		stored, err := r.patchAttempt(ctx, req, p, mode, current)
		if errors.Is(err, sqlstore.ErrConflict) {
			continue
		}
		if err != nil {
			return sqlstore.Object{}, false, storedobj.StorageError(err, req.gr, req.name)
		}
		return stored, false, nil
	}
}

// patchAttempt applies p to current and writes the result if current is still the latest.
func (r *Registry) patchAttempt(ctx context.Context, req *request, p *patchRequest, mode updateMode, current sqlstore.Object) (sqlstore.Object, error) {
	old, err := storedobj.DecodeServed(req.res, current.Value)
	if err != nil {
		return sqlstore.Object{}, err
	}
	p.warnings = nil // warnings are those of the last attempt
	obj, err := p.patchedObject(ctx, req, mode, old)
	if err != nil {
		return sqlstore.Object{}, err
	}
	// The patched object may not move, as kube-apiserver checks: namespace first, then name.
	namespace := rest.ExpectedNamespaceForScope(req.namespace, req.res.Namespaced)
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(namespace, obj); err != nil {
		return sqlstore.Object{}, err
	}
	if err := checkObjectName(obj, req); err != nil {
		return sqlstore.Object{}, err
	}
	switch rv := obj.GetResourceVersion(); {
	case rv == "" && !req.res.Strategy.AllowUnconditionalUpdate():
		return sqlstore.Object{}, errResourceVersionRequired(req) // the patch removed it
	case rv != "" && rv != old.GetResourceVersion():
		return sqlstore.Object{}, apierrors.NewConflict(req.gr, req.name, errors.New(storedobj.ConflictMessage))
	}
	return r.applyUpdate(ctx, req, current, old, obj, mode)
}

// patchedObject is old with p applied, decoded as a request body of the type would be.
func (p *patchRequest) patchedObject(ctx context.Context, req *request, mode updateMode, old *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	switch p.patchType {
	case types.ApplyYAMLPatchType:
		return p.apply(ctx, req.res, mode, old)
	case types.StrategicMergePatchType:
		return p.strategicMerge(req.res, old)
	}
	oldJSON, err := json.Marshal(old.Object)
	if err != nil {
		return nil, err
	}
	patchedJSON, strictErrs, err := p.applyJSON(oldJSON)
	if err != nil {
		return nil, err
	}
	patched, err := decode.PatchedJSON(patchedJSON)
	if err != nil {
		return nil, patchInvalid(string(patchedJSON), err)
	}
	shown := func() string { return string(patchedJSON) }
	return patched, p.decodeAsType(req.res, patched, strictErrs, shown, decode.AsRequestBody(req.res))
}

// applyJSON applies a JSON patch or a JSON merge patch to a JSON document. Under
// fieldValidation Strict or Warn the patch's duplicate fields (and, in a JSON patch,
// operations' unknown fields) are returned as strict errors.
func (p *patchRequest) applyJSON(doc []byte) ([]byte, []error, error) {
	if p.patchType == types.MergePatchType {
		strictErrs, err := p.strictErrors(&map[string]any{}, "")
		if err != nil {
			return nil, nil, err
		}
		patched, err := jsonpatch.MergePatch(doc, p.body)
		if errors.Is(err, jsonpatch.ErrBadJSONPatch) {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
		return patched, strictErrs, err
	}
	strictErrs, err := p.strictErrors(&[]jsonPatchOp{}, "json patch ")
	if err != nil {
		return nil, nil, err
	}
	ops, err := jsonpatch.DecodePatch(p.body)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	if len(ops) > maxJSONPatchOperations {
		return nil, nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
	}
	patched, err := ops.Apply(doc)
	if err != nil {
		return nil, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return patched, strictErrs, nil
}

// jsonPatchOp is the shape of one JSON patch operation, to find unknown fields in them.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// strictErrors decodes the patch strictly into v when fieldValidation asks for strict errors,
// and returns them, each prefixed; a patch that does not decode at all is 400.
func (p *patchRequest) strictErrors(v any, prefix string) ([]error, error) {
	if !p.checksFields() {
		return nil, nil
	}
	strictErrs, err := sigsjson.UnmarshalStrict(p.body, v)
	if err != nil {
		// The error names the Go type decoded into; kube-apiserver's lives in its handlers package.
		message := strings.ReplaceAll(err.Error(), "registry.jsonPatchOp", "handlers.jsonPatchOp")
		return nil, apierrors.NewBadRequest("error decoding patch: " + message)
	}
	for i, e := range strictErrs {
		strictErrs[i] = fmt.Errorf("%s%w", prefix, e)
	}
	return strictErrs, nil
}

// checksFields reports whether fieldValidation asks for unknown and duplicate fields (Warn,
// the default, or Strict).
func (p *patchRequest) checksFields() bool {
	return p.opts.FieldValidation != metav1.FieldValidationIgnore
}

// strategicMerge applies a strategic merge patch, whose list merge keys come from the
// built-in's Go type.
func (p *patchRequest) strategicMerge(res *resource.Resource, old *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	goType := res.GoType()
	if goType == nil {
		return nil, storedobj.UnsupportedMediaType(PatchTypes(res))
	}
	patchMap := map[string]any{}
	var strictErrs []error
	var err error
	if p.checksFields() {
		strictErrs, err = sigsjson.UnmarshalStrict(p.body, &patchMap)
	} else {
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(p.body, &patchMap)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	// The merge writes into the map it is given; old must stay as stored.
	patchedMap, err := strategicpatch.StrategicMergeMapPatch(old.DeepCopy().Object, patchMap, reflect.New(goType).Interface())
	if err != nil {
		return nil, strategicMergeError(err)
	}
	patched := &unstructured.Unstructured{Object: patchedMap}
	// kube-apiserver shows the patch itself, as Go prints it, in these errors.
	shown := func() string { return fmt.Sprintf("%+v", patchMap) }
	return patched, p.decodeAsType(res, patched, strictErrs, shown, decode.ThroughGoType(res, goType))
}

// strategicMergeError answers the strategic merge library's errors about the patch's format
// with kube-apiserver's codes; any other error of the library kube-apiserver answers as a 500
// with the library's words (its handler does not classify them).
func strategicMergeError(err error) error {
	switch {
	case errors.Is(err, mergepatch.ErrBadJSONDoc), errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList),
		errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys), errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList),
		errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat):
		return apierrors.NewBadRequest(err.Error())
	case errors.Is(err, mergepatch.ErrNoListOfLists), errors.Is(err, mergepatch.ErrPatchContentNotMatchRetainKeys):
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return storedobj.Unclassified(err)
}

// decodeAsType decodes a patched object as the type with decode. Unknown fields and the
// patch's strict errors are warnings or, under fieldValidation=Strict, 422 Invalid showing
// shown (the patched object, or the patch; made only for an error, as a patch that decodes
// never shows it).
func (p *patchRequest) decodeAsType(res *resource.Resource, obj *unstructured.Unstructured, strictErrs []error, shown func() string, typeDecoder decode.TypeDecoder) error {
	shapeCheck := decode.CheckMetadataShape
	if res.CRDName != "" {
		shapeCheck = decode.CheckCustomResourceShape
	}
	if err := shapeCheck(obj); err != nil {
		return patchInvalid(shown(), err)
	}
	if err := decode.CheckPatchedTypeMeta(obj, res); err != nil {
		return err
	}
	unknown, err := typeDecoder(obj)
	if err != nil {
		return patchInvalid(shown(), err)
	}
	if !p.checksFields() {
		return nil
	}
	strictErrs = append(strictErrs, unknown...)
	if p.opts.FieldValidation == metav1.FieldValidationStrict && len(strictErrs) > 0 {
		return crdschema.StrictPatchError([]byte(shown()), strictErrs, nil)
	}
	for _, e := range strictErrs {
		p.warnings = append(p.warnings, e.Error())
	}
	return nil
}

// patchInvalid is kube-apiserver's 422 for a patched object that does not decode as the type.
func patchInvalid(shown string, err error) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), shown, err.Error())})
}
