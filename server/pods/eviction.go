package pods

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/fieldmanagers"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// Evict answers POST pods/NAME/eviction as kube-apiserver's create handler and EvictionREST do
// (the Eviction's namespace, if it names one, and its name must be the path's: 400), on the
// PodDisruptionBudgets' stored status (no disruption controller keeps it): a pod that is
// terminal, pending or being deleted is deleted without a budget; otherwise the one budget
// selecting it must allow a disruption (429 TooManyRequests with a DisruptionBudget cause when
// it does not, 500 for several budgets), which the eviction takes (disruptionsAllowed
// decremented, the pod recorded in disruptedPods); the pod then gets the DisruptionTarget
// condition and is deleted with the Eviction's deleteOptions. Success is a Success Status.
func (s *Subresources) Evict(ctx context.Context, namespace, pathName string, eviction *policyv1.Eviction, dryRun []string) (*metav1.Status, error) {
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(namespace, eviction); err != nil {
		return nil, err
	}
	if pathName != eviction.Name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if eviction.DeleteOptions != nil && ptr.Deref(eviction.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential, false) {
		return nil, apierrors.NewInvalid(policyv1.SchemeGroupVersion.WithKind("Eviction").GroupKind(), eviction.Name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions").Child("ignoreStoreReadErrorWithClusterBreakingPotential"), true, "can not be set for pod eviction, try after removing the option"),
		})
	}
	opts, err := deleteOptionsOf(eviction, dryRun)
	if err != nil {
		return nil, err
	}
	pod, err := s.internalPod(ctx, namespace, eviction.Name)
	if err != nil {
		return nil, err
	}
	if canIgnorePDB(pod) {
		if shouldEnforceResourceVersion(pod) && resourceVersionUnset(opts) {
			opts = withResourceVersion(opts, pod.ResourceVersion)
		}
		return success(), s.disruptAndDelete(ctx, namespace, eviction.Name, opts)
	}
	pdbs, err := s.budgetsOf(ctx, pod)
	if err != nil {
		return nil, err
	}
	if len(pdbs) > 1 {
		return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.", Code: http.StatusInternalServerError}, nil
	}
	unhealthyAllowed := false
	if len(pdbs) == 1 {
		pdb := &pdbs[0]
		unhealthyAllowed = !podutil.IsPodReady(pod) && (ptr.Deref(pdb.Spec.UnhealthyPodEvictionPolicy, "") == policyv1.AlwaysAllow ||
			(pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0))
		if !unhealthyAllowed {
			if err := s.takeDisruption(ctx, pod, pdb.Name, len(opts.DryRun) > 0); err != nil {
				return nil, err
			}
		}
	}
	if unhealthyAllowed {
		opts = withResourceVersion(opts, pod.ResourceVersion)
	}
	if err := s.disruptAndDelete(ctx, namespace, eviction.Name, opts); err != nil {
		if apierrors.IsConflict(err) && unhealthyAllowed && (eviction.DeleteOptions == nil || eviction.DeleteOptions.Preconditions == nil || eviction.DeleteOptions.Preconditions.ResourceVersion == nil) {
			return nil, tooManyRequests(pdbs[0].Name)
		}
		return nil, err
	}
	return success(), nil
}

func success() *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated}
}

// deleteOptionsOf are the Eviction's deleteOptions with the request's dryRun, as kube's
// propagateDryRun makes them: different dryRun values in both are an error (500, as kube
// answers it).
func deleteOptionsOf(eviction *policyv1.Eviction, dryRun []string) (*metav1.DeleteOptions, error) {
	if eviction.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: dryRun}, nil
	}
	opts := eviction.DeleteOptions.DeepCopy()
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = dryRun
	case len(dryRun) > 0 && !slices.Equal(opts.DryRun, dryRun):
		return nil, fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", dryRun, opts.DryRun)
	}
	return opts, nil
}

// canIgnorePDB and shouldEnforceResourceVersion are kube's EvictionREST's.
func canIgnorePDB(pod *api.Pod) bool {
	return pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed ||
		pod.Status.Phase == api.PodPending || !pod.DeletionTimestamp.IsZero()
}

func shouldEnforceResourceVersion(pod *api.Pod) bool {
	return pod.Status.Phase != api.PodSucceeded && pod.Status.Phase != api.PodFailed && pod.DeletionTimestamp.IsZero()
}

func resourceVersionUnset(opts *metav1.DeleteOptions) bool {
	return opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil
}

func withResourceVersion(opts *metav1.DeleteOptions, resourceVersion string) *metav1.DeleteOptions {
	opts = opts.DeepCopy()
	if opts.Preconditions == nil {
		opts.Preconditions = &metav1.Preconditions{}
	}
	opts.Preconditions.ResourceVersion = &resourceVersion
	return opts
}

// tooManyRequests is kube's answer while a budget's status is older than its spec.
func tooManyRequests(pdbName string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdbName),
	})
	return err
}

