// Package decode reads objects as kube-apiserver's decoders do: request bodies (JSON or YAML)
// as a built-in's Go type (through its strategy's Decode) or as a custom resource pruned and
// defaulted by its schema, patched objects as request bodies, and the error wording
// (400 BadRequest, strict decoding errors as warnings or errors) clients see for each.
package decode

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/sqlkube/sqlkube/server/crdschema"
	"github.com/sqlkube/sqlkube/server/resource"
)

// Object reads a request body (JSON, or YAML when isYAML) as an object of res's kind. A
// missing kind or apiVersion is filled from res, as kube-apiserver defaults them; a different one
// is 400. The body's strict errors (duplicate fields, fields the type does not know) are handled
// as fieldValidation says: returned as warnings (Warn, the default), ignored, or 400 (Strict).
func Object(res *resource.Resource, body []byte, isYAML bool, fieldValidation string) (*unstructured.Unstructured, []string, error) {
	decode := customResourceBody
	if res.Typed() != nil {
		decode = builtinBody
	}
	obj, strictErrs, err := decode(res, body, isYAML)
	if err != nil {
		return nil, nil, err
	}
	warnings, err := validateFields(res, obj, fieldValidation, strictErrs)
	if err != nil {
		return nil, nil, err
	}
	return obj, warnings, nil
}

// builtinBody decodes a built-in's body as kube-apiserver does: in one pass, straight into
// its Go type, which reports the strict errors in document order (after a YAML body's duplicate
// keys).
func builtinBody(res *resource.Resource, body []byte, isYAML bool) (*unstructured.Unstructured, []error, error) {
	data, yamlDuplicates, err := yamlBodyToJSON(body, isYAML, res.Kind)
	if err != nil {
		return nil, nil, err
	}
	content, strictErrs, err := res.Typed().Decode(data)
	if err != nil || !isJSONObject(data) {
		return nil, nil, builtinDecodeError(res, body, data, err)
	}
	obj := &unstructured.Unstructured{Object: content}
	if err := CheckTypeMeta(obj, res); err != nil {
		return nil, nil, err
	}
	return obj, append(yamlDuplicates, strictErrs...), nil
}

// builtinDecodeError is kube-apiserver's 400 for a built-in's body that its Go type did not
// decode (with err; or that is null): kube-apiserver reads the body's kind and apiVersion
// first, so a body that is not a JSON object, or of another type, gets that error instead.
func builtinDecodeError(res *resource.Resource, body, data []byte, err error) error {
	obj, _, parseErr := parseJSONObject(data, body, res.Kind)
	if parseErr != nil {
		return parseErr
	}
	if err := checkTypeMetaShape(obj); err != nil {
		return undecodable(res.Kind, body, err)
	}
	if err := CheckTypeMeta(obj, res); err != nil {
		return err
	}
	return UndecodableAs(res, obj, err)
}

