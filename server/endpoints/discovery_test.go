package endpoints_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	endpointsdiscovery "k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"

	"github.com/sqlkube/sqlkube/server/controllers/controllertest"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/sqlstore/sqltest"
)

const plainTextType = "text/plain; charset=utf-8"

// getDoc fetches path with an Accept header and checks the status and Content-Type.
func getDoc(t *testing.T, url, accept string, wantCode int, wantType string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantCode || resp.Header.Get("Content-Type") != wantType {
		t.Fatalf("GET %s (Accept %q): %d %q, want %d %q\n%s", url, accept, resp.StatusCode, resp.Header.Get("Content-Type"), wantCode, wantType, body)
	}
	return body
}

// sameJSON compares two JSON documents by value.
func sameJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: expected document: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

func TestLegacyDiscoveryOfBuiltins(t *testing.T) {
	srv := serveDiscoveryForTest(t, startRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t))))
	host := srv.Listener.Addr().String()

	sameJSON(t, "/api", getDoc(t, srv.URL+"/api", "", 200, endpoints.MediaTypeJSON),
		`{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"`+host+`"}]}`)
	sameJSON(t, "/api/v1", getDoc(t, srv.URL+"/api/v1", "application/json", 200, endpoints.MediaTypeJSON), `{
	"kind":"APIResourceList","groupVersion":"v1","resources":[
	{"name":"bindings","singularName":"binding","namespaced":true,"kind":"Binding","verbs":["create"]},
	{"name":"componentstatuses","singularName":"componentstatus","namespaced":false,"kind":"ComponentStatus","verbs":["get","list"],"shortNames":["cs"]},
	{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["cm"],"storageVersionHash":"qFsyl6wFWjQ="},
	{"name":"endpoints","singularName":"endpoints","namespaced":true,"kind":"Endpoints","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ep"],"storageVersionHash":"fWeeMqaN/OA="},
	{"name":"events","singularName":"event","namespaced":true,"kind":"Event","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ev"],"storageVersionHash":"r2yiGXH7wu8="},
	{"name":"limitranges","singularName":"limitrange","namespaced":true,"kind":"LimitRange","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["limits"],"storageVersionHash":"EBKMFVe6cwo="},
	{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"storageVersionHash":"Q3oi5N2YM8M="},
	{"name":"namespaces/finalize","singularName":"","namespaced":false,"kind":"Namespace","verbs":["update"]},
	{"name":"namespaces/status","singularName":"","namespaced":false,"kind":"Namespace","verbs":["get","patch","update"]},
	{"name":"nodes","singularName":"node","namespaced":false,"kind":"Node","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["no"],"storageVersionHash":"XwShjMxG9Fs="},
	{"name":"nodes/proxy","singularName":"","namespaced":false,"kind":"NodeProxyOptions","verbs":["create","delete","get","patch","update"]},
	{"name":"nodes/status","singularName":"","namespaced":false,"kind":"Node","verbs":["get","patch","update"]},
	{"name":"persistentvolumeclaims","singularName":"persistentvolumeclaim","namespaced":true,"kind":"PersistentVolumeClaim","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["pvc"],"storageVersionHash":"QWTyNDq0dC4="},
	{"name":"persistentvolumeclaims/status","singularName":"","namespaced":true,"kind":"PersistentVolumeClaim","verbs":["get","patch","update"]},
	{"name":"persistentvolumes","singularName":"persistentvolume","namespaced":false,"kind":"PersistentVolume","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["pv"],"storageVersionHash":"HN/zwEC+JgM="},
	{"name":"persistentvolumes/status","singularName":"","namespaced":false,"kind":"PersistentVolume","verbs":["get","patch","update"]},
	{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["po"],"categories":["all"],"storageVersionHash":"xPOwRZ+Yhw8="},
	{"name":"pods/attach","singularName":"","namespaced":true,"kind":"PodAttachOptions","verbs":["create","get"]},
	{"name":"pods/binding","singularName":"","namespaced":true,"kind":"Binding","verbs":["create"]},
	{"name":"pods/ephemeralcontainers","singularName":"","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]},
	{"name":"pods/eviction","singularName":"","namespaced":true,"group":"policy","version":"v1","kind":"Eviction","verbs":["create"]},
	{"name":"pods/exec","singularName":"","namespaced":true,"kind":"PodExecOptions","verbs":["create","get"]},
	{"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]},
	{"name":"pods/portforward","singularName":"","namespaced":true,"kind":"PodPortForwardOptions","verbs":["create","get"]},
	{"name":"pods/proxy","singularName":"","namespaced":true,"kind":"PodProxyOptions","verbs":["create","delete","get","patch","update"]},
	{"name":"pods/resize","singularName":"","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]},
	{"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]},
	{"name":"podtemplates","singularName":"podtemplate","namespaced":true,"kind":"PodTemplate","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"storageVersionHash":"LIXB2x4IFpk="},
	{"name":"replicationcontrollers","singularName":"replicationcontroller","namespaced":true,"kind":"ReplicationController","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["rc"],"categories":["all"],"storageVersionHash":"Jond2If31h0="},
	{"name":"replicationcontrollers/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]},
	{"name":"replicationcontrollers/status","singularName":"","namespaced":true,"kind":"ReplicationController","verbs":["get","patch","update"]},
	{"name":"resourcequotas","singularName":"resourcequota","namespaced":true,"kind":"ResourceQuota","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["quota"],"storageVersionHash":"8uhSgffRX6w="},
	{"name":"resourcequotas/status","singularName":"","namespaced":true,"kind":"ResourceQuota","verbs":["get","patch","update"]},
	{"name":"secrets","singularName":"secret","namespaced":true,"kind":"Secret","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"storageVersionHash":"S6u1pOWzb84="},
	{"name":"serviceaccounts","singularName":"serviceaccount","namespaced":true,"kind":"ServiceAccount","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["sa"],"storageVersionHash":"pbx9ZvyFpBE="},
	{"name":"serviceaccounts/token","singularName":"","namespaced":true,"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest","verbs":["create"]},
	{"name":"services","singularName":"service","namespaced":true,"kind":"Service","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["svc"],"categories":["all"],"storageVersionHash":"0/CO1lhkEBI="},
	{"name":"services/proxy","singularName":"","namespaced":true,"kind":"ServiceProxyOptions","verbs":["create","delete","get","patch","update"]},
	{"name":"services/status","singularName":"","namespaced":true,"kind":"Service","verbs":["get","patch","update"]}]}`)
	sameJSON(t, "/apis", getDoc(t, srv.URL+"/apis", "", 200, endpoints.MediaTypeJSON), `{"kind":"APIGroupList","apiVersion":"v1","groups":[
	{"name":"apiregistration.k8s.io","versions":[{"groupVersion":"apiregistration.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apiregistration.k8s.io/v1","version":"v1"}},
	{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
	{"name":"events.k8s.io","versions":[{"groupVersion":"events.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"events.k8s.io/v1","version":"v1"}},
	{"name":"authentication.k8s.io","versions":[{"groupVersion":"authentication.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"authentication.k8s.io/v1","version":"v1"}},
	{"name":"authorization.k8s.io","versions":[{"groupVersion":"authorization.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"authorization.k8s.io/v1","version":"v1"}},
	{"name":"autoscaling","versions":[{"groupVersion":"autoscaling/v2","version":"v2"},{"groupVersion":"autoscaling/v1","version":"v1"}],"preferredVersion":{"groupVersion":"autoscaling/v2","version":"v2"}},
	{"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"}],"preferredVersion":{"groupVersion":"batch/v1","version":"v1"}},
	{"name":"certificates.k8s.io","versions":[{"groupVersion":"certificates.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"certificates.k8s.io/v1","version":"v1"}},
	{"name":"networking.k8s.io","versions":[{"groupVersion":"networking.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"networking.k8s.io/v1","version":"v1"}},
	{"name":"policy","versions":[{"groupVersion":"policy/v1","version":"v1"}],"preferredVersion":{"groupVersion":"policy/v1","version":"v1"}},
	{"name":"rbac.authorization.k8s.io","versions":[{"groupVersion":"rbac.authorization.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"rbac.authorization.k8s.io/v1","version":"v1"}},
	{"name":"storage.k8s.io","versions":[{"groupVersion":"storage.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"storage.k8s.io/v1","version":"v1"}},
	{"name":"admissionregistration.k8s.io","versions":[{"groupVersion":"admissionregistration.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"admissionregistration.k8s.io/v1","version":"v1"}},
	{"name":"apiextensions.k8s.io","versions":[{"groupVersion":"apiextensions.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apiextensions.k8s.io/v1","version":"v1"}},
	{"name":"scheduling.k8s.io","versions":[{"groupVersion":"scheduling.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"scheduling.k8s.io/v1","version":"v1"}},
	{"name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"coordination.k8s.io/v1","version":"v1"}},
	{"name":"node.k8s.io","versions":[{"groupVersion":"node.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"node.k8s.io/v1","version":"v1"}},
	{"name":"discovery.k8s.io","versions":[{"groupVersion":"discovery.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"discovery.k8s.io/v1","version":"v1"}},
	{"name":"resource.k8s.io","versions":[{"groupVersion":"resource.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"resource.k8s.io/v1","version":"v1"}},
	{"name":"flowcontrol.apiserver.k8s.io","versions":[{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"flowcontrol.apiserver.k8s.io/v1","version":"v1"}},
	{"name":"storagemigration.k8s.io","versions":[{"groupVersion":"storagemigration.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"storagemigration.k8s.io/v1","version":"v1"}}]}`)
	// The reviews are served without storage: create only, no storageVersionHash.
	sameJSON(t, "/apis/authorization.k8s.io/v1", getDoc(t, srv.URL+"/apis/authorization.k8s.io/v1", "", 200, endpoints.MediaTypeJSON), `{
	"kind":"APIResourceList","apiVersion":"v1","groupVersion":"authorization.k8s.io/v1","resources":[
	{"name":"localsubjectaccessreviews","singularName":"localsubjectaccessreview","namespaced":true,"kind":"LocalSubjectAccessReview","verbs":["create"]},
	{"name":"selfsubjectaccessreviews","singularName":"selfsubjectaccessreview","namespaced":false,"kind":"SelfSubjectAccessReview","verbs":["create"]},
	{"name":"selfsubjectrulesreviews","singularName":"selfsubjectrulesreview","namespaced":false,"kind":"SelfSubjectRulesReview","verbs":["create"]},
	{"name":"subjectaccessreviews","singularName":"subjectaccessreview","namespaced":false,"kind":"SubjectAccessReview","verbs":["create"]}]}`)
	sameJSON(t, "/apis/coordination.k8s.io", getDoc(t, srv.URL+"/apis/coordination.k8s.io", "", 200, endpoints.MediaTypeJSON),
		`{"kind":"APIGroup","apiVersion":"v1","name":"coordination.k8s.io","versions":[{"groupVersion":"coordination.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"coordination.k8s.io/v1","version":"v1"}}`)
	sameJSON(t, "/apis/coordination.k8s.io/v1", getDoc(t, srv.URL+"/apis/coordination.k8s.io/v1", "", 200, endpoints.MediaTypeJSON),
		`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"coordination.k8s.io/v1","resources":[
	{"name":"leases","singularName":"lease","namespaced":true,"kind":"Lease","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"storageVersionHash":"gqkMMb/YqFM="}]}`)
	// kube's strategies' types: as kube-apiserver lists them, subresources included.
	sameJSON(t, "/apis/apps/v1", getDoc(t, srv.URL+"/apis/apps/v1", "", 200, endpoints.MediaTypeJSON),
		`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[
	{"name":"controllerrevisions","singularName":"controllerrevision","namespaced":true,"kind":"ControllerRevision","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"storageVersionHash":"85nkx63pcBU="},
	{"name":"daemonsets","singularName":"daemonset","namespaced":true,"kind":"DaemonSet","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ds"],"categories":["all"],"storageVersionHash":"dd7pWHUlMKQ="},
	{"name":"daemonsets/status","singularName":"","namespaced":true,"kind":"DaemonSet","verbs":["get","patch","update"]},
	{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["deploy"],"categories":["all"],"storageVersionHash":"8aSe+NMegvE="},
	{"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]},
	{"name":"deployments/status","singularName":"","namespaced":true,"kind":"Deployment","verbs":["get","patch","update"]},
	{"name":"replicasets","singularName":"replicaset","namespaced":true,"kind":"ReplicaSet","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["rs"],"categories":["all"],"storageVersionHash":"P1RzHs8/mWQ="},
	{"name":"replicasets/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]},
	{"name":"replicasets/status","singularName":"","namespaced":true,"kind":"ReplicaSet","verbs":["get","patch","update"]},
	{"name":"statefulsets","singularName":"statefulset","namespaced":true,"kind":"StatefulSet","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["sts"],"categories":["all"],"storageVersionHash":"H+vl74LkKdo="},
	{"name":"statefulsets/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]},
	{"name":"statefulsets/status","singularName":"","namespaced":true,"kind":"StatefulSet","verbs":["get","patch","update"]}]}`)
	sameJSON(t, "/apis/apiextensions.k8s.io/v1", getDoc(t, srv.URL+"/apis/apiextensions.k8s.io/v1", "", 200, endpoints.MediaTypeJSON),
		`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apiextensions.k8s.io/v1","resources":[
	{"name":"customresourcedefinitions","singularName":"customresourcedefinition","namespaced":false,"kind":"CustomResourceDefinition","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["crd","crds"],"categories":["api-extensions"],"storageVersionHash":"jfWCUB31mvA="},
	{"name":"customresourcedefinitions/status","singularName":"","namespaced":false,"kind":"CustomResourceDefinition","verbs":["get","patch","update"]}]}`)

	for _, path := range []string{"/apis/example.com", "/apis/coordination.k8s.io/v2"} {
		if doc := getDoc(t, srv.URL+path, "", 404, plainTextType); string(doc) != plainNotFound {
			t.Fatalf("%s: %q", path, doc)
		}
	}
	getDoc(t, srv.URL+"/api/v1", "application/vnd.kubernetes.protobuf", 406, endpoints.MediaTypeJSON)
	resp, err := http.Post(srv.URL+"/apis", endpoints.MediaTypeJSON, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sameJSON(t, "POST /apis", body, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
	"message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed","details":{},"code":405}`)
	if body := getDoc(t, srv.URL+"/apis", "application/yaml", 200, endpoints.MediaTypeYAML); !strings.HasPrefix(string(body), "apiVersion: v1\ngroups:") {
		t.Errorf("YAML /apis:\n%s", body)
	}
}

func TestAggregatedDiscoveryOfBuiltins(t *testing.T) {
	srv := serveDiscoveryForTest(t, startRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t))))
	const accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

	sameJSON(t, "aggregated /api", getDoc(t, srv.URL+"/api", accept, 200, endpoints.MediaTypeAggregatedDiscovery), `{
	"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{},"versions":[{"version":"v1","freshness":"Current","resources":[
	{"resource":"bindings","responseKind":{"group":"","version":"","kind":"Binding"},"scope":"Namespaced","singularResource":"binding","verbs":["create"]},
	{"resource":"componentstatuses","responseKind":{"group":"","version":"","kind":"ComponentStatus"},"scope":"Cluster","singularResource":"componentstatus","verbs":["get","list"],"shortNames":["cs"]},
	{"resource":"configmaps","responseKind":{"group":"","version":"","kind":"ConfigMap"},"scope":"Namespaced","singularResource":"configmap","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["cm"]},
	{"resource":"endpoints","responseKind":{"group":"","version":"","kind":"Endpoints"},"scope":"Namespaced","singularResource":"endpoints","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ep"]},
	{"resource":"events","responseKind":{"group":"","version":"","kind":"Event"},"scope":"Namespaced","singularResource":"event","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["ev"]},
	{"resource":"limitranges","responseKind":{"group":"","version":"","kind":"LimitRange"},"scope":"Namespaced","singularResource":"limitrange","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["limits"]},
	{"resource":"namespaces","responseKind":{"group":"","version":"","kind":"Namespace"},"scope":"Cluster","singularResource":"namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],
	 "subresources":[{"subresource":"finalize","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":["update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"Namespace"},"verbs":["get","patch","update"]}]},
	{"resource":"nodes","responseKind":{"group":"","version":"","kind":"Node"},"scope":"Cluster","singularResource":"node","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["no"],
	 "subresources":[{"subresource":"proxy","responseKind":{"group":"","version":"","kind":"NodeProxyOptions"},"verbs":["create","delete","get","patch","update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"Node"},"verbs":["get","patch","update"]}]},
	{"resource":"persistentvolumeclaims","responseKind":{"group":"","version":"","kind":"PersistentVolumeClaim"},"scope":"Namespaced","singularResource":"persistentvolumeclaim","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["pvc"],
	 "subresources":[{"subresource":"status","responseKind":{"group":"","version":"","kind":"PersistentVolumeClaim"},"verbs":["get","patch","update"]}]},
	{"resource":"persistentvolumes","responseKind":{"group":"","version":"","kind":"PersistentVolume"},"scope":"Cluster","singularResource":"persistentvolume","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["pv"],
	 "subresources":[{"subresource":"status","responseKind":{"group":"","version":"","kind":"PersistentVolume"},"verbs":["get","patch","update"]}]},
	{"resource":"pods","responseKind":{"group":"","version":"","kind":"Pod"},"scope":"Namespaced","singularResource":"pod","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["po"],"categories":["all"],
	 "subresources":[{"subresource":"attach","responseKind":{"group":"","version":"","kind":"PodAttachOptions"},"verbs":["create","get"]},{"subresource":"binding","responseKind":{"group":"","version":"","kind":"Binding"},"verbs":["create"]},
	 {"subresource":"ephemeralcontainers","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get","patch","update"]},{"subresource":"eviction","responseKind":{"group":"policy","version":"v1","kind":"Eviction"},"verbs":["create"]},
	 {"subresource":"exec","responseKind":{"group":"","version":"","kind":"PodExecOptions"},"verbs":["create","get"]},{"subresource":"log","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get"]},
	 {"subresource":"portforward","responseKind":{"group":"","version":"","kind":"PodPortForwardOptions"},"verbs":["create","get"]},{"subresource":"proxy","responseKind":{"group":"","version":"","kind":"PodProxyOptions"},"verbs":["create","delete","get","patch","update"]},
	 {"subresource":"resize","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get","patch","update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get","patch","update"]}]},
	{"resource":"podtemplates","responseKind":{"group":"","version":"","kind":"PodTemplate"},"scope":"Namespaced","singularResource":"podtemplate","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]},
	{"resource":"replicationcontrollers","responseKind":{"group":"","version":"","kind":"ReplicationController"},"scope":"Namespaced","singularResource":"replicationcontroller","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["rc"],"categories":["all"],
	 "subresources":[{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get","patch","update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"ReplicationController"},"verbs":["get","patch","update"]}]},
	{"resource":"resourcequotas","responseKind":{"group":"","version":"","kind":"ResourceQuota"},"scope":"Namespaced","singularResource":"resourcequota","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["quota"],
	 "subresources":[{"subresource":"status","responseKind":{"group":"","version":"","kind":"ResourceQuota"},"verbs":["get","patch","update"]}]},
	{"resource":"secrets","responseKind":{"group":"","version":"","kind":"Secret"},"scope":"Namespaced","singularResource":"secret","verbs":["create","delete","deletecollection","get","list","patch","update","watch"]},
	{"resource":"serviceaccounts","responseKind":{"group":"","version":"","kind":"ServiceAccount"},"scope":"Namespaced","singularResource":"serviceaccount","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["sa"],
	 "subresources":[{"subresource":"token","responseKind":{"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest"},"verbs":["create"]}]},
	{"resource":"services","responseKind":{"group":"","version":"","kind":"Service"},"scope":"Namespaced","singularResource":"service","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["svc"],"categories":["all"],
	 "subresources":[{"subresource":"proxy","responseKind":{"group":"","version":"","kind":"ServiceProxyOptions"},"verbs":["create","delete","get","patch","update"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"Service"},"verbs":["get","patch","update"]}]}]}]}]}`)

	// The legacy document answers a plain Accept, and /apis/GROUP has no aggregated form.
	getDoc(t, srv.URL+"/apis", "application/json", 200, endpoints.MediaTypeJSON)
	getDoc(t, srv.URL+"/apis/coordination.k8s.io", accept, 200, endpoints.MediaTypeJSON)

	// client-go's discovery client (kubectl's) reads the aggregated documents.
	client := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
	groups, resources, err := client.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.Name+"="+g.PreferredVersion.Version)
	}
	if want := []string{"=v1", "apiregistration.k8s.io=v1", "apps=v1", "events.k8s.io=v1", "authentication.k8s.io=v1", "authorization.k8s.io=v1", "autoscaling=v2", "batch=v1", "certificates.k8s.io=v1", "networking.k8s.io=v1", "policy=v1", "rbac.authorization.k8s.io=v1", "storage.k8s.io=v1", "admissionregistration.k8s.io=v1", "apiextensions.k8s.io=v1", "scheduling.k8s.io=v1", "coordination.k8s.io=v1", "node.k8s.io=v1", "discovery.k8s.io=v1", "resource.k8s.io=v1", "flowcontrol.apiserver.k8s.io=v1", "storagemigration.k8s.io=v1"}; !slices.Equal(names, want) {
		t.Errorf("groups %v, want %v", names, want)
	}
	if len(resources) != 23 {
		t.Errorf("%d resource lists, want 23", len(resources))
	}
}

func TestDiscoveryETag(t *testing.T) {
	srv := serveDiscoveryForTest(t, startRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t))))
	resp, err := http.Get(srv.URL + "/apis")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/apis", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if etag == "" || resp.StatusCode != http.StatusNotModified {
		t.Errorf("ETag %q, revalidation answered %d, want 304", etag, resp.StatusCode)
	}
}

func TestDiscoveryFollowsCRDs(t *testing.T) {
	sqltest.Backends(t, func(t *testing.T, dsn string) {
		store := openTestStore(t, dsn)
		g := startRegistry(t, store)
		srv := serveDiscoveryForTest(t, g)
		writeCRD(t, g, store, crdYAML("widgets", "Widget", "v1alpha1", "v1", "v2beta1", "v1beta1"))

		sameJSON(t, "/apis/example.com", getDoc(t, srv.URL+"/apis/example.com", "", 200, endpoints.MediaTypeJSON), `{"kind":"APIGroup","apiVersion":"v1","name":"example.com","versions":[
		{"groupVersion":"example.com/v1","version":"v1"},{"groupVersion":"example.com/v2beta1","version":"v2beta1"},
		{"groupVersion":"example.com/v1beta1","version":"v1beta1"},{"groupVersion":"example.com/v1alpha1","version":"v1alpha1"}],
		"preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}}`)
		sameJSON(t, "/apis/example.com/v1beta1", getDoc(t, srv.URL+"/apis/example.com/v1beta1", "", 200, endpoints.MediaTypeJSON), `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"example.com/v1beta1","resources":[
		{"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["delete","deletecollection","get","list","patch","create","update","watch"],"storageVersionHash":"`+endpointsdiscovery.StorageVersionHash("example.com", "v1", "Widget")+`"},
		{"name":"widgets/status","singularName":"","namespaced":true,"kind":"Widget","verbs":["get","patch","update"]}]}`)

		client := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
		list, err := client.ServerResourcesForGroupVersion("example.com/v1")
		if err != nil || len(list.APIResources) != 2 {
			t.Fatalf("client-go sees example.com/v1: %+v, %v", list, err)
		}
		const accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
		aggregated := getDoc(t, srv.URL+"/apis", accept, 200, endpoints.MediaTypeAggregatedDiscovery)
		var doc struct {
			Items []struct {
				Metadata struct{ Name string }
				Versions []struct {
					Version   string
					Resources []struct {
						Resource     string
						ResponseKind schema.GroupVersionKind
					}
				}
			}
		}
		if err := json.Unmarshal(aggregated, &doc); err != nil {
			t.Fatal(err)
		}
		last := doc.Items[len(doc.Items)-1]
		if last.Metadata.Name != "example.com" || len(last.Versions) != 4 || last.Versions[0].Version != "v1" ||
			last.Versions[0].Resources[0].ResponseKind != (schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}) {
			t.Errorf("aggregated example.com: %+v", last)
		}

		deleteStoredCRD(t, g, store, "widgets.example.com")
		controllertest.Eventually(t, "example.com leaves discovery", func() bool {
			_, found := g.Lookup("example.com", "v1", "widgets")
			return !found
		})
		if doc := getDoc(t, srv.URL+"/apis/example.com", "", 404, plainTextType); string(doc) != plainNotFound {
			t.Fatalf("/apis/example.com: %q", doc)
		}
	})
}

