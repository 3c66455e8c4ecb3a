package kuberef

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// randomRequests is how many requests the main seed sends to each server.
const randomRequests = 10000

// regressionSeeds found a difference once; each runs regressionRequests requests again. (Seed 1,
// the main seed, found the first sqlkube differences; 4 and 5 found the harness's normalization
// gaps: a label value equal to a resourceVersion, managedFields written across a second.)
var regressionSeeds = []uint64{4, 5}

const regressionRequests = 500

// TestRandomized sends seeded random request sequences (creates, updates with fresh and stale
// resourceVersions, patches, deletes with preconditions, lists with selectors and pages,
// watches from recent revisions) to kube and sqlkube in lockstep, comparing every answer.
// SQLKUBE_CONFORMANCE_SEED and SQLKUBE_CONFORMANCE_REQUESTS run one seed instead.
func TestRandomized(t *testing.T) {
	runs := map[uint64]int{1: randomRequests}
	for _, seed := range regressionSeeds {
		runs[seed] = regressionRequests
	}
	if s := os.Getenv("SQLKUBE_CONFORMANCE_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SQLKUBE_CONFORMANCE_SEED: %v", err)
		}
		n, _ := strconv.Atoi(os.Getenv("SQLKUBE_CONFORMANCE_REQUESTS"))
		runs = map[uint64]int{seed: max(n, 1000)}
	}
	kube, sqlkubes := startServers(t)
	// sqlkube's controllers write in the background (most likely the APIService of a CRD's group
	// version and its status), which moves the store's revision between a write and a list on PostgreSQL now
	// and then; objects' resourceVersions are still compared.
	l := newLockstep(kube, sqlkubes).ignoreListRevisions()
	for _, s := range []step{
		{method: "POST", path: crds, body: widgetCRD, setup: true},
		{method: "GET", path: widgets, setup: true, waitFor: 200},
	} {
		if _, err := l.run(s); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for seed, n := range runs {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) { total += runRandom(t, l, newGenerator(seed), n) })
	}
	l.reset()
	t.Logf("%d random requests to each of %d servers", total, 1+len(sqlkubes))
}

// runRandom sends n of g's requests to every server of l, failing at the first that differs
// (after it the servers may have diverged), and returns how many it sent.
func runRandom(t *testing.T, l *lockstep, g *generator, n int) int {
	l.reset()
	i := 0
	for i < n {
		for _, s := range g.next() {
			i++
			diffs, err := l.run(s)
			if err != nil {
				t.Fatalf("seed %s request %d %s %s as %q: %v", g.seed, i, s.method, s.path, s.as, err)
			}
			for _, d := range mergeDifferences(diffs) {
				t.Errorf("seed %s request %d %s %s as %q%s %.300s\n--- kube\n+++ %s\n%s", g.seed, i, s.method, s.path, s.as, impersonating(s), s.body, d.backend, lineDiff(d.kube, d.skub))
			}
			if len(diffs) > 0 {
				t.Fatalf("seed %s: the servers may have diverged; stopping (rerun with SQLKUBE_CONFORMANCE_SEED=%s)", g.seed, g.seed)
			}
		}
	}
	return i
}

func impersonating(s step) string {
	if u := s.headers["Impersonate-User"]; u != "" {
		return " impersonating " + u
	}
	return ""
}

// generator makes random request sequences over a small pool of Widgets of its seed, labelled
// seed=N so that its lists and watches see only them.
type generator struct {
	r     *rand.Rand
	seed  string
	names []string
	// marker is the object written at the end of every watch sequence: its event ends the read.
	marker  string
	watches int
	started bool
	// identities, when set, are who may send each sequence besides the admin (asIdentity).
	identities []identity
}

func newGenerator(seed uint64) *generator {
	g := &generator{r: rand.New(rand.NewPCG(seed, 15)), seed: strconv.FormatUint(seed, 10)}
	for i := range 8 {
		g.names = append(g.names, fmt.Sprintf("r%s-%d", g.seed, i))
	}
	g.marker = "r" + g.seed + "-marker"
	return g
}

func (g *generator) pick(options ...string) string { return options[g.r.IntN(len(options))] }

func (g *generator) name() string { return g.names[g.r.IntN(len(g.names))] }

