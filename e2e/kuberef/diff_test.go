package kuberef

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// target is one of the servers the steps run against.
type target struct {
	endpoint
	// users holds a client for each identity a step was sent as.
	users map[string]*http.Client
	// tokens map the values that legitimately differ between servers (uids, resourceVersions)
	// to names given in order of first sight, so that equality between them is still compared.
	tokens map[string]string
	// byIdentity maps what makes two values one (see tokenAs) to their shared token.
	byIdentity map[string]string
	counts     map[string]int
	// objects holds the raw uid and resourceVersion last answered for each object name, and
	// "continue" under "" the last list's continue token.
	objects map[string]map[string]string
	// watches are the open watch streams by name.
	watches map[string]*stream
	// literals are the scalar values the scenario's requests carried (an IP or port asked for
	// is compared as it is); allocated maps the cluster IPs and node ports the server chose
	// itself to tokens.
	literals  map[string]bool
	allocated map[string]string
	// headers says whether the Audit-Id and priority and fairness headers are compared (the
	// apiextensions reference runs neither audit nor priority and fairness); priorityNames maps
	// the uids those headers carry to the names of the flow schemas and priority levels.
	headers       bool
	priorityNames map[string]string
	// listRevisions says whether a list's resourceVersion is compared (see ignoreListRevisions).
	listRevisions bool
	// audit reads the server's audit log, when its events are compared.
	audit *auditLog
}

func newTarget(e endpoint) *target {
	t := &target{endpoint: e, users: map[string]*http.Client{}, objects: map[string]map[string]string{}, watches: map[string]*stream{}, listRevisions: true}
	if e.auditLog != "" {
		t.audit = &auditLog{path: e.auditLog}
	}
	t.reset()
	return t
}

// reset forgets what one scenario learnt: tokens restart so that a scenario's answers compare
// alike whatever ran before it, and its watches are closed.
func (t *target) reset() {
	t.tokens, t.byIdentity, t.counts = map[string]string{}, map[string]string{}, map[string]int{}
	t.literals, t.allocated = map[string]bool{firstServiceIP: true}, map[string]string{}
	for name, w := range t.watches {
		w.close()
		delete(t.watches, name)
	}
}

// step is one HTTP request of a scenario.
type step struct {
	method, path, body string
	// contentType is the request body's media type; JSON when empty.
	contentType string
	// accept is the Accept header; JSON when empty.
	accept string
	// pick reduces a decoded body to the part that is compared (e.g. one group of a discovery
	// document whose other groups are each server's own).
	pick func(any) any
	// watch names a watch stream. With a path the step opens it (the answer compared is the
	// opening's code and, if it failed, its body); then, or without a path, it reads events
	// events from it, or until an event about the object named until (then closes it), or what
	// arrives within 10 seconds, and compares them in order. Bookmarks other than the one that
	// ends the initial events are skipped: when they come is each server's choice.
	watch  string
	events int
	until  string
	// setup steps are compared by status code only (their bodies describe each server's own
	// objects, e.g. a CRD's status).
	setup bool
	// known names a difference from kube not fixed yet (docs/conformance.md lists them): it is
	// logged rather than failed, and its disappearance fails so that the mark is removed.
	known string
	// headers are more request headers (impersonation).
	headers map[string]string
	// as names the identity the request is sent as (a key of identities); the server's admin
	// when empty.
	as string
	// waitFor repeats the request until it answers this code, for what becomes ready in the
	// background (a new CRD's resource).
	waitFor int
	// knownAudit names a difference of the request's audit events, as known does of its answer.
	knownAudit string
}

// result is a response reduced to what is compared.
type result struct {
	Code        int
	ContentType string
	Warnings    []string
	Headers     map[string]string `json:",omitempty"`
	Body        any
	// audit is the request's audit events, reduced (auditEvents), when they are compared; they
	// are compared apart from the answer.
	audit []any
}

func (t *target) do(s step) (result, error) {
	if s.watch != "" {
		return t.doWatch(s)
	}
	t.learnLiterals(s.body)
	deadline := time.Now().Add(30 * time.Second)
	for {
		// A try that is repeated leaves no tokens: each server may need a different number of
		// tries (a dry-run create answers a new uid each time).
		tokens, counts := maps.Clone(t.tokens), maps.Clone(t.counts)
		r, err := t.once(s)
		if err != nil || s.waitFor == 0 || r.Code == s.waitFor || time.Now().After(deadline) {
			return r, err
		}
		t.tokens, t.counts = tokens, counts
		time.Sleep(50 * time.Millisecond)
	}
}

