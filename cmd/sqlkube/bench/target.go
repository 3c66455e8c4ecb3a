package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// target is the collection the run works on and how to build its objects.
type target struct {
	collection string // the collection's path
	body       bodyTemplate
	runID      string // the value of the objects' runLabel
}

// runLabel is the label every object a run creates carries, with the run's ID as its value:
// the run deletes them by it at the end.
const runLabel = "bench.sqlkube.io/run"

func newTarget(ref resourceRef, kind, namespace, runID string, objectSize int) target {
	return target{
		collection: groupVersionPath(ref) + "/namespaces/" + namespace + "/" + ref.Resource,
		body:       newBodyTemplate(ref, kind, namespace, runID, strings.Repeat("x", objectSize)),
		runID:      runID,
	}
}

// groupVersionPath is where the group version is served: /api/v1 or /apis/GROUP/VERSION.
func groupVersionPath(ref resourceRef) string {
	if ref.Group == "" {
		return "/api/" + ref.Version
	}
	return "/apis/" + ref.Group + "/" + ref.Version
}

func (t target) collectionPath() string { return t.collection }

func (t target) objectPath(name string) string { return t.collection + "/" + name }

// runObjectsPath is the collection of the objects this run created, for deleting them.
func (t target) runObjectsPath() string {
	return t.collection + "?labelSelector=" + url.QueryEscape(runLabel+"="+t.runID)
}

// bodyTemplate renders the objects the tool writes:
//
//	{"apiVersion":A,"kind":K,"metadata":{"name":N,"namespace":NS,"labels":{L:RUN}[,"resourceVersion":RV]},P:{"payload":X,"seq":"S"}}
//
// where P is "data" for ConfigMaps and "spec" for everything else: what encoding/json makes of
// the object, spliced together from pieces rendered once (encoding/json per request cost the
// tool ~2 µs and 9 allocations per write).
type bodyTemplate struct {
	beforeName []byte // up to the name's value
	afterName  []byte // the namespace and labels
	beforeSeq  []byte // from the end of metadata to the seq's value
}

func newBodyTemplate(ref resourceRef, kind, namespace, runID, payload string) bodyTemplate {
	key := "spec"
	if ref.Group == "" && kind == "ConfigMap" {
		key = "data"
	}
	apiVersion := ref.Version
	if ref.Group != "" {
		apiVersion = ref.Group + "/" + ref.Version
	}
	var t bodyTemplate
	t.beforeName = appendJSONString(append(t.beforeName, `{"apiVersion":`...), apiVersion)
	t.beforeName = appendJSONString(append(t.beforeName, `,"kind":`...), kind)
	t.beforeName = append(t.beforeName, `,"metadata":{"name":`...)
	t.afterName = appendJSONString(append(t.afterName, `,"namespace":`...), namespace)
	t.afterName = appendJSONString(append(t.afterName, `,"labels":{`+strconv.Quote(runLabel)+`:`...), runID)
	t.afterName = append(t.afterName, '}')
	t.beforeSeq = appendJSONString(append(t.beforeSeq, `},"`+key+`":{"payload":`...), payload)
	t.beforeSeq = append(t.beforeSeq, `,"seq":`...)
	return t
}

// render makes an object; seq changes its content on every update, so that the server cannot
// skip the write as a no-op. resourceVersion is empty on create.
func (t bodyTemplate) render(name, resourceVersion string, seq int) []byte {
	// Each body is a new slice: the transport may still be reading it after the response.
	b := make([]byte, 0, len(t.beforeName)+len(t.afterName)+len(t.beforeSeq)+len(name)+len(resourceVersion)+64)
	b = appendJSONString(append(b, t.beforeName...), name)
	b = append(b, t.afterName...)
	if resourceVersion != "" {
		b = appendJSONString(append(b, `,"resourceVersion":`...), resourceVersion)
	}
	b = append(b, t.beforeSeq...)
	b = append(strconv.AppendInt(append(b, '"'), int64(seq), 10), `"}}`...)
	return b
}