// labels are the seed label and a random tier, or none.
func (g *generator) labels() string {
	return fmt.Sprintf(`"labels":{"seed":%q%s}`, g.seed, g.pick(``, `,"tier":"a"`, `,"tier":"b"`, `,"tier":"c"`))
}

func (g *generator) spec() string {
	return g.pick(`{"color":"red"}`, `{"color":"blue","size":2}`, `{}`, `{"size":5}`, `{"size":"big"}`, `{"color":"green","extra":1}`)
}

// precondition is a resourceVersion or uid the server has answered for name: the last one,
// the one before, or a wrong one.
func (g *generator) rv(name string) string {
	return g.pick("{{rv:"+name+"}}", "{{rv:"+name+"}}", "{{oldrv:"+name+"}}", "1")
}

// next is the next request, or a sequence of requests that belong together (a watch, its
// writes and its read; a list and its pages), sent by one identity.
func (g *generator) next() []step {
	if g.identities != nil && g.started {
		return g.asIdentity(g.sequence())
	}
	return g.sequence()
}

// sequence is the next request or requests, as the admin.
func (g *generator) sequence() []step {
	if !g.started {
		g.started = true
		return []step{{method: "POST", path: widgets, body: widgetWith(g.marker, `"labels":{"seed":"`+g.seed+`","tier":"a"}`, `{"size":0}`)}}
	}
	switch n := g.r.IntN(100); {
	case n < 18:
		return []step{g.create()}
	case n < 30:
		return []step{g.update()}
	case n < 45:
		return []step{g.patch()}
	case n < 55:
		return []step{g.delete()}
	case n < 60:
		return []step{get(g.name())}
	case n < 62:
		return []step{g.read()}
	case n < 70:
		return []step{g.finalizers()}
	case n < 74:
		return []step{g.status()}
	case n < 87:
		return g.list()
	case n < 88:
		return []step{g.deleteCollection()}
	default:
		return g.watch()
	}
}

func (g *generator) create() step {
	name := g.name()
	meta := g.labels()
	if g.r.IntN(4) == 0 {
		meta += `,"finalizers":["example.com/hold"]`
	}
	// No generateName: generated names are random, so lists would order them differently.
	q := g.pick("", "", "?dryRun=All", "?fieldValidation=Strict", "?fieldValidation=Ignore")
	return step{method: "POST", path: widgets + q, body: widgetWith(name, meta, g.spec())}
}

// read gets an object at a resourceVersion, or one of its subresources. (resourceVersion=0 is
// for the scenarios: kube serves it from its watch cache, which may not have the last write yet.)
func (g *generator) read() step {
	name := g.name()
	// The marker's resourceVersion is known from the start: one of an object not seen yet would
	// stay a placeholder, which is malformed (a 400 in sqlkube, a 500 in kube).
	return step{method: "GET", path: widgets + "/" + name + g.pick("?resourceVersion={{rv:"+g.marker+"}}", "/status", "/scale")}
}

// deleteCollection deletes the seed's objects of one tier (the marker's tier is never chosen).
func (g *generator) deleteCollection() step {
	return step{method: "DELETE", path: widgets + "?labelSelector=seed%3D" + g.seed + ",tier%3D" + g.pick("b", "c") + g.pick("", "&dryRun=All")}
}

func (g *generator) update() step {
	name := g.name()
	meta := g.labels()
	if rv := g.pick("", "rv", "rv"); rv != "" {
		meta += `,"resourceVersion":"` + g.rv(name) + `"`
	}
	return step{method: "PUT", path: widgets + "/" + name + g.pick("", "?dryRun=All"), body: widgetWith(name, meta, g.spec())}
}

func (g *generator) patch() step {
	name := g.name()
	switch g.r.IntN(4) {
	case 0:
		return step{method: "PATCH", path: widgets + "/" + name, contentType: mergePatch,
			body: `{"metadata":{` + g.labels() + `},"spec":` + g.spec() + `}`}
	case 1:
		return step{method: "PATCH", path: widgets + "/" + name, contentType: mergePatch,
			body: `{"metadata":{"resourceVersion":"` + g.rv(name) + `"},"spec":{"size":` + strconv.Itoa(g.r.IntN(9)) + `}}`}
	case 2:
		return step{method: "PATCH", path: widgets + "/" + name, contentType: jsonPatch,
			body: g.pick(`[{"op":"replace","path":"/spec/color","value":"pink"}]`, `[{"op":"add","path":"/spec/size","value":3}]`,
				`[{"op":"test","path":"/spec/color","value":"red"},{"op":"remove","path":"/spec/color"}]`, `[{"op":"remove","path":"/metadata/labels/tier"}]`)}
	default:
		manager := g.pick("alice", "bob")
		return step{method: "PATCH", path: widgets + "/" + name + "?fieldManager=" + manager + g.pick("", "&force=true"), contentType: applyPatch,
			body: widgetWith(name, g.labels(), g.pick(`{"color":"red"}`, `{"color":"blue"}`, `{"size":4}`))}
	}
}