// isJSONObject reports whether valid JSON is an object (rather than null, which decodes into a
// Go type as an empty object).
func isJSONObject(data []byte) bool {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// customResourceBody decodes a custom resource's body, pruned and defaulted by its schema.
// The strict errors are the body's duplicate fields, then the fields the schema does not know.
func customResourceBody(res *resource.Resource, body []byte, isYAML bool) (*unstructured.Unstructured, []error, error) {
	data, duplicates, err := yamlBodyToJSON(body, isYAML, res.Kind)
	if err != nil {
		return nil, nil, err
	}
	if string(bytes.TrimSpace(data)) == "null" {
		// The custom resource decoder reads no kind from it.
		return nil, nil, undecodable(res.Kind, body, runtime.NewMissingKindErr(string(data)))
	}
	obj, jsonDuplicates, err := parseJSONObject(data, body, res.Kind)
	if err != nil {
		return nil, nil, err
	}
	duplicates = append(duplicates, jsonDuplicates...)
	if err := checkTypeMetaShape(obj); err != nil {
		return nil, nil, undecodable(res.Kind, body, err)
	}
	if obj.GetKind() == "" {
		// The custom resource decoder reads the kind first, and takes none from the path.
		return nil, nil, undecodable(res.Kind, body, runtime.NewMissingKindErr(string(body)))
	}
	if err := CheckTypeMeta(obj, res); err != nil {
		return nil, nil, err
	}
	// Metadata of the wrong shape fails as the type's own decoding does.
	if err := checkObjectMeta(obj); err != nil {
		return nil, nil, UndecodableAs(res, obj, err)
	}
	unknown, err := AsRequestBody(res)(obj)
	if err != nil {
		return nil, nil, UndecodableAs(res, obj, err)
	}
	return obj, append(duplicates, unknown...), nil
}

// validateFields handles the strict errors of a body decoded as obj as fieldValidation says:
// warnings (Warn, the default), nothing (Ignore), or a 400 (Strict).
func validateFields(res *resource.Resource, obj *unstructured.Unstructured, fieldValidation string, strictErrs []error) ([]string, error) {
	switch {
	case fieldValidation == metav1.FieldValidationIgnore || len(strictErrs) == 0:
		return nil, nil
	case fieldValidation == metav1.FieldValidationStrict:
		return nil, UndecodableAs(res, obj, runtime.NewStrictDecodingError(strictErrs))
	}
	return StrictWarnings(strictErrs), nil
}

// yamlStrictErrorsPrefix starts the error of a YAML body with duplicate keys, which lists them
// one a line.
const yamlStrictErrorsPrefix = "yaml: unmarshal errors:\n"

// StrictWarnings words strict errors as kube-apiserver's Warning headers: one for each, except
// that a YAML body's duplicate keys, reported together in one error, get one each.
func StrictWarnings(strictErrs []error) []string {
	var warnings []string
	for _, e := range strictErrs {
		text, isYAML := strings.CutPrefix(e.Error(), yamlStrictErrorsPrefix)
		if !isYAML {
			warnings = append(warnings, text)
			continue
		}
		for _, line := range strings.Split(text, "\n") {
			warnings = append(warnings, strings.TrimSpace(line))
		}
	}
	return warnings
}

// UndecodableAs is kube-apiserver's 400 for a body that does not decode as res's type (or,
// under fieldValidation=Strict, has duplicate fields or fields the type does not know).
func UndecodableAs(res *resource.Resource, body *unstructured.Unstructured, err error) error {
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
		body.GetKind(), res.Version, res.Kind, err))
}

// ParseObject decodes one JSON or YAML object, ignoring duplicate fields (the last one wins).
func ParseObject(body []byte, isYAML bool, kind string) (*unstructured.Unstructured, error) {
	obj, _, err := parseObjectStrict(body, isYAML, kind)
	return obj, err
}

// parseObjectStrict decodes one JSON or YAML object, whole numbers as int64, and returns its
// duplicate fields as kube-apiserver's strict decoder reports them: by path in JSON
// (`duplicate field "spec.a"`), in one error listing their lines in YAML. The last of duplicate
// fields wins. Errors are 400 BadRequest worded as kube-apiserver words an undecodable body.
func parseObjectStrict(body []byte, isYAML bool, kind string) (*unstructured.Unstructured, []error, error) {
	data, duplicates, err := yamlBodyToJSON(body, isYAML, kind)
	if err != nil {
		return nil, nil, err
	}
	obj, jsonDuplicates, err := parseJSONObject(data, body, kind)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckMetadataShape(obj); err != nil {
		return nil, nil, undecodable(kind, body, err)
	}
	return obj, append(duplicates, jsonDuplicates...), nil
}

// yamlBodyToJSON converts a YAML body to JSON (a JSON one is returned as is). Duplicate keys are
// returned as a strict error, and the conversion redone keeping the last of them: the strict
// conversion is tried first since bodies rarely have any.
func yamlBodyToJSON(body []byte, isYAML bool, kind string) ([]byte, []error, error) {
	if !isYAML {
		return body, nil, nil
	}
	data, strictErr := yaml.YAMLToJSONStrict(body)
	if strictErr == nil {
		return data, nil, nil
	}
	data, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, nil, undecodable(kind, body, err)
	}
	return data, []error{strictErr}, nil
}

