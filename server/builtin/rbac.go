package builtin

import (
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RBACGroup serves Roles, ClusterRoles and their bindings.
const RBACGroup = rbacv1.GroupName

// validateRole checks a Role as kube does: every rule valid, none about non-resource URLs.
func validateRole(role, _ *rbacv1.Role) field.ErrorList {
	return validateRules(role.Rules, true)
}

// validateClusterRole checks a ClusterRole's rules and its aggregation selectors.
func validateClusterRole(role, _ *rbacv1.ClusterRole) field.ErrorList {
	errs := validateRules(role.Rules, false)
	if role.AggregationRule == nil {
		return errs
	}
	path := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(role.AggregationRule.ClusterRoleSelectors) == 0 {
		return append(errs, field.Required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		errs = append(errs, metav1validation.ValidateLabelSelector(&role.AggregationRule.ClusterRoleSelectors[i], opts, path.Index(i))...)
	}
	return errs
}

func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		errs = append(errs, validateRule(r, namespaced, field.NewPath("rules").Index(i))...)
	}
	return errs
}

// validateRule: a rule needs verbs, and either non-resource URLs (cluster-wide only) or API
// groups and resources, never both.
func validateRule(r rbacv1.PolicyRule, namespaced bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Verbs) == 0 {
		errs = append(errs, field.Required(path.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(r.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(path.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(path.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// validateRoleBinding checks a RoleBinding's roleRef (a Role or ClusterRole, never changed) and
// subjects.
func validateRoleBinding(b, old *rbacv1.RoleBinding) field.ErrorList {
	errs := validateRoleRef(b.RoleRef, []string{"Role", "ClusterRole"})
	errs = append(errs, validateSubjects(b.Subjects, true)...)
	if old != nil {
		errs = append(errs, roleRefUnchanged(b.RoleRef, old.RoleRef)...)
	}
	return errs
}

// validateClusterRoleBinding checks a ClusterRoleBinding: its roleRef is a ClusterRole.
func validateClusterRoleBinding(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := validateRoleRef(b.RoleRef, []string{"ClusterRole"})
	errs = append(errs, validateSubjects(b.Subjects, false)...)
	if old != nil {
		errs = append(errs, roleRefUnchanged(b.RoleRef, old.RoleRef)...)
	}
	return errs
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("roleRef")
	if ref.APIGroup != RBACGroup {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{RBACGroup}))
	}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	for _, msg := range path.IsValidPathSegmentName(ref.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
	}
	return errs
}

// roleRefUnchanged refuses a new roleRef with kube's message, which names the value as kube's
// internal type prints it: with Go's field names, having no JSON tags.
func roleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	return apivalidation.ValidateImmutableField(internalRoleRef(ref), internalRoleRef(old), field.NewPath("roleRef"))
}

// internalRoleRef is the shape of kube's internal rbac.RoleRef, the type its validation reports.
type internalRoleRef struct{ APIGroup, Kind, Name string }

// validateSubjects: users and groups belong to the RBAC API group, ServiceAccounts to the core
// group with a valid name and, in a ClusterRoleBinding, a namespace.
func validateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, s := range subjects {
		p := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			errs = append(errs, validateServiceAccountSubject(s, namespaced, p)...)
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != RBACGroup {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{RBACGroup}))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}

func validateServiceAccountSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.APIGroup != "" {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
	}
	if s.Name != "" {
		for _, msg := range apivalidation.ValidateServiceAccountName(s.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
		}
	}
	if s.Namespace == "" && !namespaced {
		errs = append(errs, field.Required(p.Child("namespace"), ""))
	}
	return errs
}

// defaultRoleBinding applies kube's defaulting of rbac/v1: a roleRef or subject naming a user or
// group without an API group gets the RBAC one.
func defaultRoleBinding(b *rbacv1.RoleBinding) {
	defaultRoleRef(&b.RoleRef)
	defaultSubjects(b.Subjects)
}

func defaultClusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	defaultRoleRef(&b.RoleRef)
	defaultSubjects(b.Subjects)
}

func defaultRoleRef(ref *rbacv1.RoleRef) {
	if ref.APIGroup == "" {
		ref.APIGroup = RBACGroup
	}
}

func defaultSubjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = RBACGroup
		}
	}
}

// roleTable and bindingTable are kubectl's columns for RBAC objects.
var roleTable = builtinTable{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Created At", Type: "date", Description: metadataDocs["creationTimestamp"]}},
	cells: func(u *unstructured.Unstructured) []any {
		return []any{u.GetName(), u.GetCreationTimestamp().UTC().Format(time.RFC3339)}
	},
}

var bindingTable = builtinTable{
	columns: []metav1.TableColumnDefinition{nameColumn,
		{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
		ageColumn,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the roleBinding"},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the roleBinding"},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the roleBinding"}},
	cells: func(u *unstructured.Unstructured) []any {
		b := decodeForTable[rbacv1.RoleBinding](u)
		var users, groups, sas []string
		for _, s := range b.Subjects {
			switch s.Kind {
			case rbacv1.UserKind:
				users = append(users, s.Name)
			case rbacv1.GroupKind:
				groups = append(groups, s.Name)
			case rbacv1.ServiceAccountKind:
				sas = append(sas, s.Namespace+"/"+s.Name)
			}
		}
		return []any{u.GetName(), b.RoleRef.Kind + "/" + b.RoleRef.Name, age(u),
			strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
	},
}