func (t *target) once(s step) (result, error) {
	resp, err := t.send(s)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{}, err
	}
	r := result{Code: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Warnings: resp.Header.Values("Warning"), Headers: t.compared(resp.Header)}
	if s.setup {
		r = result{Code: r.Code}
	} else {
		r.Body = t.decodeAnswer(r.ContentType, data, s.pick)
	}
	r.audit, err = t.auditOf(resp, false)
	return r, err
}

// auditOf is the audit events of the request resp answers, reduced, when they are compared;
// streaming says that the answer is a watch being served (its last event so far is
// ResponseStarted). They are reduced after the answer's body, whose uids and resourceVersions
// they refer to.
func (t *target) auditOf(resp *http.Response, streaming bool) ([]any, error) {
	if t.audit == nil {
		return nil, nil
	}
	events, err := t.audit.eventsOf(resp.Header.Get("Audit-Id"), streaming)
	if err != nil {
		return nil, err
	}
	return t.auditEvents(events), nil
}

// send makes the step's request.
func (t *target) send(s step) (*http.Response, error) {
	var body io.Reader
	if s.body != "" {
		body = strings.NewReader(s.body)
	}
	req, err := http.NewRequest(s.method, t.url+s.path, body)
	if err != nil {
		return nil, err
	}
	accept := s.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	if s.body != "" {
		ct := s.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	client, err := t.clientAs(s.as)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

// compared reduces the Audit-Id and priority and fairness headers to what two servers share:
// whether Audit-Id is there (its value is a random id), and the names of the flow schema and
// priority level the request was classified by (the headers carry their uids).
func (t *target) compared(h http.Header) map[string]string {
	if !t.headers {
		return nil
	}
	out := map[string]string{}
	if h.Get("Audit-Id") != "" {
		out["Audit-Id"] = "<present>"
	}
	for _, name := range []string{"X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID"} {
		if uid := h.Get(name); uid != "" {
			out[name] = t.priorityName(uid)
		}
	}
	return out
}

// priorityName is the name of the flow schema or priority level whose uid is uid, listing them
// again when it is not known yet.
func (t *target) priorityName(uid string) string {
	if name, ok := t.priorityNames[uid]; ok {
		return name
	}
	if t.priorityNames == nil {
		t.priorityNames = map[string]string{}
	}
	for _, kind := range []string{"flowschemas", "prioritylevelconfigurations"} {
		resp, err := t.client.Get(t.url + "/apis/flowcontrol.apiserver.k8s.io/v1/" + kind)
		if err != nil {
			continue
		}
		var list struct {
			Items []struct{ Metadata struct{ Name, UID string } }
		}
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		for _, item := range list.Items {
			t.priorityNames[item.Metadata.UID] = kind + "/" + item.Metadata.Name
		}
	}
	if name, ok := t.priorityNames[uid]; ok {
		return name
	}
	return "<a uid that names no flow schema or priority level>"
}

// clientAs is the client of the identity named user, minted on first use.
func (t *target) clientAs(user string) (*http.Client, error) {
	if user == "" {
		return t.client, nil
	}
	if c, ok := t.users[user]; ok {
		return c, nil
	}
	groups, ok := identities[user]
	if !ok || t.clientFor == nil {
		return nil, fmt.Errorf("%s cannot authenticate as %q", t.name, user)
	}
	c, err := t.clientFor(user, groups)
	if err != nil {
		return nil, err
	}
	t.users[user] = c
	return c, nil
}

// decode parses a JSON body, learns its varying values and normalizes it; a body that is not
// JSON is compared as text.
func (t *target) decode(data []byte, pick func(any) any) any {
	var decoded any
	if err := json.Unmarshal(data, &decoded); err != nil {
		return string(data)
	}
	// What later steps refer to is remembered before pick drops it (a TokenRequest's token).
	t.remember(decoded)
	if pick != nil {
		decoded = pick(decoded)
	}
	hideAges(decoded)
	if !t.listRevisions {
		hideListRevision(decoded)
	}
	t.collect(decoded, "")
	// Sorted once normalized: sorted before, values the normalization replaces (a manager named
	// as an allocated value is) would order the two servers' causes differently.
	normalized := t.normalize(decoded, "")
	sortApplyConflicts(normalized)
	return normalized
}

// varying are the fields whose values differ between any two servers; their values are
// replaced by tokens wherever they appear, messages included.
var varying = map[string]string{"uid": "UID", "resourceVersion": "RV", "continue": "CONTINUE"}

// timestamps are replaced outright.
var timestamps = map[string]bool{"creationTimestamp": true, "deletionTimestamp": true, "time": true, "lastTransitionTime": true, "lastUpdateTime": true}

// collect learns the varying values of v in a fixed order (keys sorted), so that tokens are
// numbered alike on both servers.
func (t *target) collect(v any, key string) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.collect(v[k], k)
		}
	case []any:
		for _, e := range v {
			t.collect(e, key)
		}
	case float64:
		t.allocate(key, strconv.FormatFloat(v, 'f', -1, 64))
	case string:
		if kind, ok := varying[key]; ok && v != "" {
			if kind == "CONTINUE" && !t.listRevisions {
				t.tokenAs(kind, v, withoutRevision(v))
			} else {
				t.token(kind, v)
			}
		}
		t.allocate(key, v)
		// A precondition's 409 names the stored resourceVersion, which may not have been
		// answered before (a collection's delete changed it).
		if m := recordVersion.FindStringSubmatch(v); key == "message" && m != nil {
			t.token("RV", m[1])
		}
	}
	// A generated name's random suffix differs too.
	if m, ok := v.(map[string]any); ok {
		prefix, _ := m["generateName"].(string)
		if name, _ := m["name"].(string); prefix != "" && strings.HasPrefix(name, prefix) {
			t.token("NAME", name)
		}
	}
}

