package bench

import (
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSkimEvent(t *testing.T) {
	for _, tc := range []struct {
		name, event                string
		wantType, wantName, wantRV string
	}{
		{"plain", `{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"},"data":{"p":"x"}}}`, "ADDED", "a", "7"},
		{"metadata last, nested values before it",
			`{"object":{"spec":{"list":[1,{"x":[true,null,-1.5e3]},"]}"],"s":"\"{"},"metadata":{"labels":{"name":"not this"},"resourceVersion":"9","name":"b"}},"type":"MODIFIED"}`,
			"MODIFIED", "b", "9"},
		{"spaces", " { \"type\" : \"DELETED\" , \"object\" : { \"metadata\" : { \"name\" : \"c\" , \"resourceVersion\" : \"10\" } } } ", "DELETED", "c", "10"},
		{"escaped value", `{"type":"ADDED","object":{"metadata":{"name":"d\u0065","resourceVersion":"1"}}}`, "ADDED", "de", "1"},
		{"escaped quotes and backslashes", `{"object":{"data":{"a":"\\","b":"\\\"}\\"},"metadata":{"name":"e","resourceVersion":"2"}},"type":"ADDED"}`, "ADDED", "e", "2"},
		{"bookmark", `{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}`, "BOOKMARK", "", "12"},
		{"empty objects", `{"type":"ADDED","object":{"metadata":{},"data":{}}}`, "ADDED", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := skimEvent([]byte(tc.event))
			if err != nil {
				t.Fatal(err)
			}
			if string(ev.Type) != tc.wantType || string(ev.Name) != tc.wantName || string(ev.ResourceVersion) != tc.wantRV {
				t.Errorf("got type %q name %q rv %q", ev.Type, ev.Name, ev.ResourceVersion)
			}
		})
	}
}

func TestSkimErrorEventDecodesStatus(t *testing.T) {
	ev, err := skimEvent([]byte(`{"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old resource version: 1 (5)"}}`))
	if err != nil || ev.Code != 410 || ev.Message != "too old resource version: 1 (5)" {
		t.Errorf("got %+v, %v", ev, err)
	}
}

func TestSkimRejectsMalformedEvents(t *testing.T) {
	for _, bad := range []string{
		`{"type":"ADDED"`,
		`{"type":"ADDED","object":{"metadata":{"name":"a"}}`,
		`{"type":ADDED}`,
		`{"type":"ADD`,
		`["type"]`,
		`{"type" "ADDED"}`,
		`{"object":{"spec":[1,2}`,
	} {
		if _, err := skimEvent([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestEventReaderFramesLines(t *testing.T) {
	long := strings.Repeat("y", 100<<10) // longer than the reader's buffer
	stream := "\n" +
		`{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}}` + "\n\n" +
		`{"type":"ADDED","object":{"data":{"p":"` + long + `"},"metadata":{"name":"b","resourceVersion":"2"}}}` + "\n" +
		`{"type":"MODIFIED","object":{"metadata":{"name":"c","resourceVersion":"3"}}}` // no final newline
	events := newEventReader(strings.NewReader(stream))
	var names []string
	for {
		ev, err := events.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, string(ev.Name)+"@"+string(ev.ResourceVersion))
	}
	if strings.Join(names, " ") != "a@1 b@2 c@3" {
		t.Errorf("events %v", names)
	}
}

func TestEventReaderReportsTruncatedEvent(t *testing.T) {
	events := newEventReader(strings.NewReader(`{"type":"ADDED","object":{"metadata":{"na`))
	if _, err := events.next(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("err = %v, want a malformed-event error", err)
	}
}

// TestSkimAgreesWithEncodingJSON skims events encoding/json wrote from random content, with
// quotes, backslashes, brackets and non-ASCII text in keys and values.
func TestSkimAgreesWithEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune(`ab"\{}[]:,é日 ` + "\n\t\u2028")
	text := func() string {
		r := make([]rune, rng.IntN(12))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(r)
	}
	for range 2000 {
		data := map[string]any{text(): text(), text(): []any{text(), 1.5, true, nil, map[string]any{text(): text()}}}
		typ, name, rv := text(), text(), text()
		raw, err := json.Marshal(map[string]any{
			"type":   typ,
			"object": map[string]any{"data": data, "metadata": map[string]any{"name": name, "resourceVersion": rv, "x": data}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if typ == "ERROR" {
			continue
		}
		got, err := skimEvent(raw)
		if err != nil || string(got.Type) != typ || string(got.Name) != name || string(got.ResourceVersion) != rv {
			t.Fatalf("%s:\ngot %q %q %q (%v)\nwant %q %q %q", raw, got.Type, got.Name, got.ResourceVersion, err, typ, name, rv)
		}
	}
}

func TestMetadataString(t *testing.T) {
	for list, want := range map[string]string{
		`{"kind":"ConfigMapList","metadata":{"resourceVersion":"5","continue":"abc=="},"items":[{"metadata":{"continue":"no"}}]}`: "abc==",
		`{"items":[{"data":{"a":"]}"}}],"metadata":{"remainingItemCount":3,"continue":"x\u003dy"}}`:                               "x=y",
		`{"metadata":{"resourceVersion":"5"},"items":[]}`:                                                                         "",
	} {
		got, err := metadataString([]byte(list), "continue")
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", list, got, err, want)
		}
	}
	if _, err := metadataString([]byte(`{"metadata":{"continue":"abc"`), "continue"); err == nil {
		t.Error("truncated list accepted")
	}
	if rv, err := metadataString([]byte(`{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"42"},"data":{"resourceVersion":"no"}}`), "resourceVersion"); err != nil || rv != "42" {
		t.Errorf("resourceVersion: got %q, %v", rv, err)
	}
}
