package rbac

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Covers reports whether the owner's rules grant everything the servant's rules grant, and
// lists what they do not, one simple rule (one verb, group, resource and name, or one verb and
// URL) at a time. This is kube's escalation check: a user may write a role or binding only for
// rules it already holds.
func Covers(owner, servant []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	var missing []rbacv1.PolicyRule
	for _, rule := range servant {
		for _, simple := range breakdown(rule) {
			if !slices.ContainsFunc(owner, func(o rbacv1.PolicyRule) bool { return ruleCovers(&o, &simple) }) {
				missing = append(missing, simple)
			}
		}
	}
	return len(missing) == 0, missing
}

// breakdown splits a rule into simple rules of one verb each and one group, resource and
// resource name (or one non-resource URL).
func breakdown(rule rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var simple []rbacv1.PolicyRule
	for _, verb := range rule.Verbs {
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				if len(rule.ResourceNames) == 0 {
					simple = append(simple, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}})
				}
				for _, name := range rule.ResourceNames {
					simple = append(simple, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: []string{name}})
				}
			}
		}
		for _, url := range rule.NonResourceURLs {
			simple = append(simple, rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{url}})
		}
	}
	return simple
}

// ruleCovers reports whether owner grants all of the simple rule requested.
func ruleCovers(owner, requested *rbacv1.PolicyRule) bool {
	return coversAll(owner.Verbs, requested.Verbs, rbacv1.VerbAll) &&
		coversAll(owner.APIGroups, requested.APIGroups, rbacv1.APIGroupAll) &&
		resourcesCover(owner.Resources, requested.Resources) &&
		urlsCover(owner.NonResourceURLs, requested.NonResourceURLs) &&
		namesCover(owner.ResourceNames, requested.ResourceNames)
}

func coversAll(owned, requested []string, all string) bool {
	if slices.Contains(owned, all) {
		return true
	}
	for _, r := range requested {
		if !slices.Contains(owned, r) {
			return false
		}
	}
	return true
}

// resourcesCover: "*" covers all; otherwise each requested resource is owned as itself or, for
// a subresource "res/sub", as "*/sub".
func resourcesCover(owned, requested []string) bool {
	if slices.Contains(owned, rbacv1.ResourceAll) {
		return true
	}
	for _, r := range requested {
		if slices.Contains(owned, r) {
			continue
		}
		_, sub, ok := strings.Cut(r, "/")
		if !ok || !slices.Contains(owned, "*/"+sub) {
			return false
		}
	}
	return true
}

// urlsCover: each requested URL is owned as itself, or under an owned prefix ending in "*".
func urlsCover(owned, requested []string) bool {
	for _, r := range requested {
		covered := slices.ContainsFunc(owned, func(o string) bool {
			prefix, star := strings.CutSuffix(o, "*")
			return o == r || (star && strings.HasPrefix(r, prefix))
		})
		if !covered {
			return false
		}
	}
	return true
}

// namesCover: an owner rule without names covers any; one with names covers only requests
// for those names, so never a request for all names.
func namesCover(owned, requested []string) bool {
	if len(owned) == 0 {
		return true
	}
	return len(requested) > 0 && coversAll(owned, requested, "")
}

// EscalationError is kube's refusal of a role or binding granting rules the user lacks: the
// missing rules, compacted and sorted, one per line, then the errors of the roles the user's
// bindings refer to that could not be read (kube prints them as a list of one aggregate).
func EscalationError(u user.Info, missing []rbacv1.PolicyRule, resolution []error) error {
	var lines []string
	for _, r := range compact(missing) {
		if line := compactString(r); !slices.Contains(lines, line) {
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.GetName(), u.GetGroups(), strings.Join(lines, "\n"))
	if len(resolution) > 0 {
		msg += fmt.Sprintf("; resolution errors: %v", []error{utilerrors.NewAggregate(resolution)})
	}
	return errors.New(msg)
}

// compact merges simple resource rules that differ only in their verb, so that a missing
// get, list and watch on one resource reads as one rule.
func compact(simple []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	merged := map[[2]string]int{}
	for _, r := range simple {
		if len(r.Resources) != 1 || len(r.ResourceNames) > 0 {
			out = append(out, r)
			continue
		}
		key := [2]string{r.APIGroups[0], r.Resources[0]}
		if i, ok := merged[key]; ok {
			if !slices.Contains(out[i].Verbs, r.Verbs[0]) {
				out[i].Verbs = append(out[i].Verbs, r.Verbs[0])
			}
			continue
		}
		merged[key] = len(out)
		out = append(out, rbacv1.PolicyRule{Verbs: slices.Clone(r.Verbs), APIGroups: r.APIGroups, Resources: r.Resources})
	}
	return out
}

// compactString prints a rule as kube's messages do: its non-empty fields, quoted.
func compactString(r rbacv1.PolicyRule) string {
	var fields []string
	for _, f := range []struct {
		name   string
		values []string
	}{{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"ResourceNames", r.ResourceNames}, {"NonResourceURLs", r.NonResourceURLs}, {"Verbs", r.Verbs}} {
		if len(f.values) > 0 {
			fields = append(fields, fmt.Sprintf("%s:%s", f.name, quoteList(f.values)))
		}
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

func quoteList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	return "[" + strings.Join(quoted, " ") + "]"
}