func (t *target) token(kind, value string) string { return t.tokenAs(kind, value, value) }

// tokenAs is token for a value known by identity: values of one identity share a token.
func (t *target) tokenAs(kind, value, identity string) string {
	if tok, ok := t.tokens[value]; ok {
		return tok
	}
	tok, ok := t.byIdentity[identity]
	if !ok {
		t.counts[kind]++
		tok = fmt.Sprintf("<%s%d>", kind, t.counts[kind])
		t.byIdentity[identity] = tok
	}
	t.tokens[value] = tok
	return tok
}

// withoutRevision is a continue token's identity when list revisions are not compared: its
// content (kube-apiserver's and sqlkube's tokens are both base64 JSON) without the revision of
// the list it continues. That revision counts writes no step made (see ignoreListRevisions), so
// the same page asked for twice could get one token on one server and two on another.
func withoutRevision(token string) string {
	data, err := base64.RawURLEncoding.DecodeString(token)
	var content map[string]any
	if err != nil || json.Unmarshal(data, &content) != nil {
		return token
	}
	delete(content, "rv")
	identity, _ := json.Marshal(content)
	return string(identity)
}

func (t *target) normalize(v any, key string) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			// managedFields name list items by their keys, uids among them (k:{"uid":...}).
			out[t.replaceTokens(k, false)] = t.normalize(e, k)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = t.normalize(e, key)
		}
		if key == "managedFields" {
			sortManagedFields(out)
		}
		return out
	case float64:
		n := strconv.FormatFloat(v, 'f', -1, 64)
		if tok, ok := t.allocated[n]; ok && allocatedKeys[key] != "" {
			return tok
		}
		if key == "targetPort" && n == t.address().Port() {
			return "<server port>"
		}
	case string:
		if timestamps[key] && v != "" {
			return "<time>"
		}
		if _, ok := varying[key]; ok {
			if tok, ok := t.tokens[v]; ok {
				return tok
			}
			return v
		}
		if key == "serverAddress" && v == t.address().Host {
			return "<server address>"
		}
		if key == "requestURI" {
			v = t.replaceQueryVersions(v)
		}
		v = apiAccessVolume.ReplaceAllString(v, "kube-api-access-<random>")
		v = credentialID.ReplaceAllString(v, "$1=<credential>")
		return t.replaceAllocated(t.replaceTokens(timestamp.ReplaceAllString(v, "<time>"), key == "message"))
	}
	return v
}

// firstServiceIP is the first address of the service range (10.0.0.0/24, kube-apiserver's
// default and the reference's flag), the default kubernetes Service's on every server: compared
// as it is, not as an allocation.
const firstServiceIP = "10.0.0.1"

// allocatedKeys are the fields whose values the server allocates when the request names none,
// by the kind of token they become.
var allocatedKeys = map[string]string{"clusterIP": "IP", "clusterIPs": "IP", "nodePort": "PORT", "healthCheckNodePort": "PORT"}

// serviceRange and nodePorts are the ranges allocations come from: kube-apiserver's defaults,
// which the reference is started with and sqlkube defaults to.
var (
	serviceRange             = netip.MustParsePrefix("10.0.0.0/24")
	minNodePort, maxNodePort = 30000, 32767
)

