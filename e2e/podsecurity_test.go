package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestPodSecurityAdmission checks that kube's PodSecurity admission plugin judges pods by their
// namespace's labels, as kube-apiserver's: enforce refuses with kube's 403, warn answers kube's
// Warning, and a namespace without labels admits the same pod.
func TestPodSecurityAdmission(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		for _, ns := range []string{
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"enforced","labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`,
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"warned","labels":{"pod-security.kubernetes.io/warn":"baseline"}}}`,
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"open"}}`,
		} {
			if r := s.do(t, "POST", "/api/v1/namespaces", []byte(ns), "Content-Type", "application/json"); r.code != http.StatusCreated {
				t.Fatalf("namespace create answered %d: %s", r.code, r.body)
			}
		}
		// A hostPath volume: baseline forbids it, and unlike a privileged container (which
		// kube-apiserver's --allow-privileged=false refuses in validation) it is a valid pod.
		pod := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostpath"},"spec":{"volumes":[{"name":"h","hostPath":{"path":"/tmp"}}],"containers":[{"name":"c","image":"nginx"}]}}`)
		const violation = `hostPath volumes (volume "h")`
		// The plugin reads namespaces through its informer: wait until it has the labels.
		var refused response
		eventually(t, 10*time.Second, "the enforce label refuses a pod with a hostPath volume", func() (bool, error) {
			refused = s.do(t, "POST", "/api/v1/namespaces/enforced/pods?dryRun=All", pod, "Content-Type", "application/json")
			return refused.code == http.StatusForbidden, fmt.Errorf("answered %d: %s", refused.code, refused.body)
		})
		st := refused.status(t)
		if want := `pods "hostpath" is forbidden: violates PodSecurity "baseline:latest": ` + violation; st.Message != want || st.Reason != "Forbidden" {
			t.Errorf("refusal %s %q, want Forbidden %q", st.Reason, st.Message, want)
		}
		var warned response
		eventually(t, 10*time.Second, "the warn label warns of a pod with a hostPath volume", func() (bool, error) {
			warned = s.do(t, "POST", "/api/v1/namespaces/warned/pods?dryRun=All", pod, "Content-Type", "application/json")
			return warned.header.Get("Warning") != "", nil
		})
		if want := `299 - "would violate PodSecurity \"baseline:latest\": hostPath volumes (volume \"h\")"`; warned.code != http.StatusCreated || warned.header.Get("Warning") != want {
			t.Errorf("warned create answered %d with Warning %q, want 201 with %q", warned.code, warned.header.Get("Warning"), want)
		}
		if r := s.do(t, "POST", "/api/v1/namespaces/open/pods", pod, "Content-Type", "application/json"); r.code != http.StatusCreated || r.header.Get("Warning") != "" {
			t.Errorf("create in an unlabelled namespace answered %d with Warning %q: %s", r.code, r.header.Get("Warning"), r.body)
		}
	})
}