func (g *generator) delete() step {
	name := g.name()
	body := g.pick(``, ``, `{"preconditions":{"uid":"{{uid:`+name+`}}"}}`, `{"preconditions":{"resourceVersion":"`+g.rv(name)+`"}}`,
		`{"preconditions":{"uid":"6b0e7c1e-0000-4000-8000-000000000000"}}`, `{"dryRun":["All"]}`)
	return step{method: "DELETE", path: widgets + "/" + name, body: body}
}

func (g *generator) finalizers() step {
	return step{method: "PATCH", path: widgets + "/" + g.name(), contentType: mergePatch,
		body: g.pick(`{"metadata":{"finalizers":null}}`, `{"metadata":{"finalizers":["example.com/hold"]}}`)}
}

func (g *generator) status() step {
	name := g.name()
	if g.r.IntN(2) == 0 {
		return step{method: "PATCH", path: widgets + "/" + name + "/status", contentType: mergePatch, body: `{"status":{"ready":` + g.pick("true", "false") + `}}`}
	}
	return step{method: "PUT", path: widgets + "/" + name + "/status",
		body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `","resourceVersion":"` + g.rv(name) + `"},"status":{"ready":true}}`}
}

// selector is a label selector on the seed's objects, with a random extra requirement.
func (g *generator) selector() string {
	return "labelSelector=seed%3D" + g.seed + g.pick("", ",tier%3Da", ",tier!%3Db", ",tier+in+(a,c)", ",tier", ",!tier")
}

func (g *generator) list() []step {
	q := "?" + g.selector()
	if g.r.IntN(3) == 0 {
		q += "&fieldSelector=" + g.pick("metadata.name%3D"+g.name(), "metadata.name!%3D"+g.name(), "metadata.namespace%3Ddefault")
	}
	if g.r.IntN(2) == 0 {
		return []step{{method: "GET", path: widgets + q}}
	}
	limit := "&limit=" + strconv.Itoa(1+g.r.IntN(4))
	steps := []step{{method: "GET", path: widgets + q + limit}}
	for range g.r.IntN(3) {
		if g.r.IntN(3) == 0 {
			steps = append(steps, g.create())
		}
		steps = append(steps, step{method: "GET", path: widgets + "?" + g.selector() + limit + "&continue={{continue}}"})
	}
	return steps
}

// watch opens a watch from the marker's last revision (recent on both servers: older ones may
// have left kube's watch cache) with a selector the marker matches, makes a few writes, then
// writes the marker and reads every event up to the marker's.
func (g *generator) watch() []step {
	g.watches++
	w := fmt.Sprintf("w%d", g.watches)
	sel := "labelSelector=seed%3D" + g.seed + g.pick("", ",tier%3Da", ",tier!%3Db", ",tier+in+(a,c)", ",tier")
	from := g.pick("&resourceVersion={{rv:"+g.marker+"}}", "&resourceVersion={{rv:"+g.marker+"}}&allowWatchBookmarks=true",
		"&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	steps := []step{{watch: w, method: "GET", path: widgets + "?watch=1&" + sel + from}}
	for range 1 + g.r.IntN(4) {
		switch g.r.IntN(4) {
		case 0:
			steps = append(steps, g.create())
		case 1:
			steps = append(steps, g.patch())
		case 2:
			steps = append(steps, g.delete())
		default:
			steps = append(steps, g.finalizers())
		}
	}
	return append(steps,
		step{method: "PATCH", path: widgets + "/" + g.marker, contentType: mergePatch, body: fmt.Sprintf(`{"spec":{"size":%d}}`, g.watches)},
		step{watch: w, until: g.marker})
}
