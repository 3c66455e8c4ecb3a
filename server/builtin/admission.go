package builtin

import (
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AdmissionGroup is the group of the admission configuration types: policies, their bindings
// and webhook configurations, which the server's admission chain follows.
const AdmissionGroup = admissionregistrationv1.GroupName

// Storage names of the admission configuration types.
const (
	validatingPolicies        = "validatingadmissionpolicies." + AdmissionGroup
	validatingPolicyBindings  = "validatingadmissionpolicybindings." + AdmissionGroup
	mutatingPolicies          = "mutatingadmissionpolicies." + AdmissionGroup
	mutatingPolicyBindings    = "mutatingadmissionpolicybindings." + AdmissionGroup
	validatingWebhookConfigs  = "validatingwebhookconfigurations." + AdmissionGroup
	mutatingWebhookConfigs    = "mutatingwebhookconfigurations." + AdmissionGroup
	defaultWebhookTimeout     = int32(10)
	defaultServicePort        = int32(443)
	maxWebhookTimeout         = 30
	webhookNameSegmentsNeeded = 3
)

// Kube's defaults of admissionregistration.k8s.io/v1, applied when a body is decoded, as kube's
// defaulting does. The admission plugins rely on them: a nil selector matches nothing.

// webhookFields points at what validating and mutating webhooks have alike.
type webhookFields struct {
	name                              string
	clientConfig                      *admissionregistrationv1.WebhookClientConfig
	failurePolicy                     **admissionregistrationv1.FailurePolicyType
	matchPolicy                       **admissionregistrationv1.MatchPolicyType
	namespaceSelector, objectSelector **metav1.LabelSelector
	timeoutSeconds                    **int32
	sideEffects                       *admissionregistrationv1.SideEffectClass
	admissionReviewVersions           []string
	rules                             []admissionregistrationv1.RuleWithOperations
}

func validatingWebhookFields(w *admissionregistrationv1.ValidatingWebhook) webhookFields {
	return webhookFields{w.Name, &w.ClientConfig, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector,
		&w.TimeoutSeconds, w.SideEffects, w.AdmissionReviewVersions, w.Rules}
}

func mutatingWebhookFields(w *admissionregistrationv1.MutatingWebhook) webhookFields {
	return webhookFields{w.Name, &w.ClientConfig, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector,
		&w.TimeoutSeconds, w.SideEffects, w.AdmissionReviewVersions, w.Rules}
}

func defaultValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		defaultWebhook(validatingWebhookFields(&c.Webhooks[i]))
	}
}

func defaultMutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultWebhook(mutatingWebhookFields(w))
		w.ReinvocationPolicy = orDefault(w.ReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy)
	}
}

func defaultWebhook(w webhookFields) {
	*w.failurePolicy, *w.matchPolicy = orDefault(*w.failurePolicy, admissionregistrationv1.Fail), orDefault(*w.matchPolicy, admissionregistrationv1.Equivalent)
	*w.namespaceSelector, *w.objectSelector = orEmptySelector(*w.namespaceSelector), orEmptySelector(*w.objectSelector)
	*w.timeoutSeconds = orDefault(*w.timeoutSeconds, defaultWebhookTimeout)
	defaultRules(w.rules)
	if w.clientConfig.Service != nil {
		w.clientConfig.Service.Port = orDefault(w.clientConfig.Service.Port, defaultServicePort)
	}
}

func defaultValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	p.Spec.FailurePolicy = orDefault(p.Spec.FailurePolicy, admissionregistrationv1.Fail)
	defaultMatchResources(p.Spec.MatchConstraints)
}

func defaultValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	defaultMatchResources(b.Spec.MatchResources)
}

func defaultMutatingAdmissionPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	p.Spec.FailurePolicy = orDefault(p.Spec.FailurePolicy, admissionregistrationv1.Fail)
	if p.Spec.ReinvocationPolicy == "" {
		p.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

func defaultMutatingAdmissionPolicyBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	defaultMatchResources(b.Spec.MatchResources)
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	m.MatchPolicy = orDefault(m.MatchPolicy, admissionregistrationv1.Equivalent)
	m.NamespaceSelector, m.ObjectSelector = orEmptySelector(m.NamespaceSelector), orEmptySelector(m.ObjectSelector)
	for i := range m.ResourceRules {
		m.ResourceRules[i].Scope = orDefault(m.ResourceRules[i].Scope, admissionregistrationv1.AllScopes)
	}
	for i := range m.ExcludeResourceRules {
		m.ExcludeResourceRules[i].Scope = orDefault(m.ExcludeResourceRules[i].Scope, admissionregistrationv1.AllScopes)
	}
}

