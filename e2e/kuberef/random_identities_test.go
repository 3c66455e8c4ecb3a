package kuberef

import (
	"strings"
	"testing"
)

// fullRandomRequests is how many random requests the full comparison sends to each server.
const fullRandomRequests = 2000

// identity is who sends a sequence of random requests: a user of identities (as), or the admin
// impersonating one (headers).
type identity struct {
	as      string
	headers map[string]string
}

// randomIdentities are who the full comparison's random sequences are sent as: the admin
// (twice as often as the others), Widgets' editor and reader, a user granted nothing, and the
// admin impersonating the editor.
var randomIdentities = []identity{
	{}, {},
	{as: "widget-editor"},
	{as: "widget-reader"},
	{as: "nobody"},
	{headers: map[string]string{"Impersonate-User": "widget-editor", "Impersonate-Group": "widget-editors"}},
}

// asIdentity sends steps as one of g's identities, but for the write of the marker that ends a
// watch's read: it stays the admin's, so that every watch that opened ends.
func (g *generator) asIdentity(steps []step) []step {
	id := g.identities[g.r.IntN(len(g.identities))]
	for i := range steps {
		if steps[i].path != "" && !strings.Contains(steps[i].path, "/"+g.marker) {
			steps[i].as, steps[i].headers = id.as, id.headers
		}
	}
	return steps
}

// randomIdentitySetup creates the Widget CRD and grants the random identities their rights on
// Widgets in the default namespace, then waits until each server's authorizer has seen them.
func randomIdentitySetup() []step {
	widgetRole := func(name, verbs string) step {
		return step{method: "POST", path: rbacAPI + "/clusterroles", setup: true,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"` + name + `"},
"rules":[{"apiGroups":["example.com"],"resources":["widgets"],"verbs":[` + verbs + `]}]}`}
	}
	binding := func(name, groupName string) step {
		return step{method: "POST", path: rbacAPI + "/namespaces/default/rolebindings", setup: true,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + name + `"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + name + `"},"subjects":[` + group(groupName) + `]}`}
	}
	return []step{
		{method: "POST", path: crds, body: widgetCRD, setup: true},
		{method: "GET", path: widgets, setup: true, waitFor: 200},
		widgetRole("kuberef-widget-editor", `"get","list","watch","create","update","patch","delete","deletecollection"`),
		binding("kuberef-widget-editor", "widget-editors"),
		widgetRole("kuberef-widget-reader", `"get","list","watch"`),
		binding("kuberef-widget-reader", "widget-readers"),
		{method: "GET", path: widgets, as: "widget-editor", setup: true, waitFor: 200},
		{method: "GET", path: widgets, as: "widget-reader", setup: true, waitFor: 200},
	}
}

// runRandomAsIdentities is issue 34's randomized requests sent as several identities: the
// sequences of TestRandomized, each sent by a random identity of randomIdentities, compared
// with the full kube-apiserver (answers, and audit events where l compares them).
func runRandomAsIdentities(t *testing.T, l *lockstep) {
	l.reset()
	for _, s := range randomIdentitySetup() {
		diffs, err := l.run(s)
		if err != nil || len(diffs) > 0 {
			t.Fatalf("setting up %s %s: %v %v", s.method, s.path, err, diffs)
		}
	}
	g := newGenerator(1)
	g.identities = randomIdentities
	n := runRandom(t, l, g, fullRandomRequests)
	t.Logf("%d random requests as %d identities to each of %d servers", n, len(randomIdentities), len(l.all()))
}