// parseJSONObject decodes the JSON of body, which must be an object, and returns its duplicate
// fields.
func parseJSONObject(data, body []byte, kind string) (*unstructured.Unstructured, []error, error) {
	var content map[string]interface{}
	// One pass both decodes and finds duplicates: UnmarshalStrict decodes as utiljson.Unmarshal.
	duplicates, err := sigsjson.UnmarshalStrict(data, &content, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil, nil, undecodable(kind, body, typeMetaError(data, err))
	}
	if content == nil {
		return nil, nil, undecodable(kind, body, fmt.Errorf("couldn't get version/kind; json parse error: not an object"))
	}
	return &unstructured.Unstructured{Object: content}, duplicates, nil
}

// typeMetaError words a body that is not a JSON object as kube-apiserver does: it first reads
// apiVersion and kind into a struct, and reports that decoding's error.
func typeMetaError(data []byte, err error) error {
	if _, _, typeErr := ReadTypeMeta(data); typeErr != nil {
		return typeErr
	}
	return fmt.Errorf("couldn't get version/kind; json parse error: %w", err)
}

// ReadTypeMeta reads apiVersion and kind from a JSON body as kube-apiserver's decoders first
// do; its error is theirs.
func ReadTypeMeta(data []byte) (apiVersion, kind string, err error) {
	var typeMeta struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}
	if err := json.Unmarshal(data, &typeMeta); err != nil {
		return "", "", fmt.Errorf("couldn't get version/kind; json parse error: %w", err)
	}
	return typeMeta.APIVersion, typeMeta.Kind, nil
}

// CheckMetadataShape makes sure metadata decodes as ObjectMeta, so that the typed accessors
// used later never meet a field of the wrong type (a name that is a number, labels that are a
// list), then checks kind and apiVersion.
func CheckMetadataShape(obj *unstructured.Unstructured) error {
	if err := checkObjectMeta(obj); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	return checkTypeMetaShape(obj)
}

// CheckCustomResourceShape is CheckMetadataShape as the custom resource decoder words it: a
// metadata error is not prefixed with "metadata: ".
func CheckCustomResourceShape(obj *unstructured.Unstructured) error {
	if err := checkObjectMeta(obj); err != nil {
		return err
	}
	return checkTypeMetaShape(obj)
}

// checkObjectMeta makes sure metadata, if set, decodes as ObjectMeta.
func checkObjectMeta(obj *unstructured.Unstructured) error {
	md, ok := obj.Object["metadata"]
	if !ok || md == nil {
		return nil
	}
	raw, err := json.Marshal(md)
	if err != nil {
		return err
	}
	var meta metav1.ObjectMeta
	return json.Unmarshal(raw, &meta)
}

// checkTypeMetaShape makes sure kind and apiVersion, if set, are strings.
func checkTypeMetaShape(obj *unstructured.Unstructured) error {
	for _, key := range []string{"kind", "apiVersion"} {
		if v, ok := obj.Object[key]; ok {
			if _, isString := v.(string); !isString {
				return fmt.Errorf("%s must be a string", key)
			}
		}
	}
	return nil
}

// undecodable is kube-apiserver's 400 for a body it cannot decode into the expected kind.
func undecodable(kind string, body []byte, err error) error {
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, summarize(body, 30)))
}

// summarize shows the start of a body in an error message: as text when it looks like JSON,
// in hex otherwise.
func summarize(data []byte, max int) string {
	if len(data) == 0 {
		return "<empty>"
	}
	suffix := ""
	if len(data) > max {
		data, suffix = data[:max], " ..."
	}
	if data[0] == '{' {
		return string(data) + suffix
	}
	return hex.EncodeToString(data) + suffix
}

