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
			r.Body = t.decode(data, nil)
			return r, nil
		}
		t.watches[s.watch] = openStream(resp.Body)
	}
	w := t.watches[s.watch]
	if w == nil || s.events == 0 {
		return r, nil
	}
	var events []any
	timeout := time.After(eventWait)
	for len(events) < s.events {
		select {
		case e, ok := <-w.events:
			if !ok {
				r.Body = append(events, "<closed>")
				return r, nil
			}
			events = append(events, t.decode(e, s.pick))
		case <-timeout:
			r.Body = append(events, "<timeout>")
			return r, nil
		}
	}
	r.Body = events
	return r, nil
}

// openStream decodes a watch body's events in the background.
func openStream(body io.ReadCloser) *stream {
	w := &stream{body: body, events: make(chan json.RawMessage, 1000)}
	go func() {
		defer close(w.events)
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
