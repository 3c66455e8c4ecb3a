package builtin

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"

	"github.com/sqlkube/sqlkube/server/resource"
)

// AutoscalingGroup is the group of HorizontalPodAutoscalers (and of the Scales of /scale).
const AutoscalingGroup = "autoscaling"

// autoscalingResources are the HorizontalPodAutoscalers, served as autoscaling/v2 and v1 with
// kube-apiserver's own rules (kube), and stored as v2, as kube-apiserver stores them: the v1
// ones are converted by kube's scheme (storedAs).
func autoscalingResources() []*resource.Resource {
	hpa := describe(shortName("hpa"), inCategoryAll, withStatus, storedAs(autoscalingv2.SchemeGroupVersion))
	rules := kubeRules{strategy: horizontalpodautoscaler.Strategy, status: horizontalpodautoscaler.StatusStrategy}
	return []*resource.Resource{
		builtin(AutoscalingGroup, "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, verbsAll,
			kube[autoscalingv2.HorizontalPodAutoscaler](rules), hpa),
		builtin(AutoscalingGroup, "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, verbsAll,
			kube[autoscalingv1.HorizontalPodAutoscaler](rules), hpa),
	}
}