func defaultRules(rules []admissionregistrationv1.RuleWithOperations) {
	for i := range rules {
		rules[i].Scope = orDefault(rules[i].Scope, admissionregistrationv1.AllScopes)
	}
}

func orDefault[T any](p *T, value T) *T {
	if p != nil {
		return p
	}
	return &value
}

func orEmptySelector(s *metav1.LabelSelector) *metav1.LabelSelector {
	if s != nil {
		return s
	}
	return &metav1.LabelSelector{}
}

// The validation of admissionregistration.k8s.io objects is kube's in its essentials, with its
// messages: what the admission plugins need to run them. Expressions are compiled by the
// plugins, which report errors in them when a request is admitted (and in a policy's
// status.typeChecking), not by validation, as kube does.

func validateValidatingWebhookConfiguration(c, _ *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	hooks := make([]webhookFields, len(c.Webhooks))
	for i := range c.Webhooks {
		hooks[i] = validatingWebhookFields(&c.Webhooks[i])
	}
	return validateWebhooks(hooks)
}

func validateMutatingWebhookConfiguration(c, _ *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	hooks := make([]webhookFields, len(c.Webhooks))
	for i := range c.Webhooks {
		hooks[i] = mutatingWebhookFields(&c.Webhooks[i])
	}
	return validateWebhooks(hooks)
}

func validateWebhooks(hooks []webhookFields) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, w := range hooks {
		path := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhookName(path, w.name, names)...)
		errs = append(errs, validateWebhookCommon(path, *w.clientConfig, w.sideEffects, *w.timeoutSeconds, w.admissionReviewVersions, w.rules)...)
	}
	return errs
}

// validateWebhookName requires a unique, fully qualified name (three segments at least).
func validateWebhookName(path *field.Path, name string, seen sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	if seen.Has(name) {
		errs = append(errs, field.Duplicate(path.Child("name"), name))
	}
	seen.Insert(name)
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path.Child("name"), name, msg))
	}
	if len(strings.Split(name, ".")) < webhookNameSegmentsNeeded {
		errs = append(errs, field.Invalid(path.Child("name"), name, "should be a domain with at least three segments separated by dots"))
	}
	return errs
}

func validateWebhookCommon(path *field.Path, cc admissionregistrationv1.WebhookClientConfig, sideEffects *admissionregistrationv1.SideEffectClass,
	timeout *int32, reviewVersions []string, rules []admissionregistrationv1.RuleWithOperations) field.ErrorList {
	errs := validateClientConfig(path.Child("clientConfig"), cc)
	supported := []string{string(admissionregistrationv1.SideEffectClassNone), string(admissionregistrationv1.SideEffectClassNoneOnDryRun)}
	switch {
	case sideEffects == nil:
		errs = append(errs, field.Required(path.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(supported, ", "))))
	case !sets.New(supported...).Has(string(*sideEffects)):
		errs = append(errs, field.NotSupported(path.Child("sideEffects"), *sideEffects, supported))
	}
	if timeout != nil && (*timeout < 1 || *timeout > maxWebhookTimeout) {
		errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), *timeout, "the timeout value must be between 1 and 30 seconds"))
	}
	if !sets.New(reviewVersions...).HasAny("v1", "v1beta1") {
		errs = append(errs, field.Required(path.Child("admissionReviewVersions"), "must specify one of v1, v1beta1"))
	}
	for i, rule := range rules {
		errs = append(errs, validateAdmissionRule(path.Child("rules").Index(i), rule)...)
	}
	return errs
}

