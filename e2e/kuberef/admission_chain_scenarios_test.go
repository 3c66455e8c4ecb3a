package kuberef

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Issue 46: kube-apiserver's default admission plugins that act on what the other scenarios
// leave alone, compared with the full kube-apiserver: ClusterTrustBundleAttest, RuntimeClass
// (with ResourceQuota counting a RuntimeClass's overhead), PodResizeValidator, PodTopologyLabels
// and PodSecurity's checks of namespaces. The scenarios write in a namespace of their own, whose
// quota and pods no other scenario sees.
const chainNS = "/api/v1/namespaces/admission-chain"

func admissionChainScenarios() []scenario {
	return []scenario{clusterTrustBundleAttestScenario(), runtimeClassScenario(), podResizeScenario(), podTopologyLabelsScenario(), podSecurityNamespaceScenario()}
}

// chainPod is a pod run as builder requesting and limited to cpu, with the spec fields extra
// (with a trailing comma).
func chainPod(name, cpu, extra string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{` + extra + `"serviceAccountName":"builder",
	  "containers":[{"name":"c","image":"nginx:1.27","resources":{"requests":{"cpu":"` + cpu + `"},"limits":{"cpu":"` + cpu + `"}}}]}}`
}

// admissionChainSetup creates the scenarios' namespace and its pods' ServiceAccount.
var admissionChainSetup = []step{
	{method: "POST", path: "/api/v1/namespaces", setup: true, body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"admission-chain"}}`},
	builderAccount("admission-chain"),
}

// trustBundlePEM is a CA certificate, the same in every server's bundles.
var trustBundlePEM = func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(46), Subject: pkix.Name{CommonName: "attested"}, NotBefore: time.Now(),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	quoted, _ := json.Marshal(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	return string(quoted)
}()

// clusterTrustBundleAttestScenario: ctb-writer may write ClusterTrustBundles but not attest for
// a signer: its bundles of kube-apiserver-serving are refused whichever way they are written.
func clusterTrustBundleAttestScenario() scenario {
	const bundles = "/apis/certificates.k8s.io/v1/clustertrustbundles"
	const name = "kubernetes.io:kube-apiserver-serving:chain"
	bundle := func(name, signer string) string {
		signerField := ""
		if signer != "" {
			signerField = `"signerName":"` + signer + `",`
		}
		return `{"apiVersion":"certificates.k8s.io/v1","kind":"ClusterTrustBundle","metadata":{"name":"` + name + `"},"spec":{` + signerField + `"trustBundle":` + trustBundlePEM + `}}`
	}
	signed := bundle(name, "kubernetes.io/kube-apiserver-serving")
	steps := clusterRoleAndBinding("ctb-writer", `{"apiGroups":["certificates.k8s.io"],"resources":["clustertrustbundles"],"verbs":["get","create","update","patch"]}`, user("ctb-writer"))
	return scenario{"ClusterTrustBundleAttest", append(steps,
		step{method: "POST", path: bundles, body: signed, as: "ctb-writer"},
		step{method: "PATCH", path: bundles + "/" + name + "?fieldManager=ctb", contentType: applyPatch, body: signed, as: "ctb-writer"},
		step{method: "POST", path: bundles, body: signed},
		step{method: "PUT", path: bundles + "/" + name, body: bundle(name, "kubernetes.io/kube-apiserver-serving"), as: "ctb-writer"},
		step{method: "PATCH", path: bundles + "/" + name, contentType: mergePatch, body: `{"metadata":{"labels":{"edited":"true"}}}`, as: "ctb-writer"},
		step{method: "PATCH", path: bundles + "/" + name, contentType: mergePatch, body: `{"metadata":{"finalizers":["example.com/keep"]}}`, as: "ctb-writer"},
		step{method: "POST", path: bundles, body: bundle("unsigned-chain", ""), as: "ctb-writer"},
		step{method: "GET", path: bundles + "/" + name},
	)}
}

