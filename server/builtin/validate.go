package builtin

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The hand-written validation of the hot types kept as exceptions to kube's strategies
// (configmaps, secrets, core events, leases: see hotRules), kube's in its rules and messages.

func fromUnstructured[T any](obj *unstructured.Unstructured) (*T, error) {
	typed := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return nil, fmt.Errorf("reading %s as %T: %w", obj.GetName(), typed, err)
	}
	return typed, nil
}

// maxDataSize bounds the total size of a configmap's or secret's values (kube's MaxSecretSize).
const maxDataSize = 1 << 20

// immutableWhenSetMsg is kube's detail for changing what an `immutable: true` object holds.
const immutableWhenSetMsg = "field is immutable when `immutable` is set"

func validateConfigMap(cm, old *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = append(errs, validateImmutableData(cm.Immutable, old.Immutable,
			dataField{"data", cm.Data, old.Data}, dataField{"binaryData", cm.BinaryData, old.BinaryData})...)
	}
	errs = append(errs, validateKubeFinalizerNames(&cm.ObjectMeta)...)
	dataPath := field.NewPath("data")
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		errs = append(errs, validateDataKey(dataPath, key)...)
		// kube reports a key in both maps once, under data.
		if hasKey(cm.BinaryData, key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, "duplicate of key present in binaryData"))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		errs = append(errs, validateDataKey(field.NewPath("binaryData"), key)...)
	}
	size := 0
	for _, value := range cm.Data {
		size += len(value)
	}
	for _, value := range cm.BinaryData {
		size += len(value)
	}
	if size > maxDataSize {
		// kube names no field: the limit is on the whole object.
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return errs
}

// validateDataKey checks a key of a configmap's or secret's data (path names the map). Callers
// sort the keys: kube walks a Go map, and a stable order keeps the errors comparable.
func validateDataKey(path *field.Path, key string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(path.Key(key), key, msg))
	}
	return errs
}

func hasKey[V any](m map[string]V, key string) bool {
	_, ok := m[key]
	return ok
}

// dataField is a field an `immutable: true` object may not change: its new and old values.
type dataField struct {
	name       string
	value, old any
}

// validateImmutableData forbids, once an object was stored with `immutable: true`, unsetting
// immutable and changing any of fields.
func validateImmutableData(immutable, oldImmutable *bool, fields ...dataField) field.ErrorList {
	if oldImmutable == nil || !*oldImmutable {
		return nil
	}
	var errs field.ErrorList
	if immutable == nil || !*immutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableWhenSetMsg))
	}
	for _, f := range fields {
		if !equality.Semantic.DeepEqual(f.value, f.old) {
			errs = append(errs, field.Forbidden(field.NewPath(f.name), immutableWhenSetMsg))
		}
	}
	return errs
}

func validateSecret(secret, old *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(secret.Type, old.Type, field.NewPath("type"))...)
		errs = append(errs, validateImmutableData(secret.Immutable, old.Immutable, dataField{"data", secret.Data, old.Data})...)
	}
	errs = append(errs, validateKubeFinalizerNames(&secret.ObjectMeta)...)
	dataPath := field.NewPath("data")
	keys := slices.Sorted(maps.Keys(secret.Data))
	size := 0
	for _, key := range keys {
		errs = append(errs, validateDataKey(dataPath, key)...)
		size += len(secret.Data[key])
	}
	if size > maxDataSize {
		errs = append(errs, field.TooLong(dataPath, "", maxDataSize))
	}
	return append(errs, validateSecretType(secret)...)
}

// validateSecretType checks what each well-known secret type requires of its data.
func validateSecretType(secret *corev1.Secret) field.ErrorList {
	dataPath := field.NewPath("data")
	required := func(keys ...string) field.ErrorList {
		var errs field.ErrorList
		for _, key := range keys {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
		return errs
	}
	switch secret.Type {
	case corev1.SecretTypeServiceAccountToken:
		// Only the annotation naming the account: a controller adds the token and uid later.
		if secret.Annotations[corev1.ServiceAccountNameKey] == "" {
			return field.ErrorList{field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), "")}
		}
	case corev1.SecretTypeDockercfg:
		return validateJSONKey(secret.Data, corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		return validateJSONKey(secret.Data, corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		// Either may be empty, but one of them must be there.
		if !hasKey(secret.Data, corev1.BasicAuthUsernameKey) && !hasKey(secret.Data, corev1.BasicAuthPasswordKey) {
			return required(corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(secret.Data[corev1.SSHAuthPrivateKey]) == 0 {
			return required(corev1.SSHAuthPrivateKey)
		}
	case corev1.SecretTypeTLS:
		var errs field.ErrorList
		for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if !hasKey(secret.Data, key) {
				errs = append(errs, required(key)...)
			}
		}
		return errs
	}
	return nil
}

// validateJSONKey requires data[key] to hold a JSON object, without echoing the secret back.
func validateJSONKey(data map[string][]byte, key string) field.ErrorList {
	path := field.NewPath("data").Key(key)
	content, ok := data[key]
	if !ok {
		return field.ErrorList{field.Required(path, "")}
	}
	if err := json.Unmarshal(content, &map[string]any{}); err != nil {
		return field.ErrorList{field.Invalid(path, "<secret contents redacted>", err.Error())}
	}
	return nil
}

// standardFinalizers are the finalizer names kube accepts without a domain prefix.
var standardFinalizers = sets.New(string(corev1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents)

// validateKubeFinalizerName adds what kube's core types require of a finalizer name beyond it
// being a qualified name (which generic metadata validation checks): an unprefixed one must be
// one of the standard names.
func validateKubeFinalizerName(name string, path *field.Path) field.ErrorList {
	if strings.Contains(name, "/") || standardFinalizers.Has(name) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, name, "name is neither a standard finalizer name nor is it fully qualified")}
}

// validateKubeFinalizerNames applies validateKubeFinalizerName to metadata.finalizers, as
// kube's core types' metadata validation does.
func validateKubeFinalizerNames(meta *metav1.ObjectMeta) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("metadata", "finalizers")
	for i, name := range meta.Finalizers {
		errs = append(errs, validateKubeFinalizerName(name, path.Index(i))...)
	}
	return errs
}

