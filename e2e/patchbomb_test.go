package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// bombAnswerBound is how soon a refused patch bomb must be answered on a loaded test machine
	// (kube-apiserver: half a second) and bombBodyBound how large the answer may be.
	bombAnswerBound = 5 * time.Second
	bombBodyBound   = 4 << 10
	// bombMemoryBoundKiB is how much the server's peak resident memory may grow while refusing
	// them: the copies stop at 3 MiB, a few copies of which are alive at once.
	bombMemoryBoundKiB = 128 << 10
	bombConfigMaps     = "/api/v1/namespaces/default/configmaps"
)

// doublingCopyPatch is a JSON patch of n copies of /data into itself, each doubling it.
func doublingCopyPatch(n int) []byte {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/c%d"}`, i)
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

// doWithin is s.do that gives up after limit, so that a server that never answers fails the test
// instead of hanging it, and reports how long the answer took.
func (s *sqlkubeServer) doWithin(t *testing.T, limit time.Duration, method, path string, body []byte, headers ...string) (response, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	start := time.Now()
	resp, err := s.httpClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: no answer within %s: %v", method, path, limit, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatalf("%s %s: reading the answer within %s: %v", method, path, limit, err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: b.Bytes()}, time.Since(start)
}

// createBombTarget creates a configmap holding value and returns it as served.
func createBombTarget(t *testing.T, s *sqlkubeServer, name, value string) []byte {
	t.Helper()
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"a":%q}}`, name, value)
	if resp := s.do(t, http.MethodPost, bombConfigMaps, []byte(body), "Content-Type", "application/json"); resp.code != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.code, resp.body)
	}
	return s.do(t, http.MethodGet, bombConfigMaps+"/"+name, nil).body
}

// assertBombTargetUnchanged checks that the configmap is still served as before.
func assertBombTargetUnchanged(t *testing.T, s *sqlkubeServer, name string, before []byte) {
	t.Helper()
	if after := s.do(t, http.MethodGet, bombConfigMaps+"/"+name, nil).body; !bytes.Equal(before, after) {
		t.Errorf("the configmap changed:\nbefore %.300s\nafter  %.300s", before, after)
	}
}

// A JSON patch of copies that each double /data (100 KB of them, or 10 in a dry-run) is
// refused as kube-apiserver refuses it: a short 422 from the copy limit, soon, with the server's
// memory bounded and the object unchanged.
func TestPatchBomb(t *testing.T) {
	forEachServer(t, func(t *testing.T, s *sqlkubeServer) {
		before := createBombTarget(t, s, "bomb", strings.Repeat("x", 200<<10))
		pid := s.proc.cmd.Process.Pid
		startMem := processMemory(t, pid)
		for _, tt := range []struct {
			name  string
			query string
			patch []byte
		}{
			{"100 KB of copies", "", doublingCopyPatch(100 << 10 / len(`{"op":"copy","from":"/data","path":"/data/c1000"},`))},
			{"10 copies, dry-run", "?dryRun=All", doublingCopyPatch(10)},
		} {
			t.Run(tt.name, func(t *testing.T) {
				resp, took := s.doWithin(t, time.Minute, http.MethodPatch, bombConfigMaps+"/bomb"+tt.query, tt.patch, "Content-Type", "application/json-patch+json")
				t.Logf("%d-byte patch answered %d in %s with %d bytes", len(tt.patch), resp.code, took.Round(time.Millisecond), len(resp.body))
				if took > bombAnswerBound || len(resp.body) > bombBodyBound {
					t.Errorf("answered in %s with %d bytes, want within %s and %d bytes", took, len(resp.body), bombAnswerBound, bombBodyBound)
				}
				// kube-apiserver's 422 for a JSON patch that does not apply keeps none of the
				// library's words, so no size of the document shows.
				assertStatus(t, resp.status(t), apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "", 0, false))
			})
		}
		endMem := processMemory(t, pid)
		t.Logf("resident memory: %d MiB before, peak %d MiB (peak before %d MiB)", startMem["VmRSS"]>>10, endMem["VmHWM"]>>10, startMem["VmHWM"]>>10)
		if grown := endMem["VmHWM"] - max(startMem["VmHWM"], startMem["VmRSS"]); grown > bombMemoryBoundKiB {
			t.Errorf("peak resident memory grew by %d MiB, want at most %d MiB", grown>>10, bombMemoryBoundKiB>>10)
		}
		assertBombTargetUnchanged(t, s, "bomb", before)
	})
}

// slowPatch is a JSON patch that takes seconds of CPU, bounded, without ever looking at the
// request's context: it adds an array of n finalizers, then inserts 9999 more at its front, each
// insertion copying the whole array.
func slowPatch(n int) []byte {
	finalizers := strings.TrimSuffix(strings.Repeat(`"a/b",`, n), ",")
	front := strings.Repeat(`,{"op":"add","path":"/metadata/finalizers/0","value":"a/b"}`, 9999)
	return []byte(`[{"op":"add","path":"/metadata/finalizers","value":[` + finalizers + `]}` + front + "]")
}

// --request-timeout holds for work that never looks at its context: the patch is answered kube's
// 504 at the deadline, and the abandoned work ends by itself, having stored nothing.
func TestPatchRequestTimeout(t *testing.T) {
	const timeout = time.Second
	forEachServerWith(t, []string{"--request-timeout=" + timeout.String()}, func(t *testing.T, s *sqlkubeServer) {
		before := createBombTarget(t, s, "slow", "x")
		patch := slowPatch(100_000)
		resp, took := s.doWithin(t, time.Minute, http.MethodPatch, bombConfigMaps+"/slow", patch, "Content-Type", "application/json-patch+json")
		t.Logf("%d-byte patch answered %d after %s", len(patch), resp.code, took.Round(time.Millisecond))
		if took > timeout+bombAnswerBound {
			t.Errorf("answered after %s, want at the %s deadline", took, timeout)
		}
		// kube-apiserver's timeout filter writes its Status without type meta or Content-Type.
		if ct := resp.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Errorf("Content-Type %q, want kube's sniffed text/plain", ct)
		}
		var got metav1.Status
		if err := json.Unmarshal(resp.body, &got); err != nil {
			t.Fatalf("answer %s: %v", resp.body, err)
		}
		assertStatus(t, got, apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0))
		waitForIdle(t, s)
		assertBombTargetUnchanged(t, s, "slow", before)
	})
}

// waitForIdle waits until the server has used under a tenth of a CPU for a second: work a request
// left behind has ended.
func waitForIdle(t *testing.T, s *sqlkubeServer) {
	t.Helper()
	start := time.Now()
	lastCPU, lastAt := s.cpuTime(t), time.Now()
	eventually(t, 2*time.Minute, "the server idle again", func() (bool, error) {
		if time.Since(lastAt) < time.Second {
			return false, nil
		}
		cpu := s.cpuTime(t)
		idle := cpu-lastCPU < time.Since(lastAt)/10
		lastCPU, lastAt = cpu, time.Now()
		return idle, fmt.Errorf("still busy")
	})
	t.Logf("idle again %s later", time.Since(start).Round(100*time.Millisecond))
}
