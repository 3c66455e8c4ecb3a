// Package apiservices keeps a local APIService for every group version the server serves, as
// kube-apiserver's aggregator does: kube-aggregator's own autoregister controller writes them
// through the loopback client, the built-ins' at start (kept as they are while the server runs)
// and the CRDs' as the CRDs come and go (kube's CRD registration controller's part). sqlkube
// aggregates no API server: the APIServices describe what it serves itself.
package apiservices

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
	localavailability "k8s.io/kube-aggregator/pkg/controllers/status/local"
	availabilitymetrics "k8s.io/kube-aggregator/pkg/controllers/status/metrics"

	"github.com/sqlkube/sqlkube/server/discovery"
	"github.com/sqlkube/sqlkube/server/resource"
)

// Catalog is where the served types come from. *catalog.Catalog implements it.
type Catalog interface {
	Resources() (resources map[string]*resource.Resource, generation uint64)
	// Changed is closed the next time the types may change.
	Changed() <-chan struct{}
}

// workers are the autoregister controller's, as kube-apiserver runs it.
const workers = 5

// Run keeps the APIServices of types' group versions through the client config (the server's
// loopback) until ctx ends, and keeps local APIServices' Available condition true, as kube's
// local availability controller does (whoever wrote it otherwise).
func Run(ctx context.Context, types Catalog, config *rest.Config) error {
	client, err := aggregatorclient.NewForConfig(config)
	if err != nil {
		return err
	}
	informers := aggregatorinformers.NewSharedInformerFactory(client, 0)
	register := autoregister.NewAutoRegisterController(informers.Apiregistration().V1().APIServices(), client.ApiregistrationV1())
	availability, err := localavailability.New(informers.Apiregistration().V1().APIServices(), client.ApiregistrationV1(), availabilitymetrics.New())
	if err != nil {
		return err
	}
	registered := map[string]bool{}
	changed := types.Changed()
	resources, generation := types.Resources()
	follow(register, registered, resources, true)
	informers.Start(ctx.Done())
	go register.Run(workers, ctx.Done())
	go availability.Run(workers, ctx.Done())
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		changed = types.Changed()
		var now uint64
		if resources, now = types.Resources(); now != generation {
			generation = now
			follow(register, registered, resources, false)
		}
	}
}

// registration is what follow asks of kube's autoregister controller.
type registration = autoregister.AutoAPIServiceRegistration

// follow tells register the APIServices of resources' group versions: at start every one, the
// built-ins' to be synced on start only; later, the CRDs' that appeared, and those of the
// registered ones that went away are removed.
func follow(register registration, registered map[string]bool, resources map[string]*resource.Resource, start bool) {
	current := map[string]bool{}
	for _, gv := range discovery.LocalGroupVersions(resources) {
		current[gv.Name()] = true
		if registered[gv.Name()] || !gv.CRD && !start {
			continue
		}
		registered[gv.Name()] = true
		service := apiService(gv)
		if gv.CRD {
			register.AddAPIServiceToSync(service)
		} else {
			register.AddAPIServiceToSyncOnStart(service)
		}
	}
	for name := range registered {
		if !current[name] {
			delete(registered, name)
			register.RemoveAPIServiceToSync(name)
		}
	}
}

// apiService is gv's local APIService, as kube-apiserver makes it.
func apiService(gv discovery.LocalGroupVersion) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Name()},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: gv.Group, Version: gv.Version,
			GroupPriorityMinimum: gv.GroupPriorityMinimum, VersionPriority: gv.VersionPriority,
		},
	}
}