// budgetsOf are the PodDisruptionBudgets of the pod's namespace whose selector selects it.
func (s *Subresources) budgetsOf(ctx context.Context, pod *api.Pod) ([]policyv1.PodDisruptionBudget, error) {
	ref, err := s.ref("policy", "poddisruptionbudgets", pod.Namespace, "")
	if err != nil {
		return nil, err
	}
	var pdbs []policyv1.PodDisruptionBudget
	_, err = s.registry.List(ctx, ref, &internalversion.ListOptions{}, func(stored sqlstore.Object) error {
		pdb, err := decodeBudget(ref, stored)
		if err != nil {
			return err
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && selector.Matches(labels.Set(pod.Labels)) {
			pdbs = append(pdbs, *pdb)
		}
		return nil
	})
	return pdbs, err
}

func decodeBudget(ref registry.Ref, stored sqlstore.Object) (*policyv1.PodDisruptionBudget, error) {
	obj, err := storedobj.DecodeServed(ref.Resource, stored.Value)
	if err != nil {
		return nil, err
	}
	pdb := &policyv1.PodDisruptionBudget{}
	return pdb, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pdb)
}

// takeDisruption is kube's checkAndDecrement on the budget as stored: its status must allow a
// disruption, which the eviction takes, recording the pod in disruptedPods (not on a dry run).
func (s *Subresources) takeDisruption(ctx context.Context, pod *api.Pod, pdbName string, dryRun bool) error {
	ref, err := s.ref("policy", "poddisruptionbudgets", pod.Namespace, pdbName)
	if err != nil {
		return err
	}
	_, err = s.registry.GuaranteedUpdate(ctx, ref, dryRun, func(obj *unstructured.Unstructured) error {
		old := obj.DeepCopy()
		err := builtin.ChangeAs(obj, func(pdb *policyv1.PodDisruptionBudget) error {
			if err := checkBudget(pdb); err != nil {
				return err
			}
			pdb.Status.DisruptionsAllowed--
			if pdb.Status.DisruptionsAllowed == 0 {
				pdbhelper.UpdateDisruptionAllowedCondition(pdb)
			}
			if pdb.Status.DisruptedPods == nil {
				pdb.Status.DisruptedPods = map[string]metav1.Time{}
			}
			pdb.Status.DisruptedPods[pod.Name] = metav1.Now()
			return nil
		})
		if err != nil {
			return err
		}
		// kube's eviction writes the status with its loopback client's UpdateStatus, which
		// records it as kube-apiserver's.
		*obj = *fieldmanagers.Record(ctx, ref.Resource, "status", apiServerManager, obj, old)
		return nil
	})
	return err
}

// apiServerManager is the field manager of what kube-apiserver writes itself: its loopback
// client's user agent.
const apiServerManager = "kube-apiserver"

// maxDisruptedPods is kube's EvictionREST's MaxDisruptedPodSize (its package, which serves the
// pods' streams, would bring the kubelet's stream libraries along for one number).
const maxDisruptedPods = 2000

// checkBudget is kube's check that pdb's status allows one more disruption.
func checkBudget(pdb *policyv1.PodDisruptionBudget) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return tooManyRequests(pdb.Name)
	}
	forbidden := func(err, why string) error {
		e := apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, errors.New(err))
		e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", pdb.Name, why),
		})
		return e
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return forbidden("pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
	}
	if len(pdb.Status.DisruptedPods) > maxDisruptedPods {
		return forbidden("DisruptedPods map too big - too many evictions not confirmed by PDB controller", "too many pending evictions not confirmed by PDB controller")
	}
	if pdb.Status.DisruptionsAllowed > 0 {
		return nil
	}
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	condition := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	var msg string
	switch {
	case condition != nil && condition.Status == metav1.ConditionFalse && len(condition.Message) > 0 && condition.Reason == policyv1.SyncFailedReason:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, condition.Message)
	case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
		msg = fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	case condition != nil && condition.Status == metav1.ConditionFalse && len(condition.Message) > 0:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, condition.Reason, condition.Message)
	default:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
	}
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: msg})
	return err
}

// disruptAndDelete is kube's addConditionAndDeletePod: the pod gets the DisruptionTarget
// condition (not on a dry run), then is deleted with opts; its preconditions hold for both.
func (s *Subresources) disruptAndDelete(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) error {
	ref, err := s.ref("", "pods", namespace, name)
	if err != nil {
		return err
	}
	if len(opts.DryRun) == 0 {
		stored, err := s.registry.GuaranteedUpdate(ctx, ref, false, func(obj *unstructured.Unstructured) error {
			if opts.Preconditions != nil {
				if err := checkPodPreconditions(name, opts.Preconditions, obj); err != nil {
					return err
				}
			}
			return builtin.ChangeInternalPod(obj, func(pod *api.Pod) error {
				podutil.UpdatePodCondition(&pod.Status, &api.PodCondition{
					Type: api.DisruptionTarget, Status: api.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting",
				})
				return nil
			})
		})
		if err != nil {
			return err
		}
		if !resourceVersionUnset(opts) {
			opts = withResourceVersion(opts, fmt.Sprint(stored.Revision))
		}
	}
	_, _, err = s.registry.Delete(ctx, ref, opts)
	return err
}

// checkPodPreconditions are the eviction's preconditions on the pod it updates, worded as
// kube's eviction words them.
func checkPodPreconditions(name string, p *metav1.Preconditions, obj *unstructured.Unstructured) error {
	kind := api.Resource("Pod")
	kind.Resource = "Pod"
	if uid := p.UID; uid != nil && len(*uid) > 0 && *uid != obj.GetUID() {
		return apierrors.NewConflict(kind, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *uid, obj.GetUID()))
	}
	if rv := p.ResourceVersion; rv != nil && len(*rv) > 0 && *rv != obj.GetResourceVersion() {
		return apierrors.NewConflict(kind, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *rv, obj.GetResourceVersion()))
	}
	return nil
}
