package discovery

import (
	"cmp"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sqlkube/sqlkube/server/builtin"
	"github.com/sqlkube/sqlkube/server/resource"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// groupPriorities orders the built-in groups as kube-apiserver lists them (the group priority
// minimums of its APIServices, kube-apiserver's apiVersionPriorities); CRD groups come after
// them, by name. Groups sqlkube does not serve yet are listed too, so that a type added to
// builtin takes its place in discovery without another change here.
var groupPriorities = map[string]int{
	// kube-aggregator's own group comes first (its APIRegistrationGroupPriority).
	builtin.APIRegistrationGroup: 20001,
	"":                           18000,
	builtin.AppsGroup:            17800,
	"events.k8s.io":              17750,
	"authentication.k8s.io":      17700,
	"authorization.k8s.io":       17600,
	"autoscaling":                17500,
	"batch":                      17400,
	"certificates.k8s.io":        17300,
	"networking.k8s.io":          17200,
	"policy":                     17100,
	builtin.RBACGroup:            17000,
	"storage.k8s.io":             16800,
	builtin.AdmissionGroup:       16700,
	builtin.APIExtensionsGroup:   16700,
	"scheduling.k8s.io":          16600,
	builtin.CoordinationGroup:    16500,
	"node.k8s.io":                16300,
	"discovery.k8s.io":           16200,
	"resource.k8s.io":            16200,
	builtin.FlowControlGroup:     16100,
	"storagemigration.k8s.io":    15800,
}

const crdGroupPriority = 1000

// The verbs kube-apiserver's discovery lists for subresources.
var (
	verbsSubresource = []string{"get", "patch", "update"}
	verbsFinalize    = []string{"update"}
	verbsCreate      = []string{"create"}
	// verbsProxy are the verbs of the methods a /proxy subresource serves.
	verbsProxy = []string{"create", "delete", "get", "patch", "update"}
)

// Find picks the document for r's path: the aggregated list (isAggregated) when asked for and
// the path has one, the legacy document otherwise.
func (d *Docs) Find(r *http.Request, aggregated bool) (doc Doc, isAggregated, found bool) {
	if aggregated {
		if doc, ok := d.aggregated[r.URL.Path]; ok {
			return doc, true, true
		}
	}
	if r.URL.Path == "/api" {
		return legacyCoreVersions(r), false, true
	}
	doc, found = d.legacy[r.URL.Path]
	return doc, false, found
}

// Doc is one encoded discovery document, with the ETag that If-None-Match compares.
type Doc struct {
	Body []byte
	ETag string
}

// NewDoc is the document of body.
func NewDoc(body []byte) Doc {
	return Doc{Body: body, ETag: fmt.Sprintf(`"%X"`, sha512.Sum512(body))}
}

// Docs holds the encoded documents, by path.
type Docs struct {
	legacy     map[string]Doc
	aggregated map[string]Doc
	openapi    *lazyOpenAPI
	openAPIV2  *lazyOpenAPIV2
}

// discoveryGroup is one served group with its versions' resources, versions by preference.
type discoveryGroup struct {
	name     string
	versions []discoveryVersion
}

type discoveryVersion struct {
	version   string
	resources []*resource.Resource // by name
}

// build encodes the discovery documents for a set of served resources.
func build(resources map[string]*resource.Resource, issuerDiscovery bool) *Docs {
	groups := groupResources(resources)
	docs := &Docs{
		legacy:     map[string]Doc{},
		aggregated: map[string]Doc{},
		openapi:    &lazyOpenAPI{resources: groups, issuerDiscovery: issuerDiscovery},
		openAPIV2:  &lazyOpenAPIV2{groups: groups},
	}

	var groupList []metav1.APIGroup
	var aggregatedCore, aggregatedGroups []apidiscoveryv2.APIGroupDiscovery
	for _, g := range groups {
		for _, v := range g.versions {
			docs.legacy[versionPath(g.name, v.version)] = encodeDoc(legacyResourceList(g.name, v))
		}
		aggregated := aggregatedGroup(g)
		if g.name == "" {
			aggregatedCore = append(aggregatedCore, aggregated)
			continue
		}
		group := legacyGroup(g)
		docs.legacy["/apis/"+g.name] = encodeDoc(group)
		group.TypeMeta = metav1.TypeMeta{} // the list's entries have none
		groupList = append(groupList, group)
		aggregatedGroups = append(aggregatedGroups, aggregated)
	}
	docs.legacy["/apis"] = encodeDoc(metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   groupList,
	})
	docs.aggregated["/api"] = encodeDoc(aggregatedList(aggregatedCore))
	docs.aggregated["/apis"] = encodeDoc(aggregatedList(aggregatedGroups))
	return docs
}

func versionPath(group, version string) string {
	if group == "" {
		return "/api/" + version
	}
	return "/apis/" + group + "/" + version
}

func encodeDoc(v any) Doc {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding a discovery document: %v", err)) // plain structs: cannot happen
	}
	return NewDoc(body)
}