// The length limits kube puts on a core/v1 event's fields.
const (
	eventReportingInstanceMaxLength = 128
	eventActionMaxLength            = 128
	eventReasonMaxLength            = 128
	eventNoteMaxLength              = 1024
)

// validateEvent checks a core/v1 event as kube does for that version, the same on create and
// update: old-style events (no eventTime) need their involved object in the event's namespace;
// new-style ones need the reporting fields.
func validateEvent(ev, _ *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if ev.EventTime.IsZero() {
		errs = validateLegacyEventNamespace(ev)
	} else {
		errs = validateEventSeries(ev)
	}
	for _, msg := range validation.IsDNS1123Subdomain(ev.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), ev.Namespace, msg))
	}
	return errs
}

// validateLegacyEventNamespace: an event about a cluster-scoped object may be in "default" (old
// clients put it there); any other must be in its object's namespace.
func validateLegacyEventNamespace(ev *corev1.Event) field.ErrorList {
	involved := ev.InvolvedObject.Namespace
	matches := ev.Namespace == involved || (involved == "" && ev.Namespace == metav1.NamespaceDefault)
	if matches {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("involvedObject", "namespace"), involved, "does not match event.namespace")}
}

// validateEventSeries checks an event with eventTime set: the reporting fields it must have.
func validateEventSeries(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(field.NewPath("involvedObject", "namespace"), "", "does not match event.namespace"))
	}
	// core/v1 calls reportingController reportingComponent, and kube's errors use that name.
	controllerPath := field.NewPath("reportingComponent")
	if ev.ReportingController == "" {
		errs = append(errs, field.Required(controllerPath, ""))
	}
	errs = append(errs, validateQualifiedName(ev.ReportingController, controllerPath)...)
	errs = append(errs, requiredAndBounded(field.NewPath("reportingInstance"), ev.ReportingInstance, eventReportingInstanceMaxLength)...)
	errs = append(errs, requiredAndBounded(field.NewPath("action"), ev.Action, eventActionMaxLength)...)
	errs = append(errs, requiredAndBounded(field.NewPath("reason"), ev.Reason, eventReasonMaxLength)...)
	if len(ev.Message) > eventNoteMaxLength {
		errs = append(errs, tooManyCharacters(field.NewPath("message"), eventNoteMaxLength))
	}
	return errs
}

func requiredAndBounded(path *field.Path, value string, maxLength int) field.ErrorList {
	var errs field.ErrorList
	if value == "" {
		errs = append(errs, field.Required(path, ""))
	}
	if len(value) > maxLength {
		errs = append(errs, tooManyCharacters(path, maxLength))
	}
	return errs
}

// tooManyCharacters is how kube words an event field over its limit: Invalid, value left out.
func tooManyCharacters(path *field.Path, maxLength int) *field.Error {
	return field.Invalid(path, "", fmt.Sprintf("can have at most %d characters", maxLength))
}

func validateQualifiedName(value string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

// leaseStrategies are the coordinated lease strategies kube defines (others need a prefix).
var leaseStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

// validateLease checks a lease's spec as kube does, the same on create and update.
func validateLease(lease, _ *coordinationv1.Lease) field.ErrorList {
	spec, path := &lease.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("leaseDurationSeconds"), *spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(path.Child("leaseTransitions"), *spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		errs = append(errs, validateLeaseStrategy(*spec.Strategy, path.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.HolderIdentity == nil || *spec.HolderIdentity == "") {
		errs = append(errs, field.Forbidden(path.Child("preferredHolder"), "may only be specified if `holderIdentity` is set"))
	}
	return errs
}

// validateLeaseStrategy: an unprefixed strategy must be one kube defines; a prefixed one a
// qualified name.
func validateLeaseStrategy(strategy coordinationv1.CoordinatedLeaseStrategy, path *field.Path) field.ErrorList {
	if strings.Contains(string(strategy), "/") {
		return validateQualifiedName(string(strategy), path)
	}
	if !slices.Contains(leaseStrategies, strategy) {
		return field.ErrorList{field.NotSupported(path, strategy, leaseStrategies)}
	}
	return nil
}
