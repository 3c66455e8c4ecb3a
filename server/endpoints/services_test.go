package endpoints_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const servicesPath = "/api/v1/namespaces/default/services"

// TestServicesWithKubesRules: Services are served with kube-apiserver's own service storage:
// cluster IPs come from the ServiceCIDRs as IPAddress objects, a taken IP is kube's 422, the
// IP families are defaulted, an ExternalName Service gets no IP, /proxy answers as kube's does
// without endpoints, and the spec.type field selector works.
func TestServicesWithKubesRules(t *testing.T) {
	backends(t, func(t *testing.T, api *testAPI) {
		// The test server writes no default objects: the ServiceCIDR is the test's.
		api.do("POST", "/apis/networking.k8s.io/v1/servicecidrs", `{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR",
			"metadata":{"name":"kubernetes"},"spec":{"cidrs":["10.0.0.0/24"]}}`).expect(t, http.StatusCreated)
		fixed := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"NAME"},"spec":{"clusterIP":"10.0.0.10","ports":[{"port":80}]}}`
		var created map[string]any
		deadline := time.Now().Add(10 * time.Second)
		for {
			// Allocation starts once the allocator has seen the ServiceCIDR.
			resp := api.do("POST", servicesPath, replaceName(fixed, "web"))
			if resp.code == http.StatusCreated {
				created = resp.object(t)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no IP allocated within 10s: %d %s", resp.code, resp.body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for path, want := range map[string]any{
			"spec.clusterIP": "10.0.0.10", "spec.ipFamilyPolicy": "SingleStack", "spec.type": "ClusterIP",
			"spec.sessionAffinity": "None", "spec.internalTrafficPolicy": "Cluster",
		} {
			if got := nested(created, strings.Split(path, ".")...); got != want {
				t.Errorf("%s: %v, want %v", path, got, want)
			}
		}
		address := api.do("GET", "/apis/networking.k8s.io/v1/ipaddresses/10.0.0.10", "").expect(t, http.StatusOK).object(t)
		if nested(address, "spec", "parentRef", "name") != "web" || nested(address, "metadata", "labels", "ipaddress.kubernetes.io/managed-by") != "ipallocator.k8s.io" {
			t.Errorf("IPAddress %v", address)
		}

		api.do("POST", servicesPath, replaceName(fixed, "taken")).expectStatus(t, metav1.Status{
			Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: `Service "taken" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.10"]: failed to allocate IP 10.0.0.10: provided IP is already allocated`,
			Details: &metav1.StatusDetails{Name: "taken", Kind: "Service", Causes: []metav1.StatusCause{{
				Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.clusterIPs",
				Message: `Invalid value: ["10.0.0.10"]: failed to allocate IP 10.0.0.10: provided IP is already allocated`}}}})

		external := api.do("POST", servicesPath, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"ext"},
			"spec":{"type":"ExternalName","externalName":"example.com"}}`).expect(t, http.StatusCreated).object(t)
		if ip := nested(external, "spec", "clusterIP"); ip != nil {
			t.Errorf("an ExternalName Service got cluster IP %v", ip)
		}

		api.do("GET", servicesPath+"/web/proxy/healthz", "").expectStatus(t, metav1.Status{
			Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
			Message: `no endpoints available for service "web"`})
		api.do("GET", servicesPath+"/web:8080/proxy/", "").expectStatus(t, metav1.Status{
			Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
			Message: `no service port 8080 found for service "web"`})

		list := api.do("GET", servicesPath+"?fieldSelector=spec.type%3DExternalName", "").expect(t, http.StatusOK).object(t)
		if items := list["items"].([]any); len(items) != 1 || nested(items[0].(map[string]any), "metadata", "name") != "ext" {
			t.Errorf("fieldSelector spec.type=ExternalName listed %v", items)
		}

		// As kube's service storage does, a delete answers the deleted Service.
		deleted := api.do("DELETE", servicesPath+"/web", "").expect(t, http.StatusOK).object(t)
		if deleted["kind"] != "Service" || nested(deleted, "spec", "clusterIP") != "10.0.0.10" {
			t.Errorf("delete answered %v", deleted)
		}
		api.do("GET", "/apis/networking.k8s.io/v1/ipaddresses/10.0.0.10", "").expect(t, http.StatusNotFound)
	})
}

// TestIngressGetsDefaultClass: an Ingress created without a class gets the default
// IngressClass's name, as kube's DefaultIngressClass admission plugin gives it.
func TestIngressGetsDefaultClass(t *testing.T) {
	api := sqliteAPI(t)
	api.do("POST", "/apis/networking.k8s.io/v1/ingressclasses", `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass",
		"metadata":{"name":"nginx","annotations":{"ingressclass.kubernetes.io/is-default-class":"true"}},
		"spec":{"controller":"k8s.io/ingress-nginx"}}`).expect(t, http.StatusCreated)
	ingress := `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"NAME"},
		"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":80}}}}}`
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		// The plugin reads the IngressClasses from its informer, which sees the new one soon.
		created := api.do("POST", "/apis/networking.k8s.io/v1/namespaces/default/ingresses", replaceName(ingress, fmt.Sprintf("web-%d", i))).
			expect(t, http.StatusCreated).object(t)
		if nested(created, "spec", "ingressClassName") == "nginx" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Ingress got no default class: %v", created)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// replaceName puts name where body says NAME.
func replaceName(body, name string) string { return strings.Replace(body, "NAME", name, 1) }