func validateClientConfig(path *field.Path, cc admissionregistrationv1.WebhookClientConfig) field.ErrorList {
	switch {
	case cc.URL == nil && cc.Service == nil:
		return field.ErrorList{field.Required(path, "exactly one of url or service is required")}
	case cc.URL != nil && cc.Service != nil:
		return field.ErrorList{field.Required(path, "exactly one of url or service is required")}
	case cc.Service != nil:
		var errs field.ErrorList
		if cc.Service.Name == "" {
			errs = append(errs, field.Required(path.Child("service", "name"), "service name is required"))
		}
		if cc.Service.Namespace == "" {
			errs = append(errs, field.Required(path.Child("service", "namespace"), "service namespace is required"))
		}
		return errs
	}
	u, err := url.Parse(*cc.URL)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(path.Child("url"), *cc.URL, "url must be a valid URL: "+err.Error())}
	case u.Scheme != "https":
		return field.ErrorList{field.Invalid(path.Child("url"), u.Scheme, "'https' is the only allowed URL scheme")}
	case u.Host == "":
		return field.ErrorList{field.Invalid(path.Child("url"), u.Host, "host must be specified")}
	case u.User != nil:
		return field.ErrorList{field.Invalid(path.Child("url"), u.User.String(), "user information is not permitted in the URL")}
	case u.Fragment != "" || u.RawQuery != "":
		return field.ErrorList{field.Invalid(path.Child("url"), *cc.URL, "fragments and query parameters are not permitted in the URL")}
	}
	return nil
}

var supportedOperations = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}

func validateAdmissionRule(path *field.Path, rule admissionregistrationv1.RuleWithOperations) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Operations) == 0 {
		errs = append(errs, field.Required(path.Child("operations"), ""))
	}
	for i, op := range rule.Operations {
		if !sets.New(supportedOperations...).Has(string(op)) {
			errs = append(errs, field.NotSupported(path.Child("operations").Index(i), op, supportedOperations))
		}
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(path.Child("apiGroups"), ""))
	}
	if len(rule.APIVersions) == 0 {
		errs = append(errs, field.Required(path.Child("apiVersions"), ""))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(path.Child("resources"), ""))
	}
	if s := rule.Scope; s != nil && *s != admissionregistrationv1.AllScopes && *s != admissionregistrationv1.ClusterScope && *s != admissionregistrationv1.NamespacedScope {
		errs = append(errs, field.NotSupported(path.Child("scope"), *s, []string{string(admissionregistrationv1.AllScopes), string(admissionregistrationv1.ClusterScope), string(admissionregistrationv1.NamespacedScope)}))
	}
	return errs
}

func validateValidatingAdmissionPolicy(p, _ *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	spec, path := &p.Spec, field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validateMatchConstraints(path.Child("matchConstraints"), spec.MatchConstraints)...)
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(path.Child("validations"), "validations or auditAnnotations must contain at least one item"))
	}
	for i, v := range spec.Validations {
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(path.Child("validations").Index(i).Child("expression"), "expression is not specified"))
		}
	}
	if pk := spec.ParamKind; pk != nil {
		if pk.Kind == "" {
			errs = append(errs, field.Required(path.Child("paramKind", "kind"), ""))
		}
		if pk.APIVersion == "" {
			errs = append(errs, field.Required(path.Child("paramKind", "apiVersion"), ""))
		}
	}
	return errs
}

func validateMutatingAdmissionPolicy(p, _ *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	spec, path := &p.Spec, field.NewPath("spec")
	errs := validateMatchConstraints(path.Child("matchConstraints"), spec.MatchConstraints)
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(path.Child("mutations"), "mutations must contain at least one item"))
	}
	return errs
}

func validateMatchConstraints(path *field.Path, m *admissionregistrationv1.MatchResources) field.ErrorList {
	if m == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	if len(m.ResourceRules) == 0 {
		return field.ErrorList{field.Required(path.Child("resourceRules"), "")}
	}
	var errs field.ErrorList
	for i, rule := range m.ResourceRules {
		errs = append(errs, validateAdmissionRule(path.Child("resourceRules").Index(i), rule.RuleWithOperations)...)
	}
	return errs
}

var validationActions = []string{string(admissionregistrationv1.Audit), string(admissionregistrationv1.Deny), string(admissionregistrationv1.Warn)}