// groupResources sorts the served resources into groups in kube-apiserver's order, their
// versions by preference (Kubernetes version priority: v2, v1, v1beta1, v1alpha1...), and
// each version's resources by name.
func groupResources(resources map[string]*resource.Resource) []discoveryGroup {
	byGroup := map[string]map[string][]*resource.Resource{}
	for _, r := range resources {
		if byGroup[r.Group] == nil {
			byGroup[r.Group] = map[string][]*resource.Resource{}
		}
		byGroup[r.Group][r.Version] = append(byGroup[r.Group][r.Version], r)
	}
	var groups []discoveryGroup
	for name, versions := range byGroup {
		g := discoveryGroup{name: name}
		for v, rs := range versions {
			slices.SortFunc(rs, func(a, b *resource.Resource) int { return cmp.Compare(a.Name, b.Name) })
			g.versions = append(g.versions, discoveryVersion{version: v, resources: rs})
		}
		slices.SortFunc(g.versions, func(a, b discoveryVersion) int {
			return -version.CompareKubeAwareVersionStrings(a.version, b.version)
		})
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b discoveryGroup) int {
		return cmp.Or(cmp.Compare(groupPriority(b.name), groupPriority(a.name)), cmp.Compare(a.name, b.name))
	})
	return groups
}

func groupPriority(group string) int {
	if p, ok := groupPriorities[group]; ok {
		return p
	}
	return crdGroupPriority
}

// legacyCoreVersions is /api's APIVersions. It names the address the client reached, as
// kube-apiserver names its advertised address.
func legacyCoreVersions(r *http.Request) Doc {
	return encodeDoc(metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	})
}

func legacyGroup(g discoveryGroup) metav1.APIGroup {
	group := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g.name}
	for _, v := range g.versions {
		group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{
			GroupVersion: resource.GroupVersion(g.name, v.version), Version: v.version,
		})
	}
	group.PreferredVersion = group.Versions[0]
	return group
}

// legacyResourceList is /api/v1's or /apis/GROUP/VERSION's APIResourceList: each resource,
// followed by its subresources, by name. The core group's document has no apiVersion, as
// kube-apiserver's.
func legacyResourceList(group string, v discoveryVersion) metav1.APIResourceList {
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: resource.GroupVersion(group, v.version)}
	if group == "" {
		list.APIVersion = ""
	}
	list.APIResources = []metav1.APIResource{}
	for _, r := range v.resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:               r.Name,
			SingularName:       r.SingularName,
			Namespaced:         r.Namespaced,
			Kind:               r.Kind,
			Verbs:              r.Verbs,
			ShortNames:         r.ShortNames,
			Categories:         r.Categories,
			StorageVersionHash: r.StorageVersionHash(),
		})
		for _, sub := range subresources(r) {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name:       r.Name + "/" + sub.name,
				Namespaced: r.Namespaced,
				Group:      sub.group,
				Version:    sub.version,
				Kind:       sub.kind,
				Verbs:      sub.verbs,
			})
		}
	}
	return list
}

// subresource is one subresource as discovery lists it. group and version are set only when
// its kind is not of the resource's group version (scale: autoscaling/v1 Scale).
type subresource struct {
	name, group, version, kind string
	verbs                      []string
}

// subresources lists r's subresources by name.
func subresources(r *resource.Resource) []subresource {
	var subs []subresource
	if r.Finalize {
		subs = append(subs, subresource{name: "finalize", kind: r.Kind, verbs: verbsFinalize})
	}
	if r.Scale != nil {
		subs = append(subs, subresource{name: "scale", group: "autoscaling", version: "v1", kind: "Scale", verbs: verbsSubresource})
	}
	if r.Status {
		subs = append(subs, subresource{name: "status", kind: r.Kind, verbs: verbsSubresource})
	}
	for _, sub := range r.Subresources {
		subs = append(subs, subresource{name: sub.Name, group: sub.Group, version: sub.Version, kind: sub.Kind, verbs: sub.Verbs})
	}
	slices.SortFunc(subs, func(a, b subresource) int { return strings.Compare(a.name, b.name) })
	return subs
}

func aggregatedList(groups []apidiscoveryv2.APIGroupDiscovery) apidiscoveryv2.APIGroupDiscoveryList {
	if groups == nil {
		groups = []apidiscoveryv2.APIGroupDiscovery{}
	}
	return apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: apidiscoveryv2.SchemeGroupVersion.String()},
		Items:    groups,
	}
}

// aggregatedGroup is one group of the aggregated discovery list. As in kube-apiserver, a
// CRD's response kinds name its group version; a built-in's leave them empty.
func aggregatedGroup(g discoveryGroup) apidiscoveryv2.APIGroupDiscovery {
	group := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
	for _, v := range g.versions {
		version := apidiscoveryv2.APIVersionDiscovery{
			Version:   v.version,
			Resources: []apidiscoveryv2.APIResourceDiscovery{},
			Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
		}
		for _, r := range v.resources {
			version.Resources = append(version.Resources, aggregatedResource(r))
		}
		group.Versions = append(group.Versions, version)
	}
	return group
}

func aggregatedResource(r *resource.Resource) apidiscoveryv2.APIResourceDiscovery {
	kind := metav1.GroupVersionKind{Kind: r.Kind}
	if r.CRDName != "" {
		kind.Group, kind.Version = r.Group, r.Version
	}
	scope := apidiscoveryv2.ScopeCluster
	if r.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	res := apidiscoveryv2.APIResourceDiscovery{
		Resource:         r.Name,
		ResponseKind:     &kind,
		Scope:            scope,
		SingularResource: r.SingularName,
		Verbs:            r.Verbs,
		ShortNames:       r.ShortNames,
		Categories:       r.Categories,
	}
	for _, sub := range subresources(r) {
		subKind := kind
		subKind.Kind = sub.kind // nodes/proxy: NodeProxyOptions
		if sub.group != "" {
			subKind = metav1.GroupVersionKind{Group: sub.group, Version: sub.version, Kind: sub.kind}
		}
		res.Subresources = append(res.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  sub.name,
			ResponseKind: &subKind,
			Verbs:        sub.verbs,
		})
	}
	return res
}