func TestOpenAPIV3TellsKubectlFieldValidationIsServerSide(t *testing.T) {
	store := openTestStore(t, sqltest.SQLiteDSN(t))
	g := startRegistry(t, store)
	srv := serveDiscoveryForTest(t, g)
	writeCRD(t, g, store, crdYAML("widgets", "Widget", "v1"))

	root := openapi3.NewRoot(discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	var wantGVs []schema.GroupVersion
	for _, gv := range strings.Fields("admissionregistration.k8s.io/v1 apiextensions.k8s.io/v1 apiregistration.k8s.io/v1 apps/v1 authentication.k8s.io/v1 authorization.k8s.io/v1 autoscaling/v1 autoscaling/v2 batch/v1 certificates.k8s.io/v1 coordination.k8s.io/v1 discovery.k8s.io/v1 events.k8s.io/v1 example.com/v1 flowcontrol.apiserver.k8s.io/v1 networking.k8s.io/v1 node.k8s.io/v1 policy/v1 rbac.authorization.k8s.io/v1 resource.k8s.io/v1 scheduling.k8s.io/v1 storage.k8s.io/v1 storagemigration.k8s.io/v1 v1") {
		parsed, _ := schema.ParseGroupVersion(gv)
		wantGVs = append(wantGVs, parsed)
	}
	slices.SortFunc(gvs, func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(gvs, wantGVs) {
		t.Errorf("OpenAPI group versions %v, want %v", gvs, wantGVs)
	}
	for _, gvk := range []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}, {Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "example.com", Version: "v1", Kind: "Widget"}} {
		doc, err := root.GVSpec(gvk.GroupVersion())
		if err != nil {
			t.Fatal(err)
		}
		if !patchTakesFieldValidation(doc, gvk) {
			t.Errorf("%v: no PATCH operation taking fieldValidation", gvk)
		}
	}
	// The built-ins' schemas are kube's generated definitions: required fields included.
	appsDoc, _ := root.GVSpec(schema.GroupVersion{Group: "apps", Version: "v1"})
	if spec := appsDoc.Components.Schemas["io.k8s.api.apps.v1.DeploymentSpec"]; spec == nil || !slices.Equal(spec.Required, []string{"selector", "template"}) {
		t.Errorf("apps/v1 DeploymentSpec %+v, want kube's (selector and template required)", spec)
	}
	crdDoc, _ := root.GVSpec(schema.GroupVersion{Group: "example.com", Version: "v1"})
	if crdDoc.Components == nil || crdDoc.Components.Schemas["com.example.v1.Widget"] == nil {
		t.Errorf("the CRD's document has no Widget schema: %+v", crdDoc.Components)
	}
	// A group version of CRDs only is apiextensions-apiserver's document, as kube-apiserver serves it.
	if info := crdDoc.Info; info == nil || info.Title != "Kubernetes CRD Swagger" || info.Version != "v0.1.0" {
		t.Errorf("the CRD's document has info %+v, want apiextensions-apiserver's", info)
	}
	getDoc(t, srv.URL+"/openapi/v3/apis/example.org/v1", "", 404, plainTextType)
	// kube-apiserver's aggregator leaves the root's type to net/http's sniffing.
	getDoc(t, srv.URL+"/openapi/v3", "", 200, plainTextType)
}

