package kuberef

import (
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// stream is an open watch: its events arrive on a channel, closed when the server ends it.
type stream struct {
	body   io.Closer
	events chan json.RawMessage
}

func (w *stream) close() { _ = w.body.Close() }

// eventWait bounds how long a watch step waits for the events it expects; fewer events then
// are compared as they are (and differ, if the other server sent them).
const eventWait = 10 * time.Second

// doWatch opens the step's watch if it has a path, then reads its events.
func (t *target) doWatch(s step) (result, error) {
	var r result
	if s.path != "" {
		resp, err := t.send(s)
		if err != nil {
			return result{}, err
		}
		r = result{Code: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Warnings: resp.Header.Values("Warning")}
		if resp.StatusCode != http.StatusOK {
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			if err != nil {
				return result{}, err
			}
			r.Body = t.decodeAnswer(r.ContentType, data, nil)
			r.audit, err = t.auditOf(resp, false)
			return r, err
		}
		t.watches[s.watch] = openStream(resp.Body, isProtobuf(r.ContentType))
		if r.audit, err = t.auditOf(resp, true); err != nil {
			return result{}, err
		}
	}
	w := t.watches[s.watch]
	if w == nil || (s.events == 0 && s.until == "") {
		return r, nil
	}
	var events []any
	timeout := time.After(eventWait)
	for done := false; !done; {
		select {
		case e, ok := <-w.events:
			if !ok {
				r.Body = append(events, "<closed>")
				return r, nil
			}
			if periodicBookmark(e) {
				continue
			}
			event := t.decode(e, s.pick)
			events = append(events, event)
			done = len(events) == s.events || (s.until != "" && eventAbout(event) == s.until)
		case <-timeout:
			r.Body = append(events, "<timeout>")
			return r, nil
		}
	}
	r.Body = events
	if s.until != "" {
		w.close()
		delete(t.watches, s.watch)
	}
	return r, nil
}

// periodicBookmark tells a BOOKMARK event sent when the server chose (kube sends them about
// once a minute) from the one that ends the initial events, which is compared.
func periodicBookmark(raw json.RawMessage) bool {
	var e struct {
		Type   string
		Object struct {
			Metadata struct{ Annotations map[string]string }
		}
	}
	if json.Unmarshal(raw, &e) != nil || e.Type != "BOOKMARK" {
		return false
	}
	return e.Object.Metadata.Annotations["k8s.io/initial-events-end"] != "true"
}

// openStream decodes a watch body's events in the background: JSON lines, or protobuf frames
// turned into the same JSON.
func openStream(body io.ReadCloser, protobuf bool) *stream {
	w := &stream{body: body, events: make(chan json.RawMessage, 1000)}
	go func() {
		defer close(w.events)
		if protobuf {
			readProtobufEvents(body, w.events)
			return
		}
		dec := json.NewDecoder(body)
		for {
			var e json.RawMessage
			if err := dec.Decode(&e); err != nil {
				return
			}
			w.events <- e
		}
	}()
	return w
}

// eventAbout is the name of the object of a decoded watch event.
func eventAbout(event any) string {
	e, _ := event.(map[string]any)
	obj, _ := e["object"].(map[string]any)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return name
}