// appendJSONString appends s as encoding/json writes a string.
func appendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || strings.IndexByte(`"\<>&`, c) >= 0 {
			quoted, _ := json.Marshal(s)
			return append(b, quoted...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// setupTimeout bounds each step of preparing the target: creating a CRD, waiting for it.
const setupTimeout = 30 * time.Second

// resolveTarget prepares the collection: creates the CRD if asked, finds the kind through
// discovery, and creates the namespace if missing.
func resolveTarget(ctx context.Context, c *apiClient, o options, runID string) (target, error) {
	if o.createCRD {
		if err := ensureCRD(ctx, c, o.resource); err != nil {
			return target{}, err
		}
	}
	kind, err := discoverKind(ctx, c, o.resource, o.createCRD)
	if err != nil {
		return target{}, err
	}
	if err := ensureNamespace(ctx, c, o.namespace); err != nil {
		return target{}, err
	}
	return newTarget(o.resource, kind, o.namespace, runID, o.objectSize), nil
}

// discoverKind reads the group version's discovery document for the resource's kind. After
// creating a CRD it waits for the resource to appear there, since discovery may lag behind the
// CRD's Established condition.
func discoverKind(ctx context.Context, c *apiClient, ref resourceRef, wait bool) (string, error) {
	var kind string
	var lastErr error
	found := func() bool {
		kind, lastErr = lookupKind(ctx, c, ref)
		return lastErr == nil
	}
	if !wait {
		found()
		return kind, lastErr
	}
	if err := poll(ctx, found); err != nil {
		return "", fmt.Errorf("%w (last: %v)", err, lastErr)
	}
	return kind, nil
}

func lookupKind(ctx context.Context, c *apiClient, ref resourceRef) (string, error) {
	var list struct {
		Resources []struct {
			Name       string `json:"name"`
			Kind       string `json:"kind"`
			Namespaced bool   `json:"namespaced"`
		} `json:"resources"`
	}
	path := groupVersionPath(ref)
	code, detail, err := c.send(ctx, http.MethodGet, path, nil, &list)
	if err != nil {
		return "", fmt.Errorf("discovery %s: %w", path, err)
	}
	if !isSuccess(code) {
		return "", fmt.Errorf("discovery %s: HTTP %d: %s", path, code, detail)
	}
	for _, r := range list.Resources {
		if r.Name != ref.Resource {
			continue
		}
		if !r.Namespaced {
			return "", fmt.Errorf("%s is cluster-scoped; the tool drives namespaced resources", ref)
		}
		return r.Kind, nil
	}
	return "", fmt.Errorf("%s is not served by %s (use --create-crd to create it)", ref.Resource, path)
}

func ensureNamespace(ctx context.Context, c *apiClient, name string) error {
	body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]string{"name": name}})
	code, detail, err := c.send(ctx, http.MethodPost, "/api/v1/namespaces", body, nil)
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	if isSuccess(code) || code == http.StatusConflict {
		return nil
	}
	// Creating may be forbidden where the namespace already exists: that is enough.
	if getCode, _, getErr := c.send(ctx, http.MethodGet, "/api/v1/namespaces/"+name, nil, nil); getErr == nil && isSuccess(getCode) {
		return nil
	}
	return fmt.Errorf("create namespace %s: HTTP %d: %s", name, code, detail)
}

// crdFor describes a namespaced CRD serving ref, whose spec accepts any fields.
func crdFor(ref resourceRef) map[string]any {
	singular := strings.TrimSuffix(ref.Resource, "s")
	kind := strings.ToUpper(singular[:1]) + singular[1:]
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": ref.Resource + "." + ref.Group},
		"spec": map[string]any{
			"group": ref.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": ref.Resource, "singular": singular, "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": ref.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					},
				}},
			}},
		},
	}
}

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

// ensureCRD creates the CRD for ref unless it exists, and waits until it is Established.
func ensureCRD(ctx context.Context, c *apiClient, ref resourceRef) error {
	if ref.Group == "" || len(strings.TrimSuffix(ref.Resource, "s")) == 0 {
		return fmt.Errorf("--create-crd needs a group and a plural resource name, got %s", ref)
	}
	body, _ := json.Marshal(crdFor(ref))
	code, detail, err := c.send(ctx, http.MethodPost, crdPath, body, nil)
	if err != nil {
		return fmt.Errorf("create CRD: %w", err)
	}
	if !isSuccess(code) && code != http.StatusConflict {
		return fmt.Errorf("create CRD: HTTP %d: %s", code, detail)
	}
	name := ref.Resource + "." + ref.Group
	if err := poll(ctx, func() bool { return crdEstablished(ctx, c, name) }); err != nil {
		return fmt.Errorf("CRD %s not established: %w", name, err)
	}
	return nil
}

func crdEstablished(ctx context.Context, c *apiClient, name string) bool {
	var crd struct {
		Status struct {
			Conditions []struct {
				Type   string `json:"type"`
				Status string `json:"status"`
			} `json:"conditions"`
		} `json:"status"`
	}
	code, _, err := c.send(ctx, http.MethodGet, crdPath+"/"+name, nil, &crd)
	if err != nil || !isSuccess(code) {
		return false
	}
	for _, cond := range crd.Status.Conditions {
		if cond.Type == "Established" && cond.Status == "True" {
			return true
		}
	}
	return false
}

// poll calls done every 100 ms until it returns true, for at most setupTimeout. Used only while
// preparing a run, for server state that has no cheaper signal.
func poll(ctx context.Context, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %s: %w", setupTimeout, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}