// allocate learns a value the server chose for an allocated field: it becomes a token only if
// the request did not name it and it lies in its range, so that an address out of the range is
// still seen as a difference, and two objects given the same one get the same token.
func (t *target) allocate(key, value string) {
	kind := allocatedKeys[key]
	if kind == "" || t.literals[value] || !inAllocationRange(kind, value) {
		return
	}
	if _, ok := t.allocated[value]; !ok {
		t.counts[kind]++
		t.allocated[value] = fmt.Sprintf("<%s%d>", kind, t.counts[kind])
	}
}

// inAllocationRange says whether value is an address of the service range other than its
// network and broadcast addresses (kind IP), or a port of the node port range (kind PORT).
func inAllocationRange(kind, value string) bool {
	if kind == "PORT" {
		n, err := strconv.Atoi(value)
		return err == nil && n >= minNodePort && n <= maxNodePort
	}
	ip, err := netip.ParseAddr(value)
	if err != nil || !serviceRange.Contains(ip) || ip == serviceRange.Addr() {
		return false
	}
	return ip.Next().IsValid() && serviceRange.Contains(ip.Next())
}

// replaceAllocated puts the tokens of allocated addresses and ports in a string (a table's
// Cluster-IP and Port(s) cells), whole addresses and numbers only.
func (t *target) replaceAllocated(s string) string {
	if len(t.allocated) == 0 {
		return s
	}
	return addressOrPort.ReplaceAllStringFunc(s, func(v string) string {
		if tok, ok := t.allocated[v]; ok {
			return tok
		}
		return v
	})
}

