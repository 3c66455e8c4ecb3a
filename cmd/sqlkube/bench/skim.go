package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Watchers read only an event's type, name and resourceVersion, list clients only a page's
// continue token, and updates only the resourceVersion of the object written. Decoding every event or page with encoding/json costs several times more than
// skimming it (the payloads are most of the bytes), and with a thousand watchers, or pages of 500
// objects, on the same machine as the server that cost would be what the measurement measures.

// eventReader reads newline-delimited watch events, as kube-apiserver and sqlkube write them.
type eventReader struct {
	r    *bufio.Reader
	long []byte // reused for events longer than r's buffer
}

func newEventReader(stream io.Reader) *eventReader {
	return &eventReader{r: bufio.NewReaderSize(stream, 16<<10)}
}

// next reads one event; io.EOF when the stream ended cleanly between events.
func (er *eventReader) next() (watchEvent, error) {
	for {
		line, err := er.line()
		if len(bytes.TrimSpace(line)) > 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return watchEvent{}, err
			}
			return skimEvent(line)
		}
		if err != nil {
			return watchEvent{}, err
		}
	}
}

// line returns the next line, valid until the following call.
func (er *eventReader) line() ([]byte, error) {
	line, err := er.r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	er.long = append(er.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = er.r.ReadSlice('\n')
		er.long = append(er.long, line...)
	}
	return er.long, err
}

// skimEvent reads type, object.metadata.name and object.metadata.resourceVersion from one event,
// skipping everything else; an ERROR event's Status is decoded in full.
func skimEvent(raw []byte) (watchEvent, error) {
	var ev watchEvent
	s := skimmer{b: raw}
	meta := func(key []byte) (err error) {
		switch string(key) {
		case "name":
			ev.Name, err = s.str()
		case "resourceVersion":
			ev.ResourceVersion, err = s.str()
		default:
			err = s.skip()
		}
		return err
	}
	object := func(key []byte) error {
		if string(key) == "metadata" {
			return s.object(meta)
		}
		return s.skip()
	}
	err := s.object(func(key []byte) (err error) {
		switch string(key) {
		case "type":
			ev.Type, err = s.str()
		case "object":
			err = s.object(object)
		default:
			err = s.skip()
		}
		return err
	})
	if err != nil {
		return ev, fmt.Errorf("reading watch event: %w", err)
	}
	if string(ev.Type) == "ERROR" {
		var status struct {
			Object struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"object"`
		}
		err = json.Unmarshal(raw, &status)
		ev.Code, ev.Message = status.Object.Code, status.Object.Message
	}
	return ev, err
}

// metadataString reads metadata.<field> from an object or list, "" when it is absent: a list's
// continue token, or the resourceVersion of an object just written.
func metadataString(doc []byte, field string) (string, error) {
	var value string
	s := skimmer{b: doc}
	err := s.object(func(key []byte) error {
		if string(key) != "metadata" {
			return s.skip()
		}
		return s.object(func(key []byte) error {
			if string(key) != field {
				return s.skip()
			}
			raw, err := s.str()
			value = string(raw)
			return err
		})
	})
	if err != nil {
		return "", fmt.Errorf("reading response: %w", err)
	}
	return value, nil
}

var errSyntax = errors.New("malformed JSON")

// skimmer walks JSON text without building values. It checks structure only as far as it
// needs to find where each value ends.
type skimmer struct {
	b []byte
	i int
}

func (s *skimmer) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// expect consumes c, after optional space.
func (s *skimmer) expect(c byte) error {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != c {
		return errSyntax
	}
	s.i++
	return nil
}

// object calls field for each key of the object at the cursor; field must consume the value.
func (s *skimmer) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		key, err := s.rawString()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.space()
		if err := field(key); err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.b) {
			return errSyntax
		}
		s.i++
		switch s.b[s.i-1] {
		case ',':
		case '}':
			return nil
		default:
			return errSyntax
		}
	}
}

// rawString consumes a string and returns its content with escapes left in place (the keys
// looked for have none).
func (s *skimmer) rawString() ([]byte, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, errSyntax
	}
	start := s.i + 1
	for j := start; ; j++ {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return nil, errSyntax
		}
		j += k
		if !escaped(s.b[start:j]) {
			s.i = j + 1
			return s.b[start:j], nil
		}
	}
}

// escaped says whether a quote that follows text is escaped: preceded by an odd number of
// backslashes.
func escaped(text []byte) bool {
	n := 0
	for n < len(text) && text[len(text)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// str consumes a string value and returns its content: a slice of the text, or a new slice
// when it has escapes to undo.
func (s *skimmer) str() ([]byte, error) {
	start := s.i
	raw, err := s.rawString()
	if err != nil || bytes.IndexByte(raw, '\\') < 0 {
		return raw, err
	}
	var unescaped string
	if err := json.Unmarshal(s.b[start:s.i], &unescaped); err != nil {
		return nil, err
	}
	return []byte(unescaped), nil
}

// skip consumes any value.
func (s *skimmer) skip() error {
	if s.i >= len(s.b) {
		return errSyntax
	}
	switch s.b[s.i] {
	case '"':
		_, err := s.rawString()
		return err
	case '{', '[':
		return s.skipNested()
	}
	// A number, true, false or null: runs to the next delimiter.
	start := s.i
	for s.i < len(s.b) && strings.IndexByte(",}] \t\r\n", s.b[s.i]) < 0 {
		s.i++
	}
	if s.i == start {
		return errSyntax
	}
	return nil
}

// skipNested consumes an object or array, counting brackets outside strings.
func (s *skimmer) skipNested() error {
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if _, err := s.rawString(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return nil
			}
		}
		s.i++
	}
	return errSyntax
}
