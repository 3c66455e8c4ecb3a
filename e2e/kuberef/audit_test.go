package kuberef

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// auditLog reads a server's audit log (one audit.k8s.io/v1 Event per line) as it grows, for
// the events of one request at a time.
type auditLog struct {
	path   string
	offset int64
	// partial is the start of a line not written in full yet.
	partial []byte
}

// auditWait bounds how long the events of a request may take to reach the log after its
// answer (kube-apiserver writes ResponseComplete once the handler has returned).
const auditWait = 10 * time.Second

// eventsOf reads the log until the events of the request whose Audit-Id is id include its last
// stage (ResponseStarted for a watch being served, ResponseComplete or Panic otherwise), or
// auditWait has passed; what it found then is compared as it is. Each request is read after
// its answer and before the next request is sent, so the events of other requests read on the
// way (the server's own requests, a watch's late ResponseComplete) are skipped.
func (a *auditLog) eventsOf(id string, streaming bool) ([]map[string]any, error) {
	var events []map[string]any
	deadline := time.Now().Add(auditWait)
	for {
		lines, err := a.newLines()
		if err != nil {
			return nil, err
		}
		for _, line := range lines {
			var e map[string]any
			if err := json.Unmarshal(line, &e); err != nil {
				return nil, errors.New("audit log line is not JSON: " + string(line))
			}
			if e["auditID"] == id {
				events = append(events, e)
			}
		}
		if lastStage(events, streaming) || time.Now().After(deadline) {
			return events, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lastStage says whether events end with the request's last stage.
func lastStage(events []map[string]any, streaming bool) bool {
	if len(events) == 0 {
		return false
	}
	switch events[len(events)-1]["stage"] {
	case "ResponseComplete", "Panic":
		return true
	case "ResponseStarted":
		return streaming
	}
	return false
}

// newLines are the whole lines written since the last read.
func (a *auditLog) newLines() ([][]byte, error) {
	f, err := os.Open(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	a.offset += int64(len(data))
	data = append(a.partial, data...)
	end := bytes.LastIndexByte(data, '\n')
	a.partial = append([]byte(nil), data[end+1:]...)
	if end < 0 {
		return nil, nil
	}
	return bytes.Split(data[:end], []byte("\n")), nil
}

// eventOwnFields are what each server fills in its own way: the request's random id, the times,
// the client's address and user agent (the harness's clients are alike, but the addresses are
// each connection's own).
var eventOwnFields = []string{"auditID", "requestReceivedTimestamp", "stageTimestamp", "sourceIPs", "userAgent"}

// timedAnnotations are the audit annotations kube adds only when a request took long (its
// latency trackers' breakdown): whether they are there depends on the machine's load.
const timedAnnotations = "apiserver.latency.k8s.io/"

// auditEvents reduces a request's events to what is compared: in order, each event's stage,
// level, verb, requestURI, user, impersonatedUser, objectRef, responseStatus and annotations,
// with uids and resourceVersions replaced by the tokens the answers gave them (or <unseen> for
// one no answer carried: the harness cannot tell two such values apart).
func (t *target) auditEvents(events []map[string]any) []any {
	out := make([]any, 0, len(events))
	for _, e := range events {
		for _, key := range eventOwnFields {
			delete(e, key)
		}
		if annotations, ok := e["annotations"].(map[string]any); ok {
			for key := range annotations {
				if strings.HasPrefix(key, timedAnnotations) {
					delete(annotations, key)
				}
			}
		}
		if ref, ok := e["objectRef"].(map[string]any); ok {
			for _, key := range []string{"uid", "resourceVersion"} {
				if v, ok := ref[key].(string); ok && t.tokens[v] == "" {
					ref[key] = "<unseen>"
				}
			}
		}
		normalized := t.normalize(e, "").(map[string]any)
		sortApplyConflicts(normalized["responseStatus"]) // kube's, in no fixed order
		out = append(out, normalized)
	}
	return out
}
