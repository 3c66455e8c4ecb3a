package controllers

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
)

// KubeControllerManagers are the controllers of kube-controller-manager that sqlkube runs
// itself, by kube-controller-manager's names, so that it behaves as a cluster without one; a
// cluster whose kube-controller-manager runs them leaves them out (--controllers). The others
// sqlkube runs are kube-apiserver's own and always run.
var KubeControllerManagers = []string{
	names.NamespaceController,                       // deletes a deleted namespace's objects
	names.GarbageCollectorController,                // deletes objects whose owners are gone
	names.ServiceAccountController,                  // a default ServiceAccount in every namespace
	names.RootCACertificatePublisherController,      // kube-root-ca.crt in every namespace
	names.ClusterRoleAggregationController,          // aggregated ClusterRoles' rules
	names.ValidatingAdmissionPolicyStatusController, // ValidatingAdmissionPolicies' type checking
}

// Selection is which of KubeControllerManagers run (--controllers), in kube-controller-manager's
// syntax: "*" runs each not named "-NAME", otherwise only those named run. Nil runs them all.
type Selection []string

// Runs reports whether the selection runs the controller called name: as in
// kube-controller-manager, the first entry naming it decides ("name" runs it, "-name" does not),
// else "*" runs it.
func (s Selection) Runs(name string) bool {
	if s == nil {
		return true
	}
	for _, entry := range s {
		switch entry {
		case name:
			return true
		case "-" + name:
			return false
		}
	}
	return slices.Contains(s, "*")
}

// Validate refuses a name that is not one of KubeControllerManagers, with
// kube-controller-manager's message.
func (s Selection) Validate() error {
	for _, name := range s {
		name = strings.TrimPrefix(name, "-")
		if name != "*" && !slices.Contains(KubeControllerManagers, name) {
			return fmt.Errorf("%q is not in the list of known controllers (sqlkube runs %s)", name, strings.Join(KubeControllerManagers, ", "))
		}
	}
	return nil
}
