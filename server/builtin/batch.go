package builtin

import (
	batchv1 "k8s.io/api/batch/v1"
	_ "k8s.io/kubernetes/pkg/apis/batch/install" // batch's defaults and conversions in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"

	"github.com/sqlkube/sqlkube/server/resource"
)

// BatchGroup is the group of Jobs and CronJobs.
const BatchGroup = "batch"

// jobOrphanWarning is the warning kube-apiserver's Job storage gives a delete that names no
// propagation policy: batch/v1 Jobs orphan their Pods by default.
const jobOrphanWarning = "child pods are preserved by default when jobs are deleted; " +
	"set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"

// batchResources are the batch/v1 types, served with kube-apiserver's own rules (kube). A
// Job's status.successful field label reads status.succeeded, as its GetAttrs does.
func batchResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(BatchGroup, "v1", "cronjobs", "CronJob", true, verbsAll, kube[batchv1.CronJob](kubeRules{
			strategy: cronjob.Strategy, status: cronjob.StatusStrategy,
		}), describe(shortName("cj"), inCategoryAll, withStatus)),
		builtin(BatchGroup, "v1", "jobs", "Job", true, verbsAll, kube[batchv1.Job](kubeRules{
			strategy: job.Strategy, status: job.StatusStrategy,
			fields:        map[string][]string{"status.successful": {"status", "succeeded"}},
			orphanWarning: jobOrphanWarning,
		}), describe(inCategoryAll, withStatus)),
	}
}