var addressOrPort = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b|\b\d{5}\b`)

// apiAccessVolume is the projected token volume kube's ServiceAccount admission adds to a pod,
// named with a random suffix.
var apiAccessVolume = regexp.MustCompile(`\bkube-api-access-[a-z0-9]{5}\b`)

// learnLiterals records the scalar values of a request body.
func (t *target) learnLiterals(body string) {
	var decoded any
	if json.Unmarshal([]byte(body), &decoded) != nil {
		return
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			t.literals[v] = true
		case float64:
			t.literals[strconv.FormatFloat(v, 'f', -1, 64)] = true
		}
	}
	walk(decoded)
}

// address is the server's own address (discovery's serverAddress, and the port a Service's
// targetPort to it names, are each server's own).
func (t *target) address() *url.URL {
	u, err := url.Parse(t.url)
	if err != nil {
		return &url.URL{}
	}
	return u
}

// credentialID is the id of the credential a user authenticated with, in a user's extra
// (authentication.kubernetes.io/credential-id, which a CSR and a TokenReview carry): the
// fingerprint of each server's own client certificate, or a token's random JWT id.
var credentialID = regexp.MustCompile(`^(JTI|X509SHA256)=[0-9a-f-]+$`)

// replaceTokens puts tokens for the known uids and continue tokens in s, longest first; in a
// message also resourceVersions written as whole numbers (elsewhere a number is a label value or
// part of a name).
func (t *target) replaceTokens(s string, message bool) string {
	if message {
		s = wholeNumber.ReplaceAllStringFunc(s, func(n string) string {
			if tok, ok := t.tokens[n]; ok {
				return tok
			}
			return n
		})
	}
	values := make([]string, 0, len(t.tokens))
	for v := range t.tokens {
		if !onlyDigits.MatchString(v) {
			values = append(values, v)
		}
	}
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
	for _, v := range values {
		s = strings.ReplaceAll(s, v, t.tokens[v])
	}
	return s
}

// replaceQueryVersions replaces the resourceVersions a request's URI asks for (an audit event's
// requestURI) with their tokens.
func (t *target) replaceQueryVersions(uri string) string {
	return queryVersion.ReplaceAllStringFunc(uri, func(param string) string {
		name, rv, _ := strings.Cut(param, "=")
		if tok, ok := t.tokens[rv]; ok {
			return name + "=" + tok
		}
		return param
	})
}

// queryVersion finds a resourceVersion in a query.
var queryVersion = regexp.MustCompile(`\bresourceVersion=[0-9]+`)

// timestamp finds RFC 3339 times inside strings (an object quoted in a message).
var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// recordVersion finds the stored resourceVersion in a failed precondition's message.
var recordVersion = regexp.MustCompile(`ResourceVersion in record \(([0-9]+)\)`)

// wholeNumber finds the runs of name characters in messages; resourceVersions are the runs
// that are whole numbers (not the digits of a name like "r1-6").
var wholeNumber = regexp.MustCompile(`[\w.-]+`)

var onlyDigits = regexp.MustCompile(`^[0-9]+$`)

// expand fills {{uid:NAME}}, {{rv:NAME}} and {{oldrv:NAME}} (the resourceVersion before) in a
// step from the last responses about NAME on this server, {{continue}} with the last list's
// continue token and {{value:token}} with the last TokenRequest's token; scenarios use them for
// preconditions, resourceVersions, pages and token reviews.
func (t *target) expand(s step) step {
	for name, fields := range t.objects {
		for field, value := range fields {
			placeholder := "{{" + field + ":" + name + "}}"
			if name == "" {
				placeholder = "{{" + field + "}}"
			}
			s.path = strings.ReplaceAll(s.path, placeholder, value)
			s.body = strings.ReplaceAll(s.body, placeholder, value)
		}
	}
	return s
}

func pretty(r result) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(bytes.TrimSpace(b))
}

// remember keeps the uid and resourceVersion of an object answered.
func (t *target) remember(v any) {
	obj, _ := v.(map[string]any)
	// A token is each server's own JWT: a token, wherever it shows (a TokenReview's spec).
	if status, _ := obj["status"].(map[string]any); obj["kind"] == "TokenRequest" && status["token"] != nil {
		t.objects["token"] = map[string]string{"value": fmt.Sprint(status["token"])}
		t.token("TOKEN", fmt.Sprint(status["token"]))
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	uid, _ := meta["uid"].(string)
	rv, _ := meta["resourceVersion"].(string)
	if name == "" || uid == "" {
		if c, ok := meta["continue"].(string); ok {
			t.objects[""] = map[string]string{"continue": url.QueryEscape(c), "listrv": rv}
		}
		return
	}
	// oldrv is the one before, for updates and preconditions that are stale.
	oldrv := rv
	if prev, ok := t.objects[name]; ok && prev["rv"] != rv {
		oldrv = prev["rv"]
	}
	t.objects[name] = map[string]string{"uid": uid, "rv": rv, "oldrv": oldrv}
}

// sortApplyConflicts orders the causes and message lines of an apply conflict: kube lists the
// conflicting managers in no fixed order (it ranges over a map).
func sortApplyConflicts(v any) {
	status, _ := v.(map[string]any)
	details, _ := status["details"].(map[string]any)
	causes, _ := details["causes"].([]any)
	if status["reason"] != "Conflict" || len(causes) < 2 {
		return
	}
	sort.Slice(causes, func(i, j int) bool { return fmt.Sprint(causes[i]) < fmt.Sprint(causes[j]) })
	if message, ok := status["message"].(string); ok {
		lines := strings.Split(message, "\n")
		sort.Strings(lines[1:])
		status["message"] = strings.Join(lines, "\n")
	}
}

// hideListRevision replaces the resourceVersion of a list or a table (an object with items or
// rows) by "<list revision>".
func hideListRevision(v any) {
	list, _ := v.(map[string]any)
	_, items := list["items"]
	_, rows := list["rows"]
	meta, _ := list["metadata"].(map[string]any)
	if (items || rows) && meta["resourceVersion"] != nil {
		meta["resourceVersion"] = "<list revision>"
	}
}

// hideAges replaces the cells of a table's Age column: the time since each object was created,
// which differs by the time each server took to get there (the kubernetes Service's, by when
// each server started).
func hideAges(v any) {
	table, _ := v.(map[string]any)
	if table["kind"] != "Table" {
		return
	}
	columns, _ := table["columnDefinitions"].([]any)
	for i, c := range columns {
		if column, _ := c.(map[string]any); column["name"] != "Age" {
			continue
		}
		rows, _ := table["rows"].([]any)
		for _, r := range rows {
			row, _ := r.(map[string]any)
			if cells, _ := row["cells"].([]any); i < len(cells) {
				cells[i] = "<age>"
			}
		}
	}
}

// sortManagedFields orders managedFields entries as kube encodes them, but without their times:
// kube orders by the second each entry was written, so two writes in the same second or not
// order them differently on two servers.
func sortManagedFields(entries []any) {
	key := func(e any) string {
		m, _ := e.(map[string]any)
		return fmt.Sprint(m["operation"], "\x00", m["manager"], "\x00", m["apiVersion"], "\x00", m["subresource"])
	}
	sort.SliceStable(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
}