// TestOpenAPIV3NonResourceDocuments: the root lists kube-apiserver's documents of the endpoints
// that serve no resources (a server issuing tokens: the issuer's discovery documents too), each
// served where the root says, built from kube's routes for them; a CRD group has none.
func TestOpenAPIV3NonResourceDocuments(t *testing.T) {
	store := openTestStore(t, sqltest.SQLiteDSN(t))
	g := startRegistry(t, store)
	srv := serveDiscoveryForTest(t, g)
	writeCRD(t, g, store, crdYAML("widgets", "Widget", "v1"))

	paths, err := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"api", "apis", "apis/apps", "apis/apiextensions.k8s.io", "apis/authentication.k8s.io",
		"version", "openid/v1/jwks", ".well-known/openid-configuration"} {
		if _, ok := paths[path]; !ok {
			t.Errorf("the root does not list %q", path)
		}
	}
	if _, ok := paths["apis/example.com"]; ok {
		t.Error("the root lists the CRD group apis/example.com")
	}
	body, err := paths["version"].Schema("application/json")
	if err != nil {
		t.Fatal(err)
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	get := doc.Paths.Paths["/version/"].Get
	if get == nil || get.OperationId != "getCodeVersion" || get.Responses.StatusCodeResponses[401] == nil ||
		get.Responses.StatusCodeResponses[200].Content["application/json"].Schema.Ref.String() != "#/components/schemas/io.k8s.apimachinery.pkg.version.Info" ||
		doc.Components.Schemas["io.k8s.apimachinery.pkg.version.Info"] == nil || doc.Components.SecuritySchemes["BearerToken"] == nil {
		t.Errorf("/openapi/v3/version:\n%s", body)
	}
}

// patchTakesFieldValidation looks for gvk's PATCH operation and its fieldValidation query
// parameter the way kubectl decides whether the server validates fields.
func patchTakesFieldValidation(doc *spec3.OpenAPI, gvk schema.GroupVersionKind) bool {
	for _, path := range doc.Paths.Paths {
		op := path.Patch
		if op == nil {
			continue
		}
		var opGVK map[string]string
		if err := op.Extensions.GetObject("x-kubernetes-group-version-kind", &opGVK); err != nil ||
			opGVK["group"] != gvk.Group || opGVK["version"] != gvk.Version || opGVK["kind"] != gvk.Kind {
			continue
		}
		for _, p := range op.Parameters {
			if p.Name == "fieldValidation" && p.In == "query" {
				return true
			}
		}
	}
	return false
}

func TestVersion(t *testing.T) {
	srv := serveDiscoveryForTest(t, startRegistry(t, openTestStore(t, sqltest.SQLiteDSN(t))))
	info, err := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := utilversion.ParseSemantic(info.GitVersion)
	if err != nil || parsed.Major() != 1 || parsed.Minor() != 37 || info.Major != "1" || info.Minor != "37" || info.Platform == "" {
		t.Errorf("version %+v (%v)", info, err)
	}
}
