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