func validateValidatingAdmissionPolicyBinding(b, _ *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	spec, path := &b.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if spec.PolicyName == "" {
		errs = append(errs, field.Required(path.Child("policyName"), ""))
	}
	errs = append(errs, validateParamRef(path.Child("paramRef"), spec.ParamRef)...)
	actions := path.Child("validationActions")
	if len(spec.ValidationActions) == 0 {
		return append(errs, field.Required(actions, "at least one validation action is required"))
	}
	seen := sets.New[admissionregistrationv1.ValidationAction]()
	for i, action := range spec.ValidationActions {
		switch {
		case seen.Has(action):
			errs = append(errs, field.Duplicate(actions.Index(i), action))
		case !sets.New(validationActions...).Has(string(action)):
			errs = append(errs, field.NotSupported(actions.Index(i), action, validationActions))
		}
		seen.Insert(action)
	}
	if seen.Has(admissionregistrationv1.Deny) && seen.Has(admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(actions, spec.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}

func validateMutatingAdmissionPolicyBinding(b, _ *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
	spec, path := &b.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if spec.PolicyName == "" {
		errs = append(errs, field.Required(path.Child("policyName"), ""))
	}
	return append(errs, validateParamRef(path.Child("paramRef"), spec.ParamRef)...)
}

func validateParamRef(path *field.Path, ref *admissionregistrationv1.ParamRef) field.ErrorList {
	if ref == nil {
		return nil
	}
	var errs field.ErrorList
	if ref.Name != "" && ref.Selector != nil {
		errs = append(errs, field.Forbidden(path.Child("name"), "name and selector are mutually exclusive"))
	}
	if ref.Name == "" && ref.Selector == nil {
		errs = append(errs, field.Required(path, "one of name or selector must be specified"))
	}
	actions := []string{string(admissionregistrationv1.AllowAction), string(admissionregistrationv1.DenyAction)}
	switch a := ref.ParameterNotFoundAction; {
	case a == nil:
		errs = append(errs, field.Required(path.Child("parameterNotFoundAction"), ""))
	case !sets.New(actions...).Has(string(*a)):
		errs = append(errs, field.NotSupported(path.Child("parameterNotFoundAction"), *a, actions))
	}
	return errs
}

// Tables as kube prints the admission configuration types (entries of tables).

func webhookTable(count func(*unstructured.Unstructured) int) builtinTable {
	return builtinTable{
		columns: []metav1.TableColumnDefinition{nameColumn,
			{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
			ageColumn},
		cells: func(u *unstructured.Unstructured) []any { return []any{u.GetName(), int64(count(u)), age(u)} },
	}
}

func policyTable(column, description string, read func(*unstructured.Unstructured) (int, *admissionregistrationv1.ParamKind)) builtinTable {
	return builtinTable{
		columns: []metav1.TableColumnDefinition{nameColumn,
			{Name: column, Type: "integer", Description: description},
			{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
			ageColumn},
		cells: func(u *unstructured.Unstructured) []any {
			count, paramKind := read(u)
			shown := "<unset>"
			if paramKind != nil {
				shown = paramKind.APIVersion + "/" + paramKind.Kind
			}
			return []any{u.GetName(), int64(count), shown, age(u)}
		},
	}
}

func policyBindingTable(read func(*unstructured.Unstructured) (string, *admissionregistrationv1.ParamRef)) builtinTable {
	return builtinTable{
		columns: []metav1.TableColumnDefinition{nameColumn,
			{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to"},
			{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configration param"},
			ageColumn},
		cells: func(u *unstructured.Unstructured) []any {
			policy, ref := read(u)
			return []any{u.GetName(), policy, paramRefShown(ref), age(u)}
		},
	}
}

// paramRefShown prints a binding's paramRef as kube does: namespace/name, */name for any
// namespace, or the selector.
func paramRefShown(ref *admissionregistrationv1.ParamRef) string {
	switch {
	case ref == nil:
		return "<unset>"
	case ref.Name != "" && ref.Namespace != "":
		return ref.Namespace + "/" + ref.Name
	case ref.Name != "":
		return "*/" + ref.Name
	case ref.Selector != nil:
		return ref.Selector.String()
	}
	return "<unset>"
}
