package builtin

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	_ "k8s.io/kubernetes/pkg/apis/events/install" // the conversions of events.k8s.io events to core's in legacyscheme.Scheme
	"k8s.io/kubernetes/pkg/registry/core/event"

	"github.com/sqlkube/sqlkube/server/resource"
)

// EventsGroup is the group of events.k8s.io events.
const EventsGroup = "events.k8s.io"

// eventsResources are the events.k8s.io/v1 events: core v1 events (stored as such, the same
// objects, as in kube-apiserver) served in their newer shape with kube's own rules for them
// (core's event strategy, which validates by the version it is served in). Their field labels
// are those kube converts to core's, each reading the stored core event's field.
func eventsResources() []*resource.Resource {
	return []*resource.Resource{
		builtin(EventsGroup, "v1", "events", "Event", true, verbsAll, kube[eventsv1.Event](kubeRules{
			strategy: event.Strategy, fields: eventsV1Fields,
		}), describe(shortName("ev"), storedAs(corev1.SchemeGroupVersion))),
	}
}

// eventsV1Fields are the events.k8s.io/v1 field labels, with the paths of the stored core v1
// event's fields they read.
var eventsV1Fields = map[string][]string{
	"regarding.kind":            {"involvedObject", "kind"},
	"regarding.namespace":       {"involvedObject", "namespace"},
	"regarding.name":            {"involvedObject", "name"},
	"regarding.uid":             {"involvedObject", "uid"},
	"regarding.apiVersion":      {"involvedObject", "apiVersion"},
	"regarding.resourceVersion": {"involvedObject", "resourceVersion"},
	"regarding.fieldPath":       {"involvedObject", "fieldPath"},
	"reportingController":       {"reportingComponent"},
	"reason":                    {"reason"},
	"type":                      {"type"},
}