// CheckTypeMeta fills an empty kind/apiVersion from res and rejects others with the 400
// kube-apiserver answers: custom resources are checked by apiVersion; built-ins fail to decode,
// into a kind the other version does not have, or into another kind.
func CheckTypeMeta(obj *unstructured.Unstructured, res *resource.Resource) error {
	// A custom resource's body must name its apiVersion: kube's decoder takes none from the path.
	if obj.GetAPIVersion() == "" && res.CRDName == "" {
		obj.SetAPIVersion(res.APIVersion())
	}
	if obj.GetKind() == "" {
		obj.SetKind(res.Kind)
	}
	apiVersion, kind := obj.GetAPIVersion(), obj.GetKind()
	if apiVersion == res.APIVersion() && kind == res.Kind {
		return nil
	}
	if res.CRDName != "" && apiVersion != res.APIVersion() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", apiVersion, res.APIVersion()))
	}
	if res.CRDName != "" {
		return nil // another kind is the schema's to refuse: 422, "kind: ... must be Widget"
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		gv = schema.GroupVersion{Version: apiVersion}
	}
	cause := fmt.Sprintf("converting (%s.%s) to (%s.%s): unknown conversion", gv.Version, kind, internalPackage(res.Group), res.Kind)
	if apiVersion != res.APIVersion() {
		cause = runtime.NewNotRegisteredErrForKind(LegacySchemeName, gv.WithKind(kind)).Error()
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %s", kind, gv.Version, res.Kind, cause))
}

// LegacySchemeName is how kube-apiserver's errors name the scheme of its built-in types.
const LegacySchemeName = "pkg/api/legacyscheme/scheme.go:30"

// internalPackage is the Go package of a built-in group's internal types, as conversion errors
// name it.
func internalPackage(group string) string {
	if group == "" {
		return "core"
	}
	name, _, _ := strings.Cut(group, ".")
	return name
}

// TypeDecoder decodes a patched object as the type: it returns the fields it did not know as
// strict errors; an error means the object is not of the type.
type TypeDecoder func(obj *unstructured.Unstructured) (unknownFields []error, err error)

// AsRequestBody decodes as a request body of res is decoded: through the built-in's Go
// type, or pruned and defaulted by the custom resource's schema.
func AsRequestBody(res *resource.Resource) TypeDecoder {
	return func(obj *unstructured.Unstructured) ([]error, error) {
		typed := res.Typed()
		if typed == nil {
			unknown, err := res.Schema.PruneAndDefault(obj)
			return crdschema.UnknownFieldErrors(unknown), err
		}
		data, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		content, unknown, err := typed.Decode(data)
		if err != nil {
			return nil, err
		}
		obj.Object = content
		return unknown, nil
	}
}

// ThroughGoType converts the result of a strategic merge to the built-in's Go type, as
// kube-apiserver does (with the converter's own errors), then takes that as a request body
// of res decoded into it.
func ThroughGoType(res *resource.Resource, goType reflect.Type) TypeDecoder {
	return func(obj *unstructured.Unstructured) ([]error, error) {
		typed := reflect.New(goType).Interface()
		var unknown []error
		err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, typed, true)
		if strict, ok := runtime.AsStrictDecodingError(err); ok {
			unknown, err = strict.Errors(), nil
		}
		if err != nil {
			return nil, err
		}
		if res.Typed() == nil {
			_, err = AsRequestBody(res)(obj)
			return unknown, err
		}
		content, err := res.Typed().DecodeTyped(typed)
		if err != nil {
			return nil, err
		}
		obj.Object = content
		return unknown, nil
	}
}

// PatchedJSON decodes a patched document, whole numbers as int64.
func PatchedJSON(data []byte) (*unstructured.Unstructured, error) {
	var content map[string]any
	if err := utiljson.Unmarshal(data, &content); err != nil {
		return nil, err
	}
	if content == nil {
		return nil, errors.New("Object 'Kind' is missing in 'null'")
	}
	return &unstructured.Unstructured{Object: content}, nil
}

// CheckPatchedTypeMeta is CheckTypeMeta for a patched object, except that a patch may give a
// custom resource another apiVersion: kube-apiserver checks a body's apiVersion, not a patched
// object's, which it decodes by the schema of its apiVersion. (Validation then refuses it; a
// write to /status keeps the stored object's.)
func CheckPatchedTypeMeta(obj *unstructured.Unstructured, res *resource.Resource) error {
	if res.CRDName != "" && obj.GetAPIVersion() != "" {
		return nil
	}
	return CheckTypeMeta(obj, res)
}
