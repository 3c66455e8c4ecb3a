package server

import (
	"cmp"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/gorilla/mux"
	"github.com/munnerz/goautoneg"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"
)

// mediaTypeAggregatedDiscovery is the aggregated discovery document's media type: kubectl asks
// for it first and recognizes it by the response's Content-Type.
const mediaTypeAggregatedDiscovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// groupPriorities orders the built-in groups as kube-apiserver lists them (its aggregator's
// group priority minimums); CRD groups come after them, by name.
var groupPriorities = map[string]int{"": 18000, apiextensionsGroup: 16700, coordinationGroup: 16500}

const crdGroupPriority = 1000

// routeDiscovery registers the discovery documents kubectl and client-go read before anything
// else: /api, /api/v1, /apis, /apis/GROUP and /apis/GROUP/VERSION (legacy documents, or the
// aggregated apidiscovery.k8s.io/v2 list on /api and /apis when the Accept header asks for it),
// /version, and the OpenAPI v3 documents (see routeOpenAPI). Register it before the resource
// routes.
func (s *Server) routeDiscovery(r *mux.Router) {
	for _, path := range []string{"/api", "/api/v1", "/apis", "/apis/{group}", "/apis/{group}/{version}"} {
		r.Path(path).HandlerFunc(s.onlyGet(s.serveDiscovery))
	}
	r.Path("/version").HandlerFunc(s.onlyGet(s.serveVersion))
	s.routeOpenAPI(r)
}

// onlyGet answers other methods than GET with kube-apiserver's 405 Status.
func (s *Server) onlyGet(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			s.writeError(w, r, errMethodNotAllowed(r.Method))
			return
		}
		next(w, r)
	}
}

// serveDiscovery answers a discovery path from the documents built when the served resources
// last changed.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	aggregated, asYAML, ok := negotiateDiscovery(r.Header.Get("Accept"))
	if !ok {
		s.writeError(w, r, errNotAcceptable())
		return
	}
	doc, contentType, found := s.registry.discovery().find(r, aggregated)
	if !found {
		s.writeError(w, r, errNotFoundPath())
		return
	}
	if asYAML {
		body, err := yaml.JSONToYAML(doc.body)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		doc, contentType = newDiscoveryDoc(body), mediaTypeYAML
	}
	writeDiscoveryDoc(w, r, doc, contentType)
}

// writeDiscoveryDoc answers with doc, or 304 Not Modified when the client has it already.
func writeDiscoveryDoc(w http.ResponseWriter, r *http.Request, doc discoveryDoc, contentType string) {
	w.Header().Set("Vary", "Accept")
	w.Header().Set("ETag", doc.etag)
	w.Header().Set("Content-Type", contentType)
	if r.Header.Get("If-None-Match") == doc.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(doc.body)
}

// find picks the document for r's path: the aggregated list when asked for and the path has
// one, the legacy document otherwise.
func (d *discoveryDocs) find(r *http.Request, aggregated bool) (doc discoveryDoc, contentType string, found bool) {
	if aggregated {
		if doc, ok := d.aggregated[r.URL.Path]; ok {
			return doc, mediaTypeAggregatedDiscovery, true
		}
	}
	if r.URL.Path == "/api" {
		return legacyCoreVersions(r), mediaTypeJSON, true
	}
	doc, found = d.legacy[r.URL.Path]
	return doc, mediaTypeJSON, found
}

// negotiateDiscovery reads the Accept header: the first clause, by preference, that names the
// aggregated list, JSON or YAML decides. ok is false when none does (406).
func negotiateDiscovery(header string) (aggregated, asYAML, ok bool) {
	if header == "" {
		return false, false, true
	}
	for _, c := range goautoneg.ParseAccept(header) {
		switch {
		case c.Type == "*" || (c.Type == "application" && c.SubType == "*"):
			return false, false, true
		case c.Type != "application" || (c.SubType != "json" && c.SubType != "yaml"):
			continue
		case c.Params["as"] == "":
			return false, c.SubType == "yaml", true
		case c.SubType == "json" && c.Params["g"] == apidiscoveryv2.SchemeGroupVersion.Group &&
			c.Params["v"] == apidiscoveryv2.SchemeGroupVersion.Version && c.Params["as"] == "APIGroupDiscoveryList":
			return true, false, true
		}
	}
	return false, false, false
}

// discoveryDoc is one encoded discovery document.
type discoveryDoc struct {
	body []byte
	etag string
}

func newDiscoveryDoc(body []byte) discoveryDoc {
	return discoveryDoc{body: body, etag: fmt.Sprintf(`"%X"`, sha512.Sum512(body))}
}

// discoveryDocs holds the encoded documents, by path.
type discoveryDocs struct {
	legacy     map[string]discoveryDoc
	aggregated map[string]discoveryDoc
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
	resources []*Resource // by name
}

// buildDiscovery encodes the discovery documents for a set of served resources.
func buildDiscovery(resources map[string]*Resource) *discoveryDocs {
	groups := groupResources(resources)
	docs := &discoveryDocs{
		legacy:     map[string]discoveryDoc{},
		aggregated: map[string]discoveryDoc{},
		openapi:    &lazyOpenAPI{resources: groups},
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

func encodeDoc(v any) discoveryDoc {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding a discovery document: %v", err)) // plain structs: cannot happen
	}
	return newDiscoveryDoc(body)
}

// groupResources sorts the served resources into groups in kube-apiserver's order, their
// versions by preference (Kubernetes version priority: v2, v1, v1beta1, v1alpha1...), and
// each version's resources by name.
func groupResources(resources map[string]*Resource) []discoveryGroup {
	byGroup := map[string]map[string][]*Resource{}
	for _, r := range resources {
		if byGroup[r.Group] == nil {
			byGroup[r.Group] = map[string][]*Resource{}
		}
		byGroup[r.Group][r.Version] = append(byGroup[r.Group][r.Version], r)
	}
	var groups []discoveryGroup
	for name, versions := range byGroup {
		g := discoveryGroup{name: name}
		for v, rs := range versions {
			slices.SortFunc(rs, func(a, b *Resource) int { return cmp.Compare(a.Name, b.Name) })
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
func legacyCoreVersions(r *http.Request) discoveryDoc {
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
			GroupVersion: groupVersion(g.name, v.version), Version: v.version,
		})
	}
	group.PreferredVersion = group.Versions[0]
	return group
}

// legacyResourceList is /api/v1's or /apis/GROUP/VERSION's APIResourceList: each resource,
// followed by its subresources, by name. The core group's document has no apiVersion, as
// kube-apiserver's.
func legacyResourceList(group string, v discoveryVersion) metav1.APIResourceList {
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: groupVersion(group, v.version)}
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
			StorageVersionHash: r.storageVersionHash(),
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
func subresources(r *Resource) []subresource {
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

func aggregatedResource(r *Resource) apidiscoveryv2.APIResourceDiscovery {
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