// runtimeClassScenario: a pod of a RuntimeClass that does not exist, and one with an overhead
// but no RuntimeClass, are refused; a pod of a RuntimeClass gets its overhead, node selector and
// tolerations, and a quota counts the overhead.
func runtimeClassScenario() scenario {
	const runtimeClasses = "/apis/node.k8s.io/v1/runtimeclasses"
	pods, quotas := chainNS+"/pods", chainNS+"/resourcequotas"
	return scenario{"RuntimeClass", concat(admissionChainSetup, []step{
		{method: "POST", path: pods, body: chainPod("unknown-class", "100m", `"runtimeClassName":"missing",`)},
		{method: "POST", path: pods, body: chainPod("overhead", "100m", `"overhead":{"cpu":"1"},`)},
		{method: "POST", path: runtimeClasses, body: `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"sandboxed"},"handler":"runsc",
		  "overhead":{"podFixed":{"cpu":"2"}},"scheduling":{"nodeSelector":{"sandbox":"true"},"tolerations":[{"key":"sandbox","operator":"Exists","effect":"NoSchedule"}]}}`},
		{method: "POST", path: pods, body: chainPod("sandboxed", "100m", `"runtimeClassName":"sandboxed",`)},
		{method: "GET", path: pods + "/sandboxed"},
		{method: "POST", path: pods, body: chainPod("conflicting", "100m", `"runtimeClassName":"sandboxed","nodeSelector":{"sandbox":"false"},`)},
		{method: "POST", path: quotas, body: `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"cpu"},"spec":{"hard":{"requests.cpu":"1"}}}`},
		{method: "PATCH", path: quotas + "/cpu/status", contentType: mergePatch, body: `{"status":{"hard":{"requests.cpu":"1"},"used":{"requests.cpu":"0"}}}`},
		// kube's ResourceQuota plugin reads quotas from an informer, which sees the status late:
		// until then it admits the pod (the status holds no hard limit).
		{method: "POST", path: pods + "?dryRun=All", body: chainPod("over-quota", "500m", `"runtimeClassName":"sandboxed",`), waitFor: 403},
		{method: "POST", path: pods, body: chainPod("over-quota", "500m", `"runtimeClassName":"sandboxed",`)},
		{method: "POST", path: pods, body: chainPod("within-quota", "500m", "")},
		{method: "GET", path: quotas + "/cpu"},
	})}
}

// podResizeScenario: a bound pod's resize beyond its node's allocatable resources is refused,
// one within them is not.
func podResizeScenario() scenario {
	pods := chainNS + "/pods"
	resize := func(cpu string) string {
		return `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"` + cpu + `"},"limits":{"cpu":"` + cpu + `"}}}]}}`
	}
	return scenario{"PodResizeValidator", concat(admissionChainSetup, []step{
		{method: "POST", path: "/api/v1/nodes", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"small-node","labels":{"kubernetes.io/os":"linux"}},
		  "status":{"capacity":{"cpu":"1","memory":"1Gi","pods":"10"},"allocatable":{"cpu":"1","memory":"1Gi","pods":"10"}}}`},
		{method: "POST", path: "/api/v1/nodes", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"windows-node","labels":{"kubernetes.io/os":"windows"}},
		  "status":{"allocatable":{"cpu":"8","memory":"8Gi","pods":"10"}}}`},
		{method: "POST", path: pods, body: chainPod("resized", "500m", `"nodeName":"small-node",`)},
		{method: "PATCH", path: pods + "/resized/resize", contentType: strategicPatch, body: resize("2")},
		{method: "PATCH", path: pods + "/resized/resize", contentType: strategicPatch, body: resize("800m")},
		{method: "POST", path: pods, body: chainPod("on-windows", "500m", `"nodeName":"windows-node",`)},
		{method: "PATCH", path: pods + "/on-windows/resize", contentType: strategicPatch, body: resize("1")},
		{method: "POST", path: pods, body: chainPod("nodeless", "500m", `"nodeName":"no-such-node",`)},
		{method: "PATCH", path: pods + "/nodeless/resize", contentType: strategicPatch, body: resize("1")},
	})}
}

