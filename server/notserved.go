package server

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Why sqlkube does not serve a well-known Kubernetes type: it is a generic control plane (API
// storage, RBAC, CRDs), with no nodes, kubelets, scheduler or controller manager behind it.
const (
	reasonWorkloads = "it runs no workloads: there are no nodes, kubelets, scheduler or workload controllers behind it"
)

// notServed are kube-apiserver's built-in resources that sqlkube does not serve, by group and
// resource, with the reason.
var notServed = map[string]map[string]string{
	"resource.k8s.io": {"resourceclaims": reasonWorkloads, "resourceclaimtemplates": reasonWorkloads},
}

// errUnknownResource is kube-apiserver's 404 for a resource the server does not serve; for a
// well-known Kubernetes type, the message adds that sqlkube does not serve it, and why.
func errUnknownResource(group, resource string) error {
	reason, known := notServed[group][resource]
	if !known {
		return errNotFoundPath()
	}
	name := resource
	if group != "" {
		name += "." + group
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{},
		Message: "the server could not find the requested resource: sqlkube does not serve " + name + ", because " + reason +
			" (README.md lists what it serves)",
	}}
}
