package builtin

import (
	"errors"
	"slices"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install" // scheduling's defaults and conversions in legacyscheme.Scheme
	schedulingapiv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"

	"github.com/sqlkube/sqlkube/server/resource"
)

// SchedulingGroup is the group of PriorityClasses.
const SchedulingGroup = "scheduling.k8s.io"

// schedulingResources are the scheduling.k8s.io/v1 types, served with kube-apiserver's own
// rules (kube).
func schedulingResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(SchedulingGroup, "v1", "priorityclasses", "PriorityClass", false, verbsAll, kube[schedulingv1.PriorityClass](kubeRules{
			strategy: priorityclass.Strategy, refuseDelete: refuseSystemPriorityClass,
		}), shortName("pc")),
	}
}

// refuseSystemPriorityClass is kube's 403 for a delete of a system PriorityClass.
func refuseSystemPriorityClass(name string) error {
	if !slices.Contains(schedulingapiv1.SystemPriorityClassNames(), name) {
		return nil
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: SchedulingGroup, Resource: "priorityclasses"}, name,
		errors.New("this is a system priority class and cannot be deleted"))
}