// podTopologyLabelsScenario: a binding gets its node's zone and region labels, over those the
// binding asked for; a node without them leaves the binding's.
func podTopologyLabelsScenario() scenario {
	pods := chainNS + "/pods"
	binding := func(pod, node string) string {
		return `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"` + pod + `","labels":{"topology.kubernetes.io/zone":"forged","asked":"yes"}},
		  "target":{"apiVersion":"v1","kind":"Node","name":"` + node + `"}}`
	}
	return scenario{"PodTopologyLabels", concat(admissionChainSetup, []step{
		{method: "POST", path: "/api/v1/nodes", body: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"zoned-node",
		  "labels":{"topology.kubernetes.io/zone":"zone-a","topology.kubernetes.io/region":"region-1","other":"x"}}}`},
		{method: "POST", path: pods, body: chainPod("placed", "100m", "")},
		{method: "POST", path: pods + "/placed/binding", body: binding("placed", "zoned-node")},
		{method: "GET", path: pods + "/placed"},
		{method: "POST", path: pods, body: chainPod("unzoned", "100m", "")},
		{method: "POST", path: pods + "/unzoned/binding", body: binding("unzoned", "no-such-node")},
		{method: "GET", path: pods + "/unzoned"},
	})}
}

// podSecurityNamespaceScenario: PodSecurity refuses invalid pod security labels on a namespace
// and warns, when a namespace is tightened, of the pods it holds that violate the new level.
func podSecurityNamespaceScenario() scenario {
	const namespaces = "/api/v1/namespaces"
	namespace := func(name, labels string) string {
		return `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `","labels":` + labels + `}}`
	}
	const plain = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"plain"},
	  "spec":{"serviceAccountName":"builder","containers":[{"name":"c","image":"nginx:1.27"}]}}`
	return scenario{"PodSecurity namespace labels", []step{
		{method: "POST", path: namespaces, body: namespace("psa-superstrict", `{"pod-security.kubernetes.io/enforce":"superstrict"}`)},
		{method: "POST", path: namespaces, body: namespace("psa-future", `{"pod-security.kubernetes.io/enforce":"baseline","pod-security.kubernetes.io/enforce-version":"v9.x"}`)},
		{method: "POST", path: namespaces, body: namespace("psa-loose", `{}`)},
		builderAccount("psa-loose"),
		{method: "POST", path: namespaces + "/psa-loose/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostnet"},
		  "spec":{"serviceAccountName":"builder","hostNetwork":true,"containers":[{"name":"c","image":"nginx:1.27"}]}}`},
		{method: "PATCH", path: namespaces + "/psa-loose", contentType: mergePatch, body: `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"superstrict"}}}`},
		{method: "PATCH", path: namespaces + "/psa-loose", contentType: mergePatch, body: `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`},
		{method: "PATCH", path: namespaces + "/psa-loose", contentType: mergePatch, body: `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/warn":"restricted"}}}`},
		// kube's PodSecurity reads namespaces from an informer: wait (dry run) until it has
		// seen the restricted label before the create that is compared.
		{method: "POST", path: namespaces + "/psa-loose/pods?dryRun=All", body: plain, setup: true, waitFor: 403},
		{method: "POST", path: namespaces + "/psa-loose/pods", body: plain},
	}}
}

// chainLine is kube's log line naming the admission plugins it runs, in order.
var chainLine = regexp.MustCompile(`Loaded \d+ (mutating|validating) admission controller\(s\) successfully in the following order: ([A-Za-z,]+)\.`)

// chainLog gathers the mutating and validating admission chains a server logs at start, the
// first of each, by kind.
type chainLog map[string]string

// add reads a line of the log, and says whether it completed the chain.
func (c chainLog) add(line string) bool {
	m := chainLine.FindStringSubmatch(line)
	if m == nil || c[m[1]] != "" {
		return false
	}
	c[m[1]] = m[2]
	return len(c) == 2
}

// lines are the chains: "mutating: A,B,C", "validating: ...".
func (c chainLog) lines() []string {
	return []string{"mutating: " + c["mutating"], "validating: " + c["validating"]}
}

// compareAdmissionChains compares the admission chains kube-apiserver (its log in dir) and each
// sqlkube logged at start: the same plugins in the same order.
func compareAdmissionChains(t *testing.T, dir string, sqlkubes []endpoint) {
	f, err := os.Open(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := chainLog{}
	for sc := bufio.NewScanner(f); sc.Scan() && !want.add(sc.Text()); {
	}
	t.Logf("kube-apiserver's admission chain: %s", strings.Join(want.lines(), "; "))
	for _, sk := range sqlkubes {
		var got []string
		select {
		case got = <-sk.admissionChain:
		case <-time.After(10 * time.Second):
			t.Errorf("%s logged no admission chain", sk.name)
			continue
		}
		if !slices.Equal(got, want.lines()) {
			t.Errorf("%s's admission chain:\n%s\nkube-apiserver's:\n%s", sk.name, strings.Join(got, "\n"), strings.Join(want.lines(), "\n"))
		}
	}
}
