// Package flowcontrol keeps kube's API priority and fairness configuration in storage: the
// FlowSchemas and PriorityLevelConfigurations every kube-apiserver writes at start (its
// "bootstrap-system-flowcontrol-configuration" post-start hook), which the priority-and-fairness
// filter reads.
package flowcontrol

import (
	"context"
	"fmt"
	"sync/atomic"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/controllers"
	"github.com/sqlkube/sqlkube/server/registry"
)

// autoUpdateAnnotation marks a configuration object that kube-apiserver keeps as it ships it;
// an operator sets it to "false" to keep their own changes.
const autoUpdateAnnotation = flowcontrolv1.AutoUpdateAnnotationKey

// Bootstrap writes kube's mandatory and suggested configuration objects that are not stored yet.
// Objects already stored are left as they are, even when kube would update them.
type Bootstrap struct {
	deps controllers.Deps
	// suggested: write kube's suggested objects too, not only the mandatory ones (exempt and
	// catch-all), which the filter applies whether stored or not.
	suggested bool
	done      atomic.Bool
}

// NewBootstrap prepares the configuration writer; without suggested, it writes nothing (for
// tests that count objects and revisions).
func NewBootstrap(deps controllers.Deps, suggested bool) *Bootstrap {
	return &Bootstrap{deps: deps, suggested: suggested}
}

// Done reports whether Run has written every object.
func (b *Bootstrap) Done() bool { return b.done.Load() }

// Run writes the objects; a write another replica made first is a harmless AlreadyExists.
func (b *Bootstrap) Run(ctx context.Context) error {
	if !b.suggested {
		b.done.Store(true)
		return nil
	}
	var objects []metav1.Object
	for _, pl := range append(bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations...) {
		objects = append(objects, pl)
	}
	for _, fs := range append(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas...) {
		objects = append(objects, fs)
	}
	for _, obj := range objects {
		if err := b.create(ctx, obj); err != nil {
			return err
		}
	}
	b.done.Store(true)
	return nil
}

func (b *Bootstrap) create(ctx context.Context, obj metav1.Object) error {
	resourceName := "flowschemas"
	if _, ok := obj.(*flowcontrolv1.PriorityLevelConfiguration); ok {
		resourceName = "prioritylevelconfigurations"
	}
	r, ok := b.deps.Catalog.Lookup(builtin.FlowControlGroup, "v1", resourceName)
	if !ok {
		return fmt.Errorf("the catalog serves no %s", resourceName)
	}
	u, err := controllers.ToUnstructured(obj.(runtime.Object), r)
	if err != nil {
		return err
	}
	u.SetAnnotations(map[string]string{autoUpdateAnnotation: "true"})
	_, _, err = b.deps.Registry.Create(ctx, registry.Ref{Resource: r, Name: obj.GetName()}, u,
		&metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// fieldManager is who kube-apiserver writes the configuration objects as.
const fieldManager = "api-priority-and-fairness-config-producer-v1"
